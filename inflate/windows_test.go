package inflate

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"
)

// repeatedRandom is a random block repeated: every match reaches back the
// block's length, so each checkpoint's window packs to about that many
// bytes (random data alone has no matches, and packs to nothing).
func repeatedRandom(n, block int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, block)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return bytes.Repeat(b, n/block+1)[:n]
}

// TestWindowBudget: indexes that would pass their budget thin themselves:
// the windows stay within the budget plus one window a reader, and every
// read, sequential or random, from one reader or several at once, gets the
// right bytes.
func TestWindowBudget(t *testing.T) {
	data := repeatedRandom(8<<20, 20<<10, 1)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	const span = 32 << 10
	// Unbounded, the index would hold about 256 windows of 20 KiB.
	free := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
	if err := readAllAt(free, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, w := free.IndexStats(); w < 4<<20 {
		t.Fatalf("unbounded index holds %d bytes of windows: the data does not exercise the budget", w)
	}

	budget := NewWindowBudget(512 << 10)
	var readers []*ReaderAt
	for range 2 {
		readers = append(readers, NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc,
			&Options{SpanSize: span, Cache: NewCache(1 << 20), Windows: budget}))
	}
	var wg sync.WaitGroup
	for i, r := range readers {
		wg.Add(2)
		go func() { // sequential, to the end
			defer wg.Done()
			checkRead(t, r, data, 0, len(data))
		}()
		go func() { // random reads, deep ones first
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			for range 40 {
				off := rng.Int64N(int64(len(data)) - 5000)
				checkRead(t, r, data, off, 5000)
			}
		}()
	}
	wg.Wait()
	if budget.Thinned() == 0 {
		t.Error("the indexes were never thinned")
	}
	var held int64
	for _, r := range readers {
		_, w := r.IndexStats()
		held += w
		checkRead(t, r, data, int64(len(data))/2, 100000) // still right after thinning
		evenlyThinned(t, r)
	}
	if held > budget.Limit()+2*(windowSize*2) || budget.Used() > budget.Limit()+2*windowSize {
		t.Errorf("windows hold %d bytes (budget says %d) for a budget of %d", held, budget.Used(), budget.Limit())
	}
}

// evenlyThinned checks that r's kept checkpoints are a stride apart.
func evenlyThinned(t *testing.T, r *ReaderAt) {
	t.Helper()
	r.ix.mu.RLock()
	defer r.ix.mu.RUnlock()
	for i := 1; i+2 < len(r.ix.cps); i++ {
		if d := r.ix.cps[i+1].seq - r.ix.cps[i].seq; r.ix.cps[i].seq%r.ix.stride != 0 || d != r.ix.stride {
			t.Errorf("checkpoint %d (number %d) is %d spans from the next, stride %d", i, r.ix.cps[i].seq, d, r.ix.stride)
			return
		}
	}
}

// TestWindowBudgetLowered: a budget lowered while readers read thins
// their indexes at once, evenly, to fit it; reads stay right; a reader
// released is left alone.
func TestWindowBudgetLowered(t *testing.T) {
	data := repeatedRandom(8<<20, 20<<10, 2)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	budget := NewWindowBudget(64 << 20)
	var readers []*ReaderAt
	for range 3 {
		r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc,
			&Options{SpanSize: 32 << 10, Cache: NewCache(1 << 20), Windows: budget})
		if err := readAllAt(r, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	gone := readers[2]
	gone.Release()
	_, goneWin := gone.IndexStats()
	if used := budget.Used(); used < 8<<20 {
		t.Fatalf("two indexes hold %d bytes of windows: the data does not exercise the budget", used)
	}
	var wg sync.WaitGroup
	for i, r := range readers[:2] {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 10))
			for range 40 {
				checkRead(t, r, data, rng.Int64N(int64(len(data))-5000), 5000)
			}
		})
	}
	budget.SetLimit(1 << 20)
	wg.Wait()
	if budget.Thinned() == 0 || budget.Used() > budget.Limit() {
		t.Errorf("windows hold %d bytes for a budget lowered to %d (thinned %d times)", budget.Used(), budget.Limit(), budget.Thinned())
	}
	for _, r := range readers[:2] {
		checkRead(t, r, data, int64(len(data))/3, 100000)
		evenlyThinned(t, r)
	}
	if _, w := gone.IndexStats(); w != goneWin {
		t.Errorf("a released reader's windows went from %d to %d bytes", goneWin, w)
	}
}

func TestMaskWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	for _, n := range []int{0, 1, 7, 8, 9, 100, windowSize} {
		win := randBytes(rng, n)
		touched := make([]bool, n)
		for i := range touched {
			touched[i] = rng.IntN(3) == 0
		}
		dst := make([]byte, n)
		nonzero := maskWindow(dst, win, touched)
		want := false
		for i := range win {
			b := win[i]
			if !touched[i] {
				b = 0
			}
			if dst[i] != b {
				t.Fatalf("n=%d: byte %d is %d, want %d", n, i, dst[i], b)
			}
			want = want || b != 0
		}
		if nonzero != want {
			t.Fatalf("n=%d: nonzero %v", n, nonzero)
		}
	}
}
