package inflate

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"sync/atomic"
	"testing"
)

// cancellingSource is a compressed source that cancels a read's context
// after a number of its reads, as an interrupted FUSE request would.
type cancellingSource struct {
	data   []byte
	cancel context.CancelFunc
	after  int64
	reads  atomic.Int64
	ctxs   atomic.Int64 // reads that came with a context
}

func (s *cancellingSource) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s.data).ReadAt(p, off)
}

func (s *cancellingSource) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	s.ctxs.Add(1)
	if s.reads.Add(1) == s.after && s.cancel != nil {
		s.cancel()
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.ReadAt(p, off)
}

// TestReadAtContextStopsInflating: a first read deep into a member whose
// context is cancelled stops indexing soon after, returns the context's
// error, and leaves the index consistent: a later read gets the right
// bytes, and a cancelled read is not remembered as a broken stream.
func TestReadAtContextStopsInflating(t *testing.T) {
	data := noisyFloat32(4<<20, 5)
	comp := deflate(t, data, 6)
	src := &cancellingSource{data: comp, after: 3}
	ctx, cancel := context.WithCancel(context.Background())
	src.cancel = cancel
	r := NewReaderAt(src, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), &Options{SpanSize: 256 << 10})

	buf := make([]byte, 4096)
	off := int64(len(data) - len(buf))
	n, err := r.ReadAtContext(ctx, buf, off)
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("cancelled deep read: %d bytes, %v; want 0, context.Canceled", n, err)
	}
	cps, _ := r.IndexStats()
	if total := len(data) / (256 << 10); cps >= total/2 {
		t.Errorf("a cancelled read indexed %d of %d spans: it did not stop", cps, total)
	}
	if src.ctxs.Load() == 0 {
		t.Error("the source never saw the read's context")
	}
	for _, off := range []int64{0, int64(len(data)) / 3, off} {
		n, err := r.ReadAt(buf, off)
		if n != len(buf) || (err != nil && off+int64(n) < int64(len(data))) || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
			t.Fatalf("read at %d after the cancelled one: %d bytes, %v, or wrong bytes", off, n, err)
		}
	}
}

// TestReadAtContextDoneBeforeStart: a read whose context is already done
// reads nothing and leaves no error behind for the reads after it.
func TestReadAtContextDoneBeforeStart(t *testing.T) {
	data := noisyFloat32(2<<20, 6)
	comp := deflate(t, data, 6)
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), &Options{SpanSize: 256 << 10})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.ReadAtContext(ctx, make([]byte, 10), 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a done context: %v, want context.Canceled", err)
	}
	got := make([]byte, len(data))
	if n, err := r.ReadAt(got, 0); n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("whole read after a cancelled one: %d bytes, %v", n, err)
	}
}
