package inflate

import (
	"bytes"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// readSeq reads ra from start to its end in pieces of lo..hi bytes and
// returns what it read, or the first error.
func readSeq(ra *ReaderAt, start int64, lo, hi int, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 3))
	var out []byte
	for off := start; off < ra.Size(); {
		p := make([]byte, lo+rng.IntN(hi-lo+1))
		n, err := ra.ReadAt(p, off)
		out = append(out, p[:n]...)
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// waitAhead waits for ra's read-ahead goroutines to end.
func waitAhead(t *testing.T, ra *ReaderAt) {
	t.Helper()
	done := make(chan struct{})
	go func() { ra.ahead.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("read-ahead still running 10s after the last read")
	}
}

func TestReadAheadSequential(t *testing.T) {
	data := mixed(6<<20, 21)
	comp := deflate(t, data, 6)
	want, err := stdInflate(comp)
	if err != nil || !bytes.Equal(want, data) {
		t.Fatal("compress/flate disagrees with the test data")
	}
	before := runtime.NumGoroutine()
	const span = 128 << 10
	ra := newRA(data, comp, span, NewCache(32<<20))
	got, err := readSeq(ra, 0, 128<<10, 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("sequential read differs from compress/flate's output")
	}
	if ra.ahead.starts.Load() == 0 {
		t.Fatal("read-ahead never ran")
	}
	waitAhead(t, ra)
	// No goroutine outlives the read (others may take a moment to exit).
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 100 {
			t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadAheadBounded: a sequential reader that stops leaves the index at
// most ahead.spans spans past its last read, and no goroutine.
func TestReadAheadBounded(t *testing.T) {
	data := mixed(8<<20, 22)
	comp := deflate(t, data, 6)
	const span = 64 << 10
	cache := NewCache(16 << 20)
	ra := newRA(data, comp, span, cache)
	for off := int64(0); off < 1<<20; off += 128 << 10 {
		checkRead(t, ra, data, off, 128<<10)
	}
	waitAhead(t, ra)
	if ra.ahead.starts.Load() == 0 {
		t.Fatal("read-ahead never ran")
	}
	cps, _ := ra.IndexStats()
	if limit := (1<<20)/span + int(ra.ahead.spans) + 1; cps > limit {
		t.Fatalf("%d checkpoints after reading 1 MiB in %d-byte spans: read-ahead went past %d spans", cps, span, ra.ahead.spans)
	}
	if cache.Used() > 2<<20 {
		t.Fatalf("cache holds %d bytes after reading 1 MiB", cache.Used())
	}
}

func TestReadAheadNotForRandomReads(t *testing.T) {
	data := mixed(8<<20, 23)
	comp := deflate(t, data, 6)
	ra := newRA(data, comp, 64<<10, NewCache(16<<20))
	rng := rand.New(rand.NewPCG(4, 5))
	size := int64(len(data))
	for i := 0; i < 300; i++ {
		n := 4096
		if i%3 == 0 {
			n = 1 << 20 // large random reads are not sequential either
		}
		checkRead(t, ra, data, rng.Int64N(size), n)
	}
	// A read deep past the index frontier.
	ra2 := newRA(data, comp, 64<<10, NewCache(16<<20))
	checkRead(t, ra2, data, size/2, 1<<20)
	checkRead(t, ra2, data, size/4, 4096)
	for _, r := range []*ReaderAt{ra, ra2} {
		if n := r.ahead.starts.Load(); n != 0 {
			t.Fatalf("random reads started read-ahead %d times", n)
		}
	}
}

func TestReadAheadConcurrent(t *testing.T) {
	const span = 64 << 10
	var datas, comps [][]byte
	for i := range 3 {
		d := mixed(3<<20, uint64(30+i))
		datas, comps = append(datas, d), append(comps, deflate(t, d, 6))
	}
	// One reader read by several sequential readers, and three sharing a
	// cache of a few spans.
	shared := newRA(datas[0], comps[0], span, NewCache(16<<20))
	small := NewCache(6 * (span + windowSize + outSlack))
	var ras []*ReaderAt
	for i := range 3 {
		ras = append(ras, newRA(datas[i], comps[i], span, small))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	read := func(ra *ReaderAt, want []byte, start int64, seed uint64) {
		defer wg.Done()
		got, err := readSeq(ra, start, 128<<10, 1<<20, seed)
		if err != nil {
			errs <- err
		} else if !bytes.Equal(got, want[start:]) {
			errs <- io.ErrShortBuffer // any error: the bytes differ
		}
	}
	for i := range 4 {
		wg.Add(1)
		go read(shared, datas[0], int64(i)*100000, uint64(i))
	}
	for i, ra := range ras {
		wg.Add(2)
		go read(ra, datas[i], 0, uint64(10+i))
		go read(ra, datas[i], 12345, uint64(20+i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	started := shared.ahead.starts.Load()
	for _, ra := range ras {
		waitAhead(t, ra)
		started += ra.ahead.starts.Load()
	}
	waitAhead(t, shared)
	if started == 0 {
		t.Fatal("read-ahead never ran")
	}
}

// TestReadAheadErrors: a bad stream gives a sequential reader the error a
// reader without read-ahead gets, whether the read-ahead found it or not.
func TestReadAheadErrors(t *testing.T) {
	data := mixed(400000, 24)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	size := int64(len(data))
	bad := append([]byte(nil), comp...)
	for i := len(bad) * 3 / 4; i < len(bad)*3/4+64; i++ {
		bad[i] ^= 0x5a
	}
	cases := []struct {
		name string
		comp []byte
		size int64
		crc  uint32
	}{
		{"crc", comp, size, crc ^ 1},
		{"declared too large", comp, size + 1, crc},
		{"declared too small", comp, size - 1000, crc},
		{"truncated", comp[:len(comp)*3/4], size, crc},
		{"corrupt", bad, size, crc},
	}
	const span = 16 << 10
	open := func(comp []byte, size int64, crc uint32) *ReaderAt {
		return NewReaderAt(bytes.NewReader(comp), int64(len(comp)), size, crc, &Options{SpanSize: span, Cache: NewCache(4 << 20)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := open(c.comp, c.size, c.crc)
			plain.ahead.spans = 0
			_, want := readSeq(plain, 0, 32<<10, 32<<10, 1)
			if want == nil || plain.ahead.starts.Load() != 0 {
				t.Fatalf("without read-ahead: err = %v, %d read-aheads", want, plain.ahead.starts.Load())
			}
			for _, first := range []bool{false, true} {
				ra := open(c.comp, c.size, c.crc)
				ra.ahead.spans = 1 << 20 // read-ahead to the end
				start := int64(0)
				if first {
					// Two reads start the read-ahead; let it find the error.
					checkRead(t, ra, data, 0, span)
					checkRead(t, ra, data, span, span)
					waitAhead(t, ra)
					if _, err := ra.ix.covers(ra.size-1, ra.size); err == nil {
						t.Fatal("read-ahead did not find the error")
					}
					start = 2 * span
				}
				_, err := readSeq(ra, start, 32<<10, 32<<10, 1)
				if err == nil || err.Error() != want.Error() {
					t.Fatalf("read-ahead found it first = %v: err = %v, want %v", first, err, want)
				}
				if ra.ahead.starts.Load() == 0 {
					t.Fatal("read-ahead never ran")
				}
				waitAhead(t, ra)
			}
		})
	}
}

// TestPrefetchIndexed: a sequential reader inside the index has the spans
// ahead of it inflated in the background, gets the right bytes and leaves
// no goroutine behind; random readers start no prefetch.
func TestPrefetchIndexed(t *testing.T) {
	data := mixed(6<<20, 41)
	comp := deflate(t, data, 6)
	const span = 128 << 10
	ra := newRA(data, comp, span, NewCache(4<<20))
	checkRead(t, ra, data, int64(len(data))-100, 100) // indexes it all, in one read
	rng := rand.New(rand.NewPCG(41, 1))
	for range 50 {
		checkRead(t, ra, data, rng.Int64N(int64(len(data))), 4096)
	}
	if n := ra.ahead.prefetches.Load(); n != 0 {
		t.Fatalf("%d prefetches for random reads", n)
	}
	got, err := readSeq(ra, 0, 64<<10, 128<<10, 2)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sequential read: %v, or wrong bytes", err)
	}
	if ra.ahead.prefetches.Load() == 0 {
		t.Fatal("a sequential read inside the index prefetched nothing")
	}
	waitAhead(t, ra)
}
