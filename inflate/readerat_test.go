package inflate

import (
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newRA is a reader of comp in spans of span bytes, with its own
// HelperBudget (of GOMAXPROCS), so that no other test's goroutines take
// its prefetches' places.
func newRA(data, comp []byte, span int64, cache *Cache) *ReaderAt {
	return NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)),
		crc32.ChecksumIEEE(data), &Options{SpanSize: span, Cache: cache, HelperBudget: NewHelperBudget(0)})
}

// checkRead compares one ReadAt against data, with io.ReaderAt semantics.
func checkRead(t *testing.T, ra *ReaderAt, data []byte, off int64, n int) {
	t.Helper()
	p := make([]byte, n)
	got, err := ra.ReadAt(p, off)
	size := int64(len(data))
	switch {
	case off >= size:
		if got != 0 || err != io.EOF {
			t.Fatalf("ReadAt(%d, %d) past end = %d, %v; want 0, EOF", n, off, got, err)
		}
		return
	case off+int64(n) >= size:
		want := int(size - off)
		if got != want || err != io.EOF {
			t.Fatalf("ReadAt(%d, %d) to end = %d, %v; want %d, EOF", n, off, got, err, want)
		}
	default:
		if got != n || err != nil {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, got, err)
		}
	}
	if !bytes.Equal(p[:got], data[off:off+int64(got)]) {
		t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
	}
}

func TestReaderAtRandom(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  []byte
		level int
	}{
		{"mixed6", mixed(1<<20, 7), 6},
		{"zeros9", make([]byte, 3<<20), 9},
		{"float1", noisyFloat32(1<<20, 5), 1},
		{"ramp-huffonly", intRamp(600000), flate.HuffmanOnly},
		{"stored", mixed(300000, 8), flate.NoCompression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comp := deflate(t, tc.data, tc.level)
			for _, span := range []int64{4096, 65536, 0} {
				ra := newRA(tc.data, comp, span, NewCache(1<<20))
				rng := rand.New(rand.NewPCG(uint64(span), 9))
				size := int64(len(tc.data))
				for i := 0; i < 200; i++ {
					off := rng.Int64N(size + 10)
					checkRead(t, ra, tc.data, off, 1+rng.IntN(20000))
				}
				// Span edges and the last byte.
				cps := ra.checkpoints()
				if span == 4096 && len(cps) < int(size/8192) {
					t.Errorf("only %d checkpoints for %d bytes at span %d", len(cps), size, span)
				}
				// Reads straddling and starting at every checkpoint, through
				// a cold cache.
				ra2 := newRA(tc.data, comp, span, NewCache(1))
				ra2.ReadAt(make([]byte, 1), size-1)
				for _, cp := range cps {
					checkRead(t, ra2, tc.data, cp.out, 100)
					if cp.out > 0 {
						checkRead(t, ra2, tc.data, cp.out-1, 2)
						checkRead(t, ra2, tc.data, cp.out-50, 50)
					}
				}
				checkRead(t, ra, tc.data, size-1, 1)
				checkRead(t, ra, tc.data, size-1, 10)
				checkRead(t, ra, tc.data, size, 10)
				checkRead(t, ra, tc.data, 0, len(tc.data))
			}
		})
	}
}

func TestReaderAtConcurrent(t *testing.T) {
	data := mixed(2<<20, 11)
	comp := deflate(t, data, 6)
	cache := NewCache(200 << 10)
	ras := []*ReaderAt{newRA(data, comp, 16<<10, cache), newRA(data, comp, 64<<10, cache)}
	readConcurrently(t, ras, data, 3, 60, func(rng *rand.Rand) (int64, int) {
		return rng.Int64N(int64(len(data))), 1 + rng.IntN(40000)
	})
	if u := cache.Used(); u > cache.Budget() {
		t.Errorf("cache holds %d bytes, budget %d", u, cache.Budget())
	}
}

// readConcurrently has 8 goroutines make reads each of ras (chosen at
// random), at the offsets and lengths pick gives, and checks every byte
// against want.
func readConcurrently(t *testing.T, ras []*ReaderAt, want []byte, seed uint64, reads int, pick func(*rand.Rand) (int64, int)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), seed))
			for i := 0; i < reads; i++ {
				ra := ras[rng.IntN(len(ras))]
				off, n := pick(rng)
				p := make([]byte, n)
				got, err := ra.ReadAt(p, off)
				if err != nil && err != io.EOF {
					t.Errorf("ReadAt: %v", err)
					return
				}
				if !bytes.Equal(p[:got], want[off:off+int64(got)]) {
					t.Errorf("goroutine %d: wrong bytes at %d", g, off)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// readAll reads the whole ReaderAt from the front in chunks and returns the
// first error other than io.EOF.
func readAllAt(ra *ReaderAt, size int64) error {
	p := make([]byte, 50000)
	for off := int64(0); off < size; off += int64(len(p)) {
		if _, err := ra.ReadAt(p, off); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

func TestReaderAtErrors(t *testing.T) {
	data := mixed(400000, 12)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	size := int64(len(data))
	open := func(comp []byte, size int64, crc uint32) *ReaderAt {
		return NewReaderAt(bytes.NewReader(comp), int64(len(comp)), size, crc, &Options{SpanSize: 8192})
	}
	cases := []struct {
		name string
		ra   *ReaderAt
		size int64
		want error
	}{
		{"ok", open(comp, size, crc), size, nil},
		{"declared too large", open(comp, size+1, crc), size + 1, ErrTooShort},
		{"declared too small", open(comp, size-1, crc), size - 1, ErrTooLong},
		{"declared much too small", open(comp, size/2, crc), size / 2, ErrTooLong},
		{"crc", open(comp, size, crc^1), size, ErrChecksum},
		{"truncated", open(comp[:len(comp)/2], size, crc), size, ErrTooShort},
		{"truncated by compressedSize", NewReaderAt(bytes.NewReader(comp), int64(len(comp)-1), size, crc, nil), size, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := readAllAt(c.ra, c.size)
			if c.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			var oe *OffsetError
			if !errors.As(err, &oe) {
				t.Fatalf("err %v carries no offset", err)
			}
			if msg := err.Error(); !strings.Contains(msg, strconv.FormatInt(oe.Offset, 10)) || !strings.Contains(msg, c.want.Error()) {
				t.Fatalf("message %q lacks the offset %d or the cause", msg, oe.Offset)
			}
			if c.ra.Size() != c.size {
				t.Fatalf("Size() = %d, want %d", c.ra.Size(), c.size)
			}
			// Later reads of the span where the error was found, or past
			// it, fail the same way; reads before it are served, so that
			// what a read gets never depends on which read found the
			// error first.
			if _, err2 := c.ra.ReadAt(make([]byte, 10), c.size-10); !errors.Is(err2, c.want) {
				t.Fatalf("second read of the end: err = %v, want %v", err2, c.want)
			}
			if c.ra.ix.errAt > 0 {
				buf := make([]byte, 10)
				if n, err := c.ra.ReadAt(buf, 0); n != 10 || err != nil || !bytes.Equal(buf, data[:10]) {
					t.Fatalf("read of the start after the error: %d bytes, %v", n, err)
				}
			}
		})
	}
	// Corrupt data in the middle.
	bad := append([]byte(nil), comp...)
	for i := len(bad) / 2; i < len(bad)/2+64; i++ {
		bad[i] ^= 0x5a
	}
	err := readAllAt(open(bad, size, crc), size)
	var ce *CorruptError
	if errors.As(err, &ce) && !strings.Contains(err.Error(), "corrupt input at compressed byte "+strconv.FormatInt(ce.Offset, 10)) {
		t.Fatalf("corrupt error message %q lacks its offset", err)
	}
	if err == nil || (!errors.As(err, &ce) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrTooShort) && !errors.Is(err, ErrTooLong)) {
		t.Fatalf("corrupt stream: err = %v", err)
	}
	// Negative offset.
	if _, err := open(comp, size, crc).ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("negative offset accepted")
	}
	// Empty member.
	e := deflate(t, nil, 6)
	ra := NewReaderAt(bytes.NewReader(e), int64(len(e)), 0, 0, nil)
	if n, err := ra.ReadAt(make([]byte, 1), 0); n != 0 || err != io.EOF {
		t.Fatalf("empty: %d, %v", n, err)
	}
}

// flakyReaderAt fails reads at or past failAt while failing is set.
type flakyReaderAt struct {
	r       io.ReaderAt
	failAt  int64
	failing atomic.Bool
}

var errFlaky = errors.New("flaky read")

func (f *flakyReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if f.failing.Load() && off+int64(len(p)) > f.failAt {
		return 0, errFlaky
	}
	return f.r.ReadAt(p, off)
}

// TestReaderAtSourceErrorNotSticky: an error reading src is reported but
// not remembered; the read succeeds once src recovers.
func TestReaderAtSourceErrorNotSticky(t *testing.T) {
	data := mixed(500000, 13)
	comp := deflate(t, data, 6)
	f := &flakyReaderAt{r: bytes.NewReader(comp), failAt: int64(len(comp) / 2)}
	f.failing.Store(true)
	ra := NewReaderAt(f, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), &Options{SpanSize: 16 << 10})
	if _, err := ra.ReadAt(make([]byte, 100), int64(len(data)-200)); !errors.Is(err, errFlaky) {
		t.Fatalf("err = %v, want the source's error", err)
	}
	f.failing.Store(false)
	checkRead(t, ra, data, int64(len(data)-200), 100)
	checkRead(t, ra, data, 0, len(data))
}

// TestReaderAtConcurrentRecycling: concurrent reads, many of the same
// spans, through a cache so small that inflating a span evicts another and
// reuses its buffer while other reads may still copy from it. Run with
// -race: a buffer recycled too early is a data race, and wrong bytes.
func TestReaderAtConcurrentRecycling(t *testing.T) {
	comp := deflate(t, mixed(1<<20, 14), 6)
	want, err := stdInflate(comp)
	if err != nil {
		t.Fatal(err)
	}
	const span = 16 << 10
	cache := NewCache(3 * (span + windowSize + outSlack))
	ras := []*ReaderAt{newRA(want, comp, span, cache), newRA(want, comp, span, cache)}
	size := int64(len(want))
	readConcurrently(t, ras, want, 14, 150, func(rng *rand.Rand) (int64, int) {
		off := rng.Int64N(size)
		if rng.IntN(2) == 0 {
			off = rng.Int64N(4) * span // a few hot spans
		}
		return off, 1 + rng.IntN(3*span)
	})
	if u := cache.Used(); u > cache.Budget() {
		t.Errorf("cache holds %d bytes, budget %d", u, cache.Budget())
	}
}

// TestReaderAtRecyclesBuffers: reading a member front to back, whether
// building the index or through an index already built, inflates into
// recycled buffers rather than allocating its size again.
func TestReaderAtRecyclesBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector")
	}
	data := noisyFloat32(8<<20, 15)
	comp := deflate(t, data, 6)
	const span = 64 << 10
	size := int64(len(data))
	open := func() *ReaderAt { return newRA(data, comp, span, NewCache(4*(span+windowSize+outSlack))) }
	if err := readAllAt(open(), size); err != nil { // warm the shared packer
		t.Fatal(err)
	}
	ra := open()
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	for _, pass := range []string{"indexing", "indexed"} {
		var err error
		n := allocated(func() { err = readAllAt(ra, size) })
		if err != nil {
			t.Fatal(err)
		}
		if n > uint64(size/8) {
			t.Errorf("%s pass over %d bytes allocated %d bytes", pass, size, n)
		}
		t.Logf("%s pass over %d bytes allocated %d bytes", pass, size, n)
	}
}

// TestSmallStreamAllocatesLittle: a stream of one span, as the members of
// an archive of many small arrays are, is read whole without the 32 KiB
// buffers that later spans' windows need (a mount reads thousands of such
// members, and fresh memory costs a page fault a page).
func TestSmallStreamAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector")
	}
	data := mixed(1200, 21)
	comp := deflate(t, data, 6)
	cache := NewCache(1 << 20)
	if err := readAllAt(newRA(data, comp, 64<<10, cache), int64(len(data))); err != nil { // warm the pools
		t.Fatal(err)
	}
	const reads = 100
	var err error
	n := allocated(func() {
		for range reads {
			if e := readAllAt(newRA(data, comp, 64<<10, cache), int64(len(data))); e != nil {
				err = e
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if per := n / reads; per > 8<<10 {
		t.Errorf("reading a %d-byte stream whole through a new ReaderAt allocated %d bytes", len(data), per)
	}
}

// TestReaderAtCachesWantedSpans: extending the index caches the spans that
// reads waiting for it want, whichever read extends it, and no others.
func TestReaderAtCachesWantedSpans(t *testing.T) {
	data := mixed(1<<20, 16)
	comp := deflate(t, data, 6)
	const span = 64 << 10
	cache := NewCache(1 << 20)
	ra := newRA(data, comp, span, cache)
	// A read in span 1 waits while another, in span 5, extends the index
	// (checkpoints are a symbol or less past multiples of the span).
	ra.front.waiting = append(ra.front.waiting, &outRange{start: span + span/2, end: span + span/2 + 10})
	checkRead(t, ra, data, 5*span+span/2, 10)
	if len(ra.front.waiting) != 1 {
		t.Fatalf("%d reads waiting, want the 1 left", len(ra.front.waiting))
	}
	cps := ra.checkpoints()
	for k, want := range []bool{false, true, false, false, false, true, false} {
		s := cache.get(cacheKey{ra.id, cps[k].out})
		if s != nil {
			cache.release(s)
		}
		if got := s != nil; got != want {
			t.Errorf("span %d cached: %v, want %v", k, got, want)
		}
	}
}

// TestReadFromAWindowBeingPacked: a read that inflates a span whose
// window is still being packed in the background waits for it, and reads
// the right bytes.
func TestReadFromAWindowBeingPacked(t *testing.T) {
	data := mixed(256<<10, 31)
	comp := deflate(t, data, 6)
	const span = 64 << 10
	hold := make(chan struct{})
	waiting := make(chan struct{})
	var once sync.Once
	hooks := &testHooks{
		pack: func(seq int64) {
			if seq == 1 {
				<-hold
			}
		},
		wait: func(w waitFor) {
			if w == forWindow {
				once.Do(func() { close(waiting) })
			}
		},
	}
	ra := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: span, Cache: NewCache(1024), test: hooks}) // keeps no span: reads inflate
	p := make([]byte, 1000)
	done := make(chan error)
	go func() {
		_, err := ra.ReadAt(p, span+100) // indexes spans 0 and 1, then inflates span 1
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(time.Minute): // a hang guard, not a timing
		t.Fatal("the read did not wait for span 1's window")
	}
	close(hold)
	if err := <-done; err != nil || !bytes.Equal(p, data[span+100:span+1100]) {
		t.Fatalf("read from span 1: %v, or wrong bytes", err)
	}
	checkRead(t, ra, data, 3*span+5, 2000)
}
