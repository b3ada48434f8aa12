package npz

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/source"
)

// TestSilentSidecarHoldsNoRead: a SidecarFinder that never answers (a
// remote sidecar behind a silent server) holds up no read: a read deep
// into a deflated member inflates from the stream and returns the right
// bytes; the look ends when the archive is closed.
func TestSilentSidecarHoldsNoRead(t *testing.T) {
	b, members := indexedArchive(t)
	asked, ended := make(chan struct{}, 1), make(chan struct{})
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{SidecarFinder: finderCtx(func(ctx context.Context, _ int64) (*IndexSidecar, error) {
		asked <- struct{}{}
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})})
	if err != nil {
		t.Fatal(err)
	}
	data := members["a.npy"]
	deep := int64(len(data)) - 5000
	if got := readMember(t, a, "a.npy", deep, 4096); !bytes.Equal(got, data[deep:deep+4096]) {
		t.Fatal("wrong bytes")
	}
	<-asked
	a.Close()
	<-ended // the silent look given up with the archive
}

// TestSidecarFailureMayPass: a SidecarFinder that fails in a way that
// may pass is logged and asked again only after a wait, not at every
// read; reads meanwhile inflate from the stream and are right.
func TestSidecarFailureMayPass(t *testing.T) {
	b, members := indexedArchive(t)
	var finds atomic.Int64
	var log logLinesOf
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{Logf: log.logf, SidecarFinder: finderFunc(func(int64) (*IndexSidecar, error) {
		finds.Add(1)
		return nil, source.Transient(errors.New("503 Slow Down"))
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, name := range []string{"a.npy", "b.npy"} {
		data := members[name]
		for _, off := range []int64{int64(len(data)) - 5000, 3 << 20} {
			if got := readMember(t, a, name, off, 4096); !bytes.Equal(got, data[off:off+4096]) {
				t.Fatalf("%s: wrong bytes at %d", name, off)
			}
		}
	}
	if _, err := a.sidecarWait(context.Background(), 0); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("the sidecar while its finder fails: %v, want the failure", err)
	}
	if finds.Load() != 1 || !strings.Contains(log.String(), "cannot be looked for now") {
		t.Errorf("%d finds within the wait after a failure; log %q", finds.Load(), log.String())
	}
}

// finderCtx is a SidecarFinder of a function taking the context.
type finderCtx func(ctx context.Context, head int64) (*IndexSidecar, error)

func (f finderCtx) FindSidecar(ctx context.Context, head int64) (*IndexSidecar, error) {
	return f(ctx, head)
}
