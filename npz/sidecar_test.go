package npz

import (
	stdzip "archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/source"
)

// TestIndexSidecar: indexes written to a sidecar beside an archive serve
// a later archive of the same content with no index folder.
func TestIndexSidecar(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	m := a.Member("a.npy")
	if _, err := m.BuildIndex(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(t.TempDir(), "x.npzidx")
	if err := WriteIndexSidecar(context.Background(), side, []*Member{m}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	s.Close()

	open := func() (*Archive, *countingReader, *logLinesOf) {
		sc, err := OpenIndexSidecar(side)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sc.Close() })
		if sc.Len(context.Background()) != 1 {
			t.Fatalf("the sidecar holds %d indexes", sc.Len(context.Background()))
		}
		cr := &countingReader{r: bytes.NewReader(b)}
		var log logLinesOf
		a, err := NewReader(context.Background(), cr, int64(len(b)), &Options{Sidecar: sc, Logf: log.logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a, cr, &log
	}
	// With the sidecar alone (no index folder): a deep read at once.
	a, cr, log := open()
	off := int64(len(data)) - 5000
	readAtOnce(t, a, cr, log, data, off, 2<<20)

	// A damaged sidecar: said, not used, never a wrong byte.
	sb, _ := os.ReadFile(side)
	i := bytes.Index(sb, []byte("NPZFSIDX"))
	sb[i+48+9] ^= 0x20 // a bit position in its table
	os.WriteFile(side, sb, 0o644)
	a, _, log = open()
	if got := readMember(t, a, "a.npy", off, 4096); !bytes.Equal(got, data[off:off+4096]) {
		t.Fatal("wrong bytes with a damaged sidecar")
	}
	if !strings.Contains(log.String(), "x.npzidx not used") {
		t.Errorf("the damaged sidecar was not said: %q", log.String())
	}
}

// prefetchReader is a sidecar's bytes that count reads and record what
// they are told to prefetch (as a remote source is).
type prefetchReader struct {
	countingReader
	mu      sync.Mutex
	ranges  []source.Range
	closed  atomic.Bool
	changed atomic.Bool // reads fail as a remote object replaced does
}

func (p *prefetchReader) ReadAt(b []byte, off int64) (int, error) {
	if p.changed.Load() {
		p.calls.Add(1)
		return 0, fmt.Errorf("sidecar: %w", source.ErrChanged)
	}
	return p.countingReader.ReadAt(b, off)
}

func (p *prefetchReader) Prefetch(_ context.Context, rs []source.Range) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ranges = append(p.ranges, rs...)
}

func (p *prefetchReader) Close() error {
	p.closed.Store(true)
	return nil
}

// TestFindSidecarIsLazy: a sidecar found by Options.SidecarFinder (a
// remote one) is looked for once, at the first read of a deflated member
// past its first span, not at open nor for reads of the first span; its
// entry's local header and table are prefetched in one range and only
// its index is read, not the whole sidecar; the archive closes it.
func TestFindSidecarIsLazy(t *testing.T) {
	b, members := indexedArchive(t)
	good := sidecarOf(t, b)

	data := members["a.npy"]
	deep := int64(len(data)) - 5000
	a, finds, pr, log := lazySidecar(t, b, good)
	readMember(t, a, "a.npy", 0, 128)
	readMember(t, a, "b.npy", 1000, 128)
	if finds.Load() != 0 || pr.calls.Load() != 0 {
		t.Errorf("reads of the first span looked for the sidecar (%d finds, %d reads)", finds.Load(), pr.calls.Load())
	}
	if got := readMember(t, a, "a.npy", deep, 4096); !bytes.Equal(got, data[deep:deep+4096]) {
		t.Fatal("wrong bytes")
	}
	if got := readMember(t, a, "b.npy", deep, 4096); !bytes.Equal(got, members["b.npy"][deep:deep+4096]) {
		t.Fatal("wrong bytes")
	}
	if finds.Load() != 1 || log.String() != "" {
		t.Errorf("%d finds for two members; log %q", finds.Load(), log.String())
	}
	// The first index is found from the sidecar's first local header;
	// the second by its directory, and its local header and table are
	// prefetched in one range.
	pr.mu.Lock()
	if len(pr.ranges) != 1 || pr.ranges[0].Len > 64<<10 {
		t.Errorf("prefetched %+v, want one small range, for the second index", pr.ranges)
	}
	pr.mu.Unlock()
	// The first local header, then for each index its header, table and
	// the one window read, with the directory (end record, central
	// directory) and local header of the second; and each index's
	// table, read once when it is found.
	if calls := pr.calls.Load(); calls > 2+3+3+4+2 {
		t.Errorf("%d reads of the sidecar for two deep reads", calls)
	}
	a.Close()
	if !pr.closed.Load() {
		t.Error("the sidecar was not closed with the archive")
	}
}

// lazySidecar opens the archive b lazily (VerifyLazy: its indexes grow
// as reads go) with a SidecarFinder that finds side, counting the finds
// and the sidecar's reads.
func lazySidecar(t *testing.T, b, side []byte) (*Archive, *atomic.Int64, *prefetchReader, *logLinesOf) {
	t.Helper()
	var finds atomic.Int64
	pr := &prefetchReader{countingReader: countingReader{r: bytes.NewReader(side)}}
	var log logLinesOf
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{Logf: log.logf, Verify: VerifyLazy, SidecarFinder: finderFunc(func(int64) (*IndexSidecar, error) {
		finds.Add(1)
		return NewIndexSidecar(pr, int64(len(side)), "https://host/x.npzidx"), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, &finds, pr, &log
}

// TestChangedSidecarIsDropped: a sidecar replaced under the mount (its
// windows not yet read cannot be) is dropped, said in the log, and the
// member inflated from its start: every byte right.
func TestChangedSidecarIsDropped(t *testing.T) {
	// Replaced under the mount: the windows not yet read cannot be, the
	// index is dropped and the member inflated from its start. (Words
	// repeated at random: every span refers back into its window.)
	words := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(5, 5))
	for j := 0; j < len(words); j += 8 {
		binary.LittleEndian.PutUint64(words[j:], uint64(r.IntN(512))*0x9e3779b97f4a7c15)
	}
	wb := makeZip(t, []zent{{name: "w.npy", data: words, method: 8}})
	pr := &prefetchReader{countingReader: countingReader{r: bytes.NewReader(sidecarOf(t, wb))}}
	log := &logLinesOf{}
	a, err := NewReader(context.Background(), bytes.NewReader(wb), int64(len(wb)), &Options{Logf: log.logf, Verify: VerifyLazy, SidecarFinder: finderFunc(func(int64) (*IndexSidecar, error) {
		return NewIndexSidecar(pr, pr.r.(*bytes.Reader).Size(), "s3://b/w.npzidx"), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	readMember(t, a, "w.npy", int64(len(words))-5000, 4096)
	pr.changed.Store(true)
	for _, off := range []int64{1 << 20, 3 << 20} {
		if got := readMember(t, a, "w.npy", off, 4096); !bytes.Equal(got, words[off:off+4096]) {
			t.Fatalf("after the sidecar changed: wrong bytes at %d", off)
		}
	}
	if !strings.Contains(log.String(), "s3://b/w.npzidx not used") {
		t.Errorf("the changed sidecar: log %q", log.String())
	}
}

// TestBadSidecarsAreNotUsed: a sidecar of another archive and one with a
// flipped bit in its table are said in the log and not used; a truncated
// one is said in the log as damaged, its first index, whole, still used
// (the second's is found by the directory, which is gone); every byte is
// right.
func TestBadSidecarsAreNotUsed(t *testing.T) {
	b, members := indexedArchive(t)
	good := sidecarOf(t, b)
	deep := int64(len(members["a.npy"])) - 5000
	flipped := bytes.Clone(good)
	i := bytes.Index(flipped, []byte("NPZFSIDX"))
	flipped[i+48+9] ^= 0x20 // a bit position in its table
	for _, tc := range []struct {
		name, side, want string
	}{
		{"foreign", string(foreignSidecar(t)), "holds no index of it"},
		{"truncated", string(good[:len(good)-100]), "x.npzidx is damaged (zip: no end of central directory record"},
		{"flipped", string(flipped), "x.npzidx not used"},
	} {
		a, finds, _, log := lazySidecar(t, b, []byte(tc.side))
		for name, want := range members {
			if got := readMember(t, a, name, deep, 4096); !bytes.Equal(got, want[deep:deep+4096]) {
				t.Fatalf("%s: %s: wrong bytes", tc.name, name)
			}
		}
		if finds.Load() != 1 || !strings.Contains(log.String(), tc.want) {
			t.Errorf("%s: %d finds, log %q, want %q", tc.name, finds.Load(), log.String(), tc.want)
		}
	}
}

// foreignSidecar is a sidecar of another archive than indexedArchive's:
// its members are named alike but hold other bytes.
func foreignSidecar(t *testing.T) []byte {
	var ents []zent
	for _, name := range []string{"a.npy", "b.npy"} {
		data := make([]byte, 3<<20)
		for j := range data {
			data[j] = byte(j*7) & 0x3f
		}
		ents = append(ents, zent{name: name, data: data, method: 8})
	}
	return sidecarOf(t, makeZip(t, ents))
}

// sidecarOf is a sidecar of every member of the archive b.
func sidecarOf(t *testing.T, b []byte) []byte {
	a, s, _, _ := mountWithIndexes(t, b, t.TempDir())
	defer s.Close()
	defer a.Close()
	ms := a.Members()
	for _, m := range ms {
		if _, err := m.BuildIndex(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := WriteIndexSidecarTo(context.Background(), &buf, ms); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSidecarOfAnotherWriter: a sidecar whose entries' sizes follow
// their data (a zip tool's, with data descriptors) is found by its
// central directory, and used.
func TestSidecarOfAnotherWriter(t *testing.T) {
	b, members := indexedArchive(t)
	good := sidecarOf(t, b)
	zr, err := stdzip.NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := stdzip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, _ := f.Open()
		w, err := zw.CreateHeader(&stdzip.FileHeader{Name: f.Name, Method: stdzip.Store})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(w, rc)
		rc.Close()
	}
	zw.Close()
	side := buf.Bytes()
	cr := &countingReader{r: bytes.NewReader(b)}
	var log logLinesOf
	a, err := NewReader(context.Background(), cr, int64(len(b)), &Options{Logf: log.logf, SidecarFinder: finderFunc(func(int64) (*IndexSidecar, error) {
		return NewIndexSidecar(bytes.NewReader(side), int64(len(side)), "other.npzidx"), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	data := members["b.npy"]
	deep := int64(len(data)) - 5000
	if got := readMember(t, a, "b.npy", deep, 4096); !bytes.Equal(got, data[deep:deep+4096]) {
		t.Fatal("wrong bytes")
	}
	if read := cr.bytes.Load(); read > 2<<20 || log.String() != "" {
		t.Errorf("a deep read with the sidecar read %d bytes of the archive; log %q", read, log.String())
	}
}
