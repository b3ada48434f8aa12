package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/npzfs/npzfs/zip"
)

var bigMember = flag.Bool("npz.big", false, "benchmark ReadAt in a 256 MiB deflated member instead of 8 MiB")

// BenchmarkOpen100k opens an archive of 100,000 stored tiny .npy members
// (written by archive/zip with npy.EncodeHeader headers), and lists its
// root. Besides wall time it reports the process's CPU time per
// operation, which a busy machine does not inflate.
func BenchmarkOpen100k(b *testing.B) {
	p := filepath.Join(b.TempDir(), "100k.npz")
	if err := os.WriteFile(p, manyMembers(b, 100_000), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, list := range []bool{false, true} {
		name := "open"
		if list {
			name = "open+list"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				a, err := Open(context.Background(), p, nil)
				if err != nil {
					b.Fatal(err)
				}
				if list { // as a mount lists it: KEY, KEY.npy, KEY.ra
					l, n := a.Root().Listing(context.Background()), 0
					for i := range l.Len() {
						if c := l.At(i); c != nil && c.Name() != "" {
							n++
						}
					}
					if n != 300_000 {
						b.Fatalf("%d children", n)
					}
				}
				a.Close()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkReadAtDeflated reads 4 KiB at random offsets of a deflated
// member (8 MiB, or 256 MiB with -npz.big), with the default span cache
// (16 MiB: the small member fits) and with a cache of two spans (most
// reads inflate a span).
func BenchmarkReadAtDeflated(b *testing.B) {
	items := int64(2 << 20) // 8 MiB of float32
	if *bigMember {
		items = 64 << 20
	}
	member := bigNPY(b, items, 7)
	p := filepath.Join(b.TempDir(), "deflated.npz")
	if err := os.WriteFile(p, makeZip(b, []zent{{name: "big.npy", data: member, method: 8}}), 0o644); err != nil {
		b.Fatal(err)
	}
	member = nil
	for _, bc := range []struct {
		name  string
		cache int64
	}{{"cache=16MiB", 0}, {"cache=2MiB", 2 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := Open(context.Background(), p, &Options{CacheBytes: bc.cache})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			f := a.Member("big.npy").File()
			buf := make([]byte, 4096)
			// Build the checkpoint index once, outside the timing.
			if _, err := f.ReadAt(buf[:1], f.Size()-1); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				off := rng.Int63n(f.Size() - int64(len(buf)))
				if _, err := f.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// memberMemory opens an archive of n tiny stored arrays and reports the
// heap it holds per member after opening, and after every views folder
// has been looked into and every view's size asked for (what a listing
// with attributes and `find` over a mount do).
func memberMemory(tb testing.TB, n int) (open, views uint64) {
	z := manyMembers(tb, n)
	var b0, b1, b2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&b0)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&b1)
	l := a.Root().Listing(context.Background())
	for i := 0; i < l.Len(); i += 1024 {
		l.Prepare(context.Background(), i, i+1024)
		for j := i; j < min(i+1024, l.Len()); j++ {
			if c := l.At(j); c != nil {
				if f := c.File(context.Background()); f != nil {
					f.Size()
				}
				for _, v := range c.Children(context.Background()) {
					v.File(context.Background())
				}
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&b2)
	runtime.KeepAlive(a)
	runtime.KeepAlive(z)
	per := func(after runtime.MemStats) uint64 {
		return (after.HeapAlloc - min(b0.HeapAlloc, after.HeapAlloc)) / uint64(n)
	}
	return per(b1), per(b2)
}

// BenchmarkMemberMemory reports the heap an archive of 1,000,000 arrays
// holds per member: once open (central directory, member table, folders)
// and once every view has been looked at (the views' facts stay in a
// bounded cache).
func BenchmarkMemberMemory(b *testing.B) {
	for b.Loop() {
		open, views := memberMemory(b, 1_000_000)
		b.ReportMetric(float64(open), "B/member-open")
		b.ReportMetric(float64(views), "B/member-views")
	}
}

// TestMemberMemory: an archive of 100,000 arrays holds at most 90 bytes
// a member once open (the member table's 64 bytes, its name in the arena
// of names, its place in its folder), and once every view has been
// looked at, at most 2 MB more, the bound of the views' facts kept.
func TestMemberMemory(t *testing.T) {
	const n = 100_000
	open, views := memberMemory(t, n)
	if open > 90 || views > open+(2<<20)/n {
		t.Errorf("%d bytes a member once open, %d once views are read; want at most 90 and %d", open, views, open+(2<<20)/n)
	}
}

// TestOpenAllocations: opening an archive allocates at most twice its
// central directory's bytes, whatever the order of its names.
func TestOpenAllocations(t *testing.T) {
	z := manyMembers(t, 100_000)
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	_, dir := zr.Directory()
	if got := openAllocs(t, z); got > 2*uint64(dir) {
		t.Errorf("opening allocated %d bytes for a central directory of %d (%.2fx); want at most 2x", got, dir, float64(got)/float64(dir))
	}
}

// TestSmallArchiveAllocations: an archive of a few arrays costs a few
// KiB to open, not a member table sized for thousands (a folder mount
// keeps up to --max-open of them); one whose end record declares fewer
// members than it holds still opens every one.
func TestSmallArchiveAllocations(t *testing.T) {
	if got := openAllocs(t, manyMembers(t, 3)); got > 32<<10 {
		t.Errorf("opening an archive of 3 arrays allocated %d bytes; want at most 32 KiB", got)
	}

	// 1,000 members under an end record that declares 1.
	z := manyMembers(t, 1000)
	eocd := len(z) - 22
	binary.LittleEndian.PutUint16(z[eocd+8:], 1)
	binary.LittleEndian.PutUint16(z[eocd+10:], 1)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 1000 {
		t.Fatalf("%d members, want 1000", a.Len())
	}
	for i := range 1000 {
		name := "arr_" + strconv.Itoa(i) + ".npy"
		if m := a.Member(name); m == nil || m.Index() != i || m.Name() != name {
			t.Fatalf("member %s: %v", name, m)
		}
	}
}

// openAllocs is how many bytes opening the archive z allocates.
func openAllocs(t *testing.T, z []byte) uint64 {
	t.Helper()
	var b0, b1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&b0)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	runtime.ReadMemStats(&b1)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(a)
	return b1.TotalAlloc - b0.TotalAlloc
}

// folderOf opens an archive of n tiny arrays in one folder.
func folderOf(b *testing.B, n int) *Archive {
	z := manyMembers(b, n)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkListing lists a folder of 200,000 entries (about 66,667
// arrays, each with KEY/ and KEY.ra): opening it (making its Listing),
// and listing it whole by name, as a plain readdir does.
func BenchmarkListing(b *testing.B) {
	a := folderOf(b, 200_000/3)
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if l := a.Root().Listing(context.Background()); l.Len() == 0 {
				b.Fatal("empty")
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := a.Root().Listing(context.Background())
			n := 0
			for i := range l.Len() {
				if c := l.At(i); c != nil && c.Name() != "" {
					n++
				}
			}
			if n != 3*(200_000/3) {
				b.Fatalf("%d entries", n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200_000, "ns/entry")
	})
}
