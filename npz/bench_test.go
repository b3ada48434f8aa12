package npz

import (
	"bytes"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
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
				a, err := Open(p, nil)
				if err != nil {
					b.Fatal(err)
				}
				if list {
					if n := len(a.Root().Children()); n != 300_000 { // KEY, KEY.npy, KEY.ra
						b.Fatalf("%d children", n)
					}
				}
				a.Close()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// cpuTime is the user and system CPU time of the process, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
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
			a, err := Open(p, &Options{CacheBytes: bc.cache})
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
// has been looked into (what `find` over a mount does).
func memberMemory(tb testing.TB, n int) (open, views uint64) {
	z := manyMembers(tb, n)
	var b0, b1, b2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&b0)
	a, err := NewReader(bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&b1)
	for _, c := range a.Root().Children() {
		for _, v := range c.Children() {
			v.File()
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

// BenchmarkMemberMemory reports the heap an archive holds per member:
// once open (central directory, members, tree) and once every views
// folder has been looked into (each member's views then keep what they
// need of its npy header).
func BenchmarkMemberMemory(b *testing.B) {
	for b.Loop() {
		open, views := memberMemory(b, 100_000)
		b.ReportMetric(float64(open), "B/member-open")
		b.ReportMetric(float64(views), "B/member-views")
	}
}

// TestMemberMemory: an archive of 100,000 arrays holds at most 340 bytes
// a member once open (311 measured: the central directory's names and
// fixed fields, the member, its file and views folder nodes) and 440 once
// every views folder has been looked into (391 measured). It was 400 and
// well over 1,000.
func TestMemberMemory(t *testing.T) {
	open, views := memberMemory(t, 100_000)
	if open > 340 || views > 440 {
		t.Errorf("%d bytes a member once open, %d once views are read; want at most 340 and 440", open, views)
	}
}
