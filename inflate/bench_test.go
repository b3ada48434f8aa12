package inflate

// The benchmarks of the inflater on whole streams (BenchmarkInflate,
// beside compress/flate and klauspost's), of the first pass
// (BenchmarkIndex) and of ReadAt over a 256 MiB member, random and
// sequential, at several spans. Their results are recorded in
// BENCHMARKS.md; run them with
//
//	go test ./inflate -run '^$' -bench . -benchtime 5x -count 3
//
// (BenchmarkReadAtRandom4K wants -benchtime 3000x), and -cpu 1 for the
// inflater on one core.

import (
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

const benchSize = 32 << 20

type benchData struct {
	raw, comp []byte
}

var (
	benchOnce  sync.Map // name -> *sync.Once
	benchCache sync.Map // name -> *benchData
)

func benchInput(b *testing.B, name string) *benchData {
	o, _ := benchOnce.LoadOrStore(name, new(sync.Once))
	o.(*sync.Once).Do(func() {
		var raw []byte
		switch name {
		case "float32":
			raw = noisyFloat32(benchSize, 1)
		case "ramp":
			raw = intRamp(benchSize)
		case "zeros":
			raw = make([]byte, benchSize)
		case "mixed":
			raw = mixed(benchSize, 2)
		}
		benchCache.Store(name, &benchData{raw, deflate(b, raw, flate.DefaultCompression)})
	})
	v, _ := benchCache.Load(name)
	return v.(*benchData)
}

var benchNames = []string{"float32", "ramp", "zeros", "mixed"}

func drain(b *testing.B, r io.Reader, want int) {
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if n != want {
		b.Fatalf("inflated %d bytes, want %d", n, want)
	}
}

func BenchmarkInflate(b *testing.B) {
	for _, name := range benchNames {
		for _, impl := range []string{"npzfs", "stdlib", "klauspost"} {
			b.Run(name+"/"+impl, func(b *testing.B) {
				d := benchInput(b, name)
				b.SetBytes(int64(len(d.raw)))
				b.ReportMetric(float64(len(d.comp))/float64(len(d.raw)), "ratio")
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var r io.Reader
					switch impl {
					case "npzfs":
						r = NewReader(bytes.NewReader(d.comp))
					case "stdlib":
						r = flate.NewReader(bytes.NewReader(d.comp))
					default:
						r = kflate.NewReader(bytes.NewReader(d.comp))
					}
					drain(b, r, len(d.raw))
				}
			})
		}
	}
}

// BenchmarkIndex builds the whole index of each input at the default span
// and reports its window bytes per GiB of output.
func BenchmarkIndex(b *testing.B) {
	for _, name := range benchNames {
		b.Run(name, func(b *testing.B) {
			d := benchInput(b, name)
			crc := crc32.ChecksumIEEE(d.raw)
			b.SetBytes(int64(len(d.raw)))
			var cps int
			var win int64
			for i := 0; i < b.N; i++ {
				ra := NewReaderAt(bytes.NewReader(d.comp), int64(len(d.comp)), int64(len(d.raw)), crc, nil)
				if _, err := ra.ReadAt(make([]byte, 1), int64(len(d.raw)-1)); err != io.EOF {
					b.Fatal(err)
				}
				cps, win = ra.IndexStats()
			}
			b.ReportMetric(float64(win)*float64(1<<30)/float64(len(d.raw)), "index-B/GiB")
			b.ReportMetric(float64(cps), "checkpoints")
		})
	}
}

var bigOnce sync.Once
var bigPath string
var bigSize int64
var bigCRC uint32

// bigMember writes a 256 MiB member (numpy-like: float32 noise, ramps and
// zeros in 8 MiB arrays), deflated by klauspost at its default level, to
// a file.
func bigMember(b *testing.B) (string, int64, uint32) {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inflatebench")
		if err != nil {
			b.Fatal(err)
		}
		bigPath = filepath.Join(dir, "member.deflate")
		f, err := os.Create(bigPath)
		if err != nil {
			b.Fatal(err)
		}
		w, _ := kflate.NewWriter(f, kflate.DefaultCompression)
		h := crc32.NewIEEE()
		const chunk = 8 << 20
		for i := 0; i < 32; i++ {
			var p []byte
			switch i % 4 {
			case 0, 1:
				p = noisyFloat32(chunk, uint64(i))
			case 2:
				p = intRamp(chunk)
			default:
				p = make([]byte, chunk)
			}
			w.Write(p)
			h.Write(p)
			bigSize += int64(len(p))
		}
		w.Close()
		f.Close()
		bigCRC = h.Sum32()
	})
	return bigPath, bigSize, bigCRC
}

// BenchmarkReadAtRandom4K: random 4 KiB reads in a 256 MiB member whose
// index is built, through a 32 MiB cache (mostly misses: each inflates up
// to one 1 MiB span).
func BenchmarkReadAtRandom4K(b *testing.B) {
	for _, span := range benchSpans {
		b.Run("span="+sizeName(span), func(b *testing.B) { benchRandom4K(b, span) })
	}
}

// benchSpans are the checkpoint distances the ReadAt benchmarks compare:
// a random read inflates half a span on average, and the index grows with
// the number of checkpoints.
var benchSpans = []int64{1 << 20, 512 << 10, 256 << 10}

func sizeName(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// openBigMember opens the benchmarks' 256 MiB member; the file closes when
// the benchmark ends.
func openBigMember(b *testing.B) (f *os.File, csize, size int64, crc uint32) {
	path, size, crc := bigMember(b)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return f, fi.Size(), size, crc
}

func benchRandom4K(b *testing.B, span int64) {
	f, csize, size, crc := openBigMember(b)
	ra := NewReaderAt(f, csize, size, crc, &Options{SpanSize: span, Cache: NewCache(32 << 20)})
	if _, err := ra.ReadAt(make([]byte, 1), size-1); err != io.EOF {
		b.Fatal(err)
	}
	cps, win := ra.IndexStats()
	rng := rand.New(rand.NewPCG(1, 1))
	p := make([]byte, 4096)
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := rng.Int64N(size - 4096)
		if _, err := ra.ReadAt(p, off); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(win)*float64(1<<30)/float64(size), "index-B/GiB")
	b.ReportMetric(float64(cps), "checkpoints")
	b.ReportMetric(float64(csize)/float64(size), "ratio")
}

// BenchmarkReadAtSequential128K reads the 256 MiB member front to back in
// 128 KiB reads through a fresh ReaderAt (so it includes building the index
// and checking the CRC), as a FUSE cat would.
func BenchmarkReadAtSequential128K(b *testing.B) {
	for _, span := range benchSpans {
		b.Run("span="+sizeName(span), func(b *testing.B) { benchSequential128K(b, span) })
	}
}

func benchSequential128K(b *testing.B, span int64) {
	f, csize, size, crc := openBigMember(b)
	p := make([]byte, 128<<10)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ra := NewReaderAt(f, csize, size, crc, &Options{SpanSize: span, Cache: NewCache(16 << 20)})
		for off := int64(0); off < size; off += int64(len(p)) {
			if _, err := ra.ReadAt(p, off); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
	}
}

// TestMain removes the benchmarks' big member file.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigPath != "" {
		os.RemoveAll(filepath.Dir(bigPath))
	}
	os.Exit(code)
}
