package npz

import (
	"flag"
	"math/rand"
	"os"
	"path/filepath"
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
					if n := len(a.Root().Children()); n != 200_000 {
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
