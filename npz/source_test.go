package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/source"
)

// wrapped is a local file behind another type, as a caching or counting
// layer would hold it: the archive must still find the file to splice
// from and the change check through the optional interfaces.
type wrapped struct{ *source.File }

// plain offers only io.ReaderAt: no splicing, no change check.
type plain struct{ r io.ReaderAt }

func (p plain) ReadAt(b []byte, off int64) (int, error) { return p.r.ReadAt(b, off) }

// offsetFile is an archive that starts base bytes into a file, as a source
// whose FileExtent has a non-zero base.
type offsetFile struct {
	f    *os.File
	base int64
}

func (o offsetFile) ReadAt(b []byte, off int64) (int, error) { return o.f.ReadAt(b, o.base+off) }
func (o offsetFile) FileExtent() (uintptr, int64)            { return o.f.Fd(), o.base }

func storedArchive(t *testing.T) ([]byte, []byte) {
	data := bytes.Repeat([]byte("npzfs seam "), 1000)
	return makeZip(t, []zent{{name: "a.bin", data: data, method: 0}}), data
}

// spliced reads a.bin through Extent, as the mount does.
func spliced(t *testing.T, a *Archive, n int) []byte {
	t.Helper()
	fd, off, ok, err := a.Member("a.bin").File().Extent(context.Background())
	if err != nil || !ok {
		t.Fatalf("Extent: ok %v, %v", ok, err)
	}
	got := make([]byte, n)
	if _, err := pread(t, fd, got, off); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSourceExtrasThroughInterfaces(t *testing.T) {
	z, data := storedArchive(t)
	path := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := source.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	a, err := NewReader(context.Background(), wrapped{f}, f.Size(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := spliced(t, a, len(data)); !bytes.Equal(got, data) {
		t.Error("a wrapped local file: Extent does not give the member's bytes")
	}
	if !a.Root().ModTime().Equal(f.ModTime()) {
		t.Errorf("folders' time %v, want the file's %v", a.Root().ModTime(), f.ModTime())
	}

	// Rewritten under the archive: the wrapped file's check still runs
	// before every splice and read.
	if err := os.WriteFile(path, append(z, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := a.Member("a.bin").File().Extent(context.Background()); ok || !errors.Is(err, ErrChanged) {
		t.Errorf("Extent after a rewrite: ok %v, %v; want ErrChanged", ok, err)
	}
	if _, err := a.Member("a.bin").File().ReadAt(make([]byte, 4), 0); !errors.Is(err, ErrChanged) {
		t.Errorf("ReadAt after a rewrite: %v; want ErrChanged", err)
	}

	// Only io.ReaderAt: reads work, nothing is spliced.
	b, err := NewReader(context.Background(), plain{bytes.NewReader(z)}, int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := b.Member("a.bin").File().Extent(context.Background()); ok || err != nil {
		t.Errorf("Extent of a plain ReaderAt: ok %v, %v; want not ok", ok, err)
	}
	got := make([]byte, len(data))
	if n, err := b.Member("a.bin").File().ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Errorf("ReadAt of a plain ReaderAt: %d bytes, %v", n, err)
	}
}

// TestSourceFileBase: a source whose bytes start inside its file splices
// from the right place.
func TestSourceFileBase(t *testing.T) {
	z, data := storedArchive(t)
	const base = 1000
	path := filepath.Join(t.TempDir(), "padded")
	if err := os.WriteFile(path, append(make([]byte, base), z...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := NewReader(context.Background(), offsetFile{f, base}, int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := spliced(t, a, len(data)); !bytes.Equal(got, data) {
		t.Error("Extent does not add the source's base in its file")
	}
}

// prefetching records the ranges it is told to prefetch and the reads
// that fall outside them.
type prefetching struct {
	r       io.ReaderAt
	mu      sync.Mutex
	ranges  []source.Range
	calls   int
	outside []source.Range
}

func (p *prefetching) Prefetch(_ context.Context, rs []source.Range) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.ranges = append(p.ranges, rs...)
}

func (p *prefetching) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	in := false
	for _, r := range p.ranges {
		if off >= r.Off && off+int64(len(b)) <= r.Off+r.Len {
			in = true
		}
	}
	if !in && p.calls > 0 {
		p.outside = append(p.outside, source.Range{Off: off, Len: int64(len(b))})
	}
	p.mu.Unlock()
	return p.r.ReadAt(b, off)
}

// TestPrefetchHeaders: opening an archive tells a source.Prefetcher its
// central directory; listing a folder of arrays reads no header, and
// preparing the attributes of its entries (as a listing with attributes
// does) first tells it every byte that reading their headers needs, in
// one call, so a remote source can fetch them in a few merged requests.
func TestPrefetchHeaders(t *testing.T) {
	const n = 2000 // more than a listing used to prefetch (1,024)
	z := manyMembers(t, n)
	src := &prefetching{r: bytes.NewReader(z)}
	a, err := NewReader(context.Background(), src, int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	eocd := int64(bytes.LastIndex(z, []byte("PK\x05\x06")))
	dirOff := int64(binary.LittleEndian.Uint32(z[eocd+16:]))
	if want := (source.Range{Off: dirOff, Len: eocd - dirOff}); src.calls != 1 || len(src.ranges) != 1 || src.ranges[0] != want {
		t.Fatalf("opening prefetched %d times %+v, want the directory %+v", src.calls, src.ranges, want)
	}
	calls, ranges := src.calls, len(src.ranges)
	kids := a.Root().Children(context.Background())
	if len(kids) != 3*n {
		t.Fatalf("root lists %d entries, want %d", len(kids), 3*n)
	}
	if src.calls != calls {
		t.Fatalf("listing prefetched %d times", src.calls-calls)
	}
	l := a.Root().Listing(context.Background())
	l.Prepare(context.Background(), 0, l.Len())
	for _, k := range kids {
		if f := k.File(context.Background()); f != nil && f.Size() <= 0 {
			t.Fatalf("%s: size %d", k.Name(), f.Size())
		}
	}
	if src.calls != calls+1 || len(src.ranges) != ranges+n {
		t.Errorf("Prefetch called %d times with %d ranges, want once with %d", src.calls-calls, len(src.ranges)-ranges, n)
	}
	if len(src.outside) != 0 {
		t.Errorf("%d reads outside the prefetched ranges, the first %+v", len(src.outside), src.outside[0])
	}
}

// flaky fails every read while down is set, with an error that may pass.
type flaky struct {
	r    io.ReaderAt
	down atomic.Bool
}

func (f *flaky) ReadAt(p []byte, off int64) (int, error) {
	if f.down.Load() {
		return 0, source.Transient(errors.New("flaky: server unavailable"))
	}
	return f.r.ReadAt(p, off)
}

// TestTransientFailuresAreNotKept: a header that cannot be read for now
// leaves its views folder empty and unsettled (the folder holding it
// never: its names do not depend on headers), and is read again at the
// next look, once the source works.
func TestTransientFailuresAreNotKept(t *testing.T) {
	z := makeZip(t, []zent{{name: "a.npy", data: npyOf(t, "<f4")}, {name: "b.npy", data: npyOf(t, "<i2"), method: 8}})
	f := &flaky{r: bytes.NewReader(z)}
	a, err := NewReader(context.Background(), f, int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.down.Store(true)
	for _, key := range []string{"a", "b"} {
		v := a.Root().Lookup(context.Background(), key)
		if v == nil || len(v.Children(context.Background())) != 0 || !v.Unsettled() || a.Root().Unsettled() || a.Root().Lookup(context.Background(), key+".ra") == nil {
			t.Fatalf("%s while the source fails: %v, unsettled %v", key, v, v != nil && v.Unsettled())
		}
	}
	if _, err := a.Member("a.npy").File().ReadAt(make([]byte, 4), 0); !errors.Is(err, source.ErrTransient) {
		t.Errorf("read while the source fails: %v", err)
	}
	f.down.Store(false)
	for _, key := range []string{"a", "b"} {
		v := a.Root().Lookup(context.Background(), key)
		if v == nil || v.Lookup(context.Background(), "raw.bin") == nil || v.Unsettled() {
			t.Errorf("%s once the source works: no raw.bin, or still unsettled", key)
		}
	}
	if a.Root().Unsettled() || a.Root().Lookup(context.Background(), "a.ra") == nil {
		t.Error("root still unsettled, or no a.ra")
	}
}
