package npz

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// bigNPY is a .npy stream of n float32-sized items whose bytes mix
// compressible runs and noise, so the deflate stream has varied blocks.
func bigNPY(t testing.TB, n int64, seed int64) []byte {
	t.Helper()
	hdr, err := npy.EncodeHeader("<f4", false, []int64{n})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4*n)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < len(data); {
		run := 1 + rng.Intn(8192)
		if i+run > len(data) {
			run = len(data) - i
		}
		if rng.Intn(2) == 0 {
			rng.Read(data[i : i+run])
		} else {
			for j := range run {
				data[i+j] = byte(i / 4096)
				_ = j
			}
		}
		i += run
	}
	return append(hdr, data...)
}

// writeTemp writes b to a file in a fresh temporary folder.
func writeTemp(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRead reads len(buf) bytes at off of f and checks them against want
// (the file's whole content) with io.ReaderAt semantics.
func checkRead(t *testing.T, f *File, want []byte, off int64, n int) {
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	size := int64(len(want))
	var wantN int
	switch {
	case off >= size:
		wantN = 0
	case off+int64(n) > size:
		wantN = int(size - off)
	default:
		wantN = n
	}
	wantEOF := wantN < n
	if got != wantN || (err == io.EOF) != wantEOF || (err != nil && err != io.EOF) {
		t.Errorf("ReadAt(%d bytes at %d) of %d: %d, %v; want %d, eof %v", n, off, size, got, err, wantN, wantEOF)
		return
	}
	if !bytes.Equal(buf[:got], want[min(off, size):min(off, size)+int64(got)]) {
		t.Errorf("ReadAt(%d bytes at %d): wrong bytes", n, off)
	}
}

// TestReadAtDeflated reads a deflated member and its raw.bin at span edges,
// the last byte, past the end, and at random from many goroutines, against
// the bytes that were compressed.
func TestReadAtDeflated(t *testing.T) {
	const span = 64 << 10
	member := bigNPY(t, 300_000, 1) // 1.2 MB, 18 spans
	z := makeZip(t, []zent{
		{name: "big.npy", data: member, method: 8},
		{name: "stored.npy", data: member, method: 0},
	})
	a, err := Open(context.Background(), writeTemp(t, z), &Options{SpanSize: span, CacheBytes: 4 * span, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h, err := a.Member("big.npy").Header(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw := member[h.DataOffset:]
	for _, tc := range []struct {
		path string
		want []byte
	}{
		{"big.npy", member}, {"big/raw.bin", raw},
		{"stored.npy", member}, {"stored/raw.bin", raw},
	} {
		n := lookupPath(a, tc.path)
		if n == nil {
			t.Fatalf("no %s", tc.path)
		}
		f := n.File(context.Background())
		size := int64(len(tc.want))
		if f.Size() != size {
			t.Fatalf("%s: size %d, want %d", tc.path, f.Size(), size)
		}
		// Edges, from the end back first so checkpoints come out of order.
		offs := []int64{size - 1, size, size + 1, size + 1<<40, size - 4096, 0, 1}
		for k := int64(1); k*span < size+span; k++ {
			offs = append(offs, k*span-1, k*span, k*span+1, k*span-h.DataOffset)
		}
		for _, off := range offs {
			for _, n := range []int{1, 2, 4096, span + 3} {
				checkRead(t, f, tc.want, off, n)
			}
		}
		if n, err := f.ReadAt(nil, 5); n != 0 || err != nil {
			t.Errorf("empty read: %d, %v", n, err)
		}
		if _, err := f.ReadAt(make([]byte, 1), -1); err == nil || err == io.EOF {
			t.Errorf("negative offset: %v", err)
		}
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(g)))
				for range 60 {
					off := rng.Int63n(size + 100)
					checkRead(t, f, tc.want, off, 1+rng.Intn(3*4096))
				}
			}()
		}
		wg.Wait()
	}
}

// TestTruncatedAfterOpen cuts the archive file after Open: every read
// that needs the file fails with ErrChanged, before the cut too, never a
// short read; stored extents are no longer handed out.
func TestTruncatedAfterOpen(t *testing.T) {
	member := bigNPY(t, 50_000, 2)
	z := makeZip(t, []zent{
		{name: "stored.npy", data: member, method: 0},
		{name: "deflated.npy", data: member, method: 8},
		{name: "late.txt", data: []byte("after the cut")},
	})
	p := writeTemp(t, z)
	a, err := Open(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	stored := a.Member("stored.npy")
	// Resolve the stored member's header before the cut; the rest after.
	if _, err := stored.Header(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(member)/2)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8192)
	n, err := stored.File().ReadAt(buf, int64(len(member))-100)
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrChanged) || n != 0 {
		t.Errorf("stored read past the cut: %d, %v", n, err)
	}
	if n, err := stored.File().ReadAt(buf[:10], 0); n != 0 || !errors.Is(err, ErrChanged) {
		t.Errorf("stored read before the cut: %d, %v", n, err)
	}
	if _, _, ok, err := stored.File().Extent(context.Background()); ok || !errors.Is(err, ErrChanged) {
		t.Errorf("stored extent after the cut: ok %v, %v", ok, err)
	}
	for _, name := range []string{"deflated.npy", "late.txt"} {
		m := a.Member(name)
		n, err := m.File().ReadAt(buf, 0)
		if err == nil || err == io.EOF {
			t.Errorf("%s after the cut: %d, %v", name, n, err)
		}
		if m.HasViews(context.Background()) || m.Reason(context.Background()) == "" && m.IsNPY() {
			t.Errorf("%s after the cut: views %v reason %q", name, m.HasViews(context.Background()), m.Reason(context.Background()))
		}
	}
	walkTree(t, a, true) // lists and reads all without a panic; errors are expected
}

// TestChangedAfterOpen overwrites the archive's bytes after Open: reads
// give errors or bytes, never a panic.
func TestChangedAfterOpen(t *testing.T) {
	_, z := storedAndDeflated(t, 3)
	p := writeTemp(t, z)
	a, err := Open(context.Background(), p, &Options{SpanSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	junk := make([]byte, len(z))
	rand.New(rand.NewSource(4)).Read(junk)
	if err := os.WriteFile(p, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	m := a.Member("deflated.npy")
	if _, err := m.File().ReadAt(make([]byte, 100), 100_000); err == nil {
		t.Error("deflated read of junk succeeded")
	}
	walkTree(t, a, true)
}

func TestClosed(t *testing.T) {
	a, err := Open(context.Background(), "testdata/numpy_savez.npz", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := a.Member("ints.npy").File()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 4), 0); err == nil || err == io.EOF {
		t.Errorf("read after Close: %v", err)
	}
}

// TestConcurrentResolve walks fresh archives from many goroutines at once,
// so local headers, npy headers and views are resolved under contention.
func TestConcurrentResolve(t *testing.T) {
	for _, name := range []string{"numpy_savez.npz", "numpy_savez_compressed.npz", "names.npz"} {
		a, err := Open(context.Background(), "testdata/"+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := walk(t, a)
		a.Close()
		a, err = Open(context.Background(), "testdata/"+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		results := make([][]string, 8)
		for g := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if g%2 == 0 {
					for _, m := range a.Members() {
						m.Reason(context.Background())
					}
				}
				results[g] = walk(t, a)
			}()
		}
		wg.Wait()
		for g, got := range results {
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: goroutine %d saw a different tree", name, g)
			}
		}
		a.Close()
	}
}

// TestReadCached: File.ReadCached reads a deflated member's bytes once a
// read has cached them, exactly, and nothing else: not before, not a
// stored member's, not after the archive is closed.
func TestReadCached(t *testing.T) {
	member, z := storedAndDeflated(t, 2)
	a := openBytes(t, z)
	p := make([]byte, 1000)
	cached := func(name string, off int64) bool {
		t.Helper()
		clear(p)
		n, ok := a.Member(name).File().ReadCached(p, off)
		if ok && (n != len(p) || !bytes.Equal(p, member[off:off+int64(len(p))])) {
			t.Fatalf("%s at %d: %d bytes, right ones %v", name, off, n, bytes.Equal(p, member[off:off+int64(len(p))]))
		}
		return ok
	}
	if cached("deflated.npy", 100) {
		t.Error("read before any read")
	}
	for _, name := range []string{"stored.npy", "deflated.npy"} {
		if _, err := readAll(t, a.Member(name).File()); err != nil {
			t.Fatal(err)
		}
	}
	if cached("stored.npy", 100) {
		t.Error("a stored member's bytes read")
	}
	for _, off := range []int64{0, 100, int64(len(member)) - 1000} {
		if !cached("deflated.npy", off) {
			t.Errorf("deflated member at %d, read whole before: not read", off)
		}
	}
	a.Close()
	if cached("deflated.npy", 100) {
		t.Error("read after the archive was closed")
	}
}

// storedAndDeflated is an archive of one .npy member (bigNPY's, of
// 50,000 elements, from seed) twice: stored.npy and deflated.npy.
func storedAndDeflated(t *testing.T, seed int64) (member, archive []byte) {
	member = bigNPY(t, 50_000, seed)
	return member, makeZip(t, []zent{
		{name: "stored.npy", data: member, method: 0},
		{name: "deflated.npy", data: member, method: 8},
	})
}
