package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/source"
)

// fake is an object in memory behind a Backend whose answers a test can
// spoil.
type fake struct {
	mu      sync.Mutex
	data    []byte
	etag    string
	fetches []([2]int64) // off, n of each Fetch
	// fail, when set, is asked before each Fetch: a non-nil error is
	// returned instead of the body.
	fail func(off, n int64) error
	// body, when set, wraps each body.
	body func(io.ReadCloser) io.ReadCloser
	gate chan struct{} // when set, each Fetch waits for a value from it
}

func newFake(n int) *fake {
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return &fake{data: data, etag: `"v1"`}
}

func (f *fake) String() string { return "fake://object" }

func (f *fake) Tail(ctx context.Context, n int64) (Object, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	size := int64(len(f.data))
	k := min(n, size)
	return Object{Size: size, ETag: f.etag}, bytes.Clone(f.data[size-k:]), nil
}

func (f *fake) Fetch(ctx context.Context, obj Object, off, n int64) (io.ReadCloser, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	f.fetches = append(f.fetches, [2]int64{off, n})
	fail, wrap, etag := f.fail, f.body, f.etag
	var body []byte
	if off+n <= int64(len(f.data)) {
		body = bytes.Clone(f.data[off : off+n])
	}
	f.mu.Unlock()
	if fail != nil {
		if err := fail(off, n); err != nil {
			return nil, err
		}
	}
	if etag != obj.ETag {
		return nil, Permanent(fmt.Errorf("fake: %w", source.ErrChanged))
	}
	if body == nil {
		return nil, Permanent(errors.New("fake: range past the end"))
	}
	var rc io.ReadCloser = io.NopCloser(bytes.NewReader(body))
	if wrap != nil {
		rc = wrap(rc)
	}
	return rc, nil
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fetches)
}

func open(t *testing.T, f *fake, o *Options) *Source {
	t.Helper()
	return openBackend(t, f, o)
}

// openBackend is open for any backend.
func openBackend(t *testing.T, b Backend, o *Options) *Source {
	t.Helper()
	opts := Options{BlockSize: 4096, TailBytes: 8192, Backoff: time.Millisecond, StallTimeout: time.Second}
	if o != nil {
		opts = *o
	}
	s, err := Open(context.Background(), b, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readBack(t *testing.T, s *Source, f *fake, off, n int64) {
	t.Helper()
	p := make([]byte, n)
	k, err := s.ReadAt(p, off)
	want := f.data[min(off, int64(len(f.data))):min(off+n, int64(len(f.data)))]
	if k != len(want) || !bytes.Equal(p[:k], want) || (err != nil && !(err == io.EOF && k < len(p))) {
		t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d exact bytes", n, off, k, err, len(want))
	}
}

func TestRandomReadsFetchTheirBlocksOnce(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, nil)
	if f.count() != 0 || s.Requests() != 1 {
		t.Fatalf("Open made %d fetches and %d requests, want the tail alone", f.count(), s.Requests())
	}
	r := rand.New(rand.NewPCG(2, 3))
	for range 200 {
		readBack(t, s, f, r.Int64N(1<<20), 1+r.Int64N(9000))
	}
	// Each request fetched missing blocks only, never one twice (the
	// cache holds the whole object).
	seen := map[int64]bool{}
	for _, fe := range f.fetches {
		for b := fe[0] / 4096; b < (fe[0]+fe[1])/4096; b++ {
			if seen[b] {
				t.Fatalf("block %d fetched twice", b)
			}
			seen[b] = true
		}
	}
	// The tail serves itself; reads at the end and past it.
	before := f.count()
	readBack(t, s, f, 1<<20-100, 100)
	readBack(t, s, f, 1<<20-100, 1000)
	if n, err := s.ReadAt(make([]byte, 10), 1<<20); n != 0 || err != io.EOF {
		t.Errorf("read at the end: %d, %v", n, err)
	}
	if f.count() != before {
		t.Errorf("reads in the tail made %d fetches", f.count()-before)
	}
}

func TestSequentialReadIsMergedAndAhead(t *testing.T) {
	f := newFake(4 << 20)
	s := open(t, f, &Options{BlockSize: 4096, MaxRequest: 256 << 10, MaxReadAhead: 1 << 20, CacheBytes: 8 << 20, TailBytes: 4096})
	for off := int64(0); off < 4<<20; off += 16 << 10 {
		readBack(t, s, f, off, 16<<10)
	}
	// 1,024 blocks: a reader going forwards gets them in requests of up to
	// 64 blocks.
	if n := f.count(); n > 40 {
		t.Errorf("a sequential read of 1,024 blocks made %d requests", n)
	}
	// Through a cache a quarter of the object: read-ahead goes on once
	// the cache is full.
	f = newFake(4 << 20)
	s = open(t, f, &Options{BlockSize: 4096, MaxRequest: 256 << 10, CacheBytes: 1 << 20, TailBytes: 4096})
	for off := int64(0); off < 4<<20; off += 16 << 10 {
		readBack(t, s, f, off, 16<<10)
	}
	if n := f.count(); n > 80 {
		t.Errorf("a sequential read of 1,024 blocks through a cache of 256 made %d requests", n)
	}
}

func TestConcurrentReadersShareOneFetch(t *testing.T) {
	f := newFake(1 << 20)
	f.gate = make(chan struct{})
	s := open(t, f, nil)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { readBack(t, s, f, 10000, 100) })
	}
	time.Sleep(20 * time.Millisecond) // let them all wait (the count below holds either way)
	close(f.gate)
	wg.Wait()
	if n := f.count(); n != 1 {
		t.Errorf("16 readers of one block made %d fetches", n)
	}
}

func TestRetriesAndFailures(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, nil)
	var left atomic.Int32
	left.Store(2)
	f.fail = func(off, n int64) error {
		if left.Add(-1) >= 0 {
			return errors.New("fake: 503 Slow Down")
		}
		return nil
	}
	readBack(t, s, f, 5000, 10)
	if n := f.count(); n != 3 {
		t.Errorf("%d fetches, want 2 failures and a success", n)
	}
	// A permanent error is not retried, and is not cached: the next read
	// asks again.
	f.fail = func(off, n int64) error { return Permanent(errors.New("fake: 403 Forbidden")) }
	before := f.count()
	if _, err := s.ReadAt(make([]byte, 10), 300000); err == nil || !bytes.Contains([]byte(err.Error()), []byte("403")) {
		t.Errorf("permanent failure: %v", err)
	}
	if n := f.count() - before; n != 1 {
		t.Errorf("a permanent failure made %d fetches", n)
	}
	f.fail = nil
	readBack(t, s, f, 300000, 10)
	// Retries run out.
	f.fail = func(off, n int64) error { return errors.New("fake: connection reset") }
	before = f.count()
	if _, err := s.ReadAt(make([]byte, 10), 600000); err == nil {
		t.Error("read succeeded when every request failed")
	}
	if n := f.count() - before; n != 1+DefaultRetries {
		t.Errorf("%d fetches, want %d", n, 1+DefaultRetries)
	}
}

// shortBody ends after k bytes, as a reset connection does.
type shortBody struct {
	r io.ReadCloser
	k int
}

func (b *shortBody) Read(p []byte) (int, error) {
	if b.k <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	p = p[:min(len(p), b.k)]
	n, err := b.r.Read(p)
	b.k -= n
	return n, err
}
func (b *shortBody) Close() error { return b.r.Close() }

func TestBrokenBodiesResumeWhereTheyStopped(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, &Options{BlockSize: 4096, MaxRequest: 64 << 10, TailBytes: 4096, Backoff: time.Millisecond})
	var calls atomic.Int32
	f.body = func(rc io.ReadCloser) io.ReadCloser {
		if calls.Add(1) == 1 {
			return &shortBody{r: rc, k: 10000} // two blocks and a bit
		}
		return rc
	}
	readBack(t, s, f, 0, 64<<10)
	if len(f.fetches) != 2 || f.fetches[1][0] != 8192 {
		t.Errorf("fetches %v: want the second to start at the first incomplete block (8192)", f.fetches)
	}
}

// stuckBody sends nothing until closed.
type stuckBody struct{ closed chan struct{} }

func (b *stuckBody) Read(p []byte) (int, error) {
	<-b.closed
	return 0, errors.New("closed")
}
func (b *stuckBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return nil
}

func TestStalledRequestIsRetried(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, &Options{BlockSize: 4096, TailBytes: 4096, Backoff: time.Millisecond, StallTimeout: 50 * time.Millisecond})
	var calls atomic.Int32
	f.body = func(rc io.ReadCloser) io.ReadCloser {
		if calls.Add(1) == 1 {
			return &stuckBody{closed: make(chan struct{})}
		}
		return rc
	}
	readBack(t, s, f, 70000, 100)
	if n := f.count(); n != 2 {
		t.Errorf("%d fetches, want a stalled one and a good one", n)
	}
}

func TestChangedObject(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, nil)
	readBack(t, s, f, 0, 10000)
	f.mu.Lock()
	f.etag = `"v2"`
	f.mu.Unlock()
	if _, err := s.ReadAt(make([]byte, 10), 500000); !errors.Is(err, source.ErrChanged) {
		t.Fatalf("read after the object changed: %v", err)
	}
	before := f.count()
	if _, err := s.ReadAt(make([]byte, 10), 700000); !errors.Is(err, source.ErrChanged) {
		t.Errorf("second read after the change: %v", err)
	}
	if f.count() != before {
		t.Error("a read after a change was found made a request")
	}
	readBack(t, s, f, 0, 10000) // bytes fetched before the change still read
}

func TestCacheStaysInItsBudget(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, &Options{BlockSize: 4096, CacheBytes: 64 << 10, TailBytes: 4096})
	for off := int64(0); off < 1<<20; off += 3000 {
		readBack(t, s, f, off, 3000)
	}
	// A read returns once its own blocks are in; its read-ahead is still
	// completing, and a block is counted before the cache pushes an
	// older one out. The bound is on what stays.
	s.wg.Wait()
	s.mu.Lock()
	used, n := s.used, len(s.blocks)
	s.mu.Unlock()
	if used > 64<<10 || n > 16 {
		t.Errorf("cache holds %d bytes in %d blocks, budget 64 KiB", used, n)
	}
}

func TestPrefetchMergesRanges(t *testing.T) {
	f := newFake(8 << 20)
	s := open(t, f, nil)
	var rs []source.Range
	for off := int64(0); off < 200000; off += 30000 {
		rs = append(rs, source.Range{Off: off, Len: 100})
	}
	rs = append(rs, source.Range{Off: 5000000, Len: 100})
	s.Prefetch(context.Background(), rs)
	for _, r := range rs {
		readBack(t, s, f, r.Off, r.Len)
	}
	if n := f.count(); n != 2 {
		t.Errorf("prefetching ranges in two runs (gaps under 1 MiB fetched) made %d requests: %v", n, f.fetches)
	}
}

func TestCancelledReadReturns(t *testing.T) {
	f := newFake(1 << 20)
	f.gate = make(chan struct{})
	s := open(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.ReadAtContext(ctx, make([]byte, 10), 50000)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
	close(f.gate)
	readBack(t, s, f, 50000, 10)
}

func TestOpenFailures(t *testing.T) {
	f := newFake(100)
	s := open(t, f, nil)
	readBack(t, s, f, 0, 200)
	if s.Identity() == "" || s.Size() != 100 {
		t.Errorf("identity %q, size %d", s.Identity(), s.Size())
	}
	bad := &badTail{}
	if _, err := Open(context.Background(), bad, &Options{Backoff: time.Millisecond}); err == nil || bad.calls != 1 {
		t.Errorf("permanent tail failure: %v after %d calls", err, bad.calls)
	}
}

type badTail struct{ calls int }

func (b *badTail) String() string { return "bad://x" }
func (b *badTail) Tail(ctx context.Context, n int64) (Object, []byte, error) {
	b.calls++
	return Object{}, nil, Permanent(errors.New("bad://x: not found (HTTP 404)"))
}
func (b *badTail) Fetch(context.Context, Object, int64, int64) (io.ReadCloser, error) {
	return nil, errors.New("unused")
}

// TestReadsIntoTheTailFetchOnlyWhatPrecedesIt: a read that starts before
// the tail fetched at Open and runs into it fetches only the blocks
// before the tail.
func TestReadsIntoTheTailFetchOnlyWhatPrecedesIt(t *testing.T) {
	f := newFake(64 << 10)
	s := open(t, f, nil) // 4 KiB blocks, 8 KiB tail
	readBack(t, s, f, 40<<10, 24<<10)
	if got := s.BytesFetched() - 8192; got != 16<<10 {
		t.Fatalf("fetched %d bytes for the 16 KiB before the tail", got)
	}
}

// TestStats: a source counts its requests, retries, bytes and block hits
// and misses as reads go.
func TestStats(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, nil)
	if st := s.Stats(); st.Requests != 1 || st.BytesFetched != 8192 || st.BlockHits+st.BlockMisses+st.Retries != 0 {
		t.Fatalf("after Open: %+v, want the tail's request alone", st)
	}
	readBack(t, s, f, 0, 10)     // block 0: a miss
	readBack(t, s, f, 100, 10)   // block 0 again: a hit
	readBack(t, s, f, 4000, 200) // blocks 0 and 1: a hit and a miss
	var left atomic.Int32
	left.Store(1)
	f.fail = func(off, n int64) error {
		if left.Add(-1) >= 0 {
			return errors.New("fake: 503 Slow Down")
		}
		return nil
	}
	readBack(t, s, f, 500000, 10) // a miss, fetched on the second try
	st := s.Stats()
	if st.BlockMisses != 3 || st.BlockHits != 2 || st.Retries != 1 || st.Requests != 1+int64(f.count()) || st.BytesFetched != 8192+3*4096 || st.CachedBytes != 8192+3*4096 {
		t.Errorf("stats %+v, fetches %d", st, f.count())
	}
}

// TestSharedCacheBoundsSources: sources sharing a Cache keep their
// blocks, their tails' whole blocks among them, within its bound
// together, the least recently used of any going first; every byte reads
// right, and a source closed gives its blocks back.
func TestSharedCacheBoundsSources(t *testing.T) {
	c := NewCache(64 << 10) // 16 blocks of 4 KiB
	var fakes []*fake
	var srcs []*Source
	for i := range 3 {
		f := newFake((256 << 10) * (i + 1))
		fakes = append(fakes, f)
		srcs = append(srcs, open(t, f, &Options{BlockSize: 4096, TailBytes: 10000, Cache: c, Backoff: time.Millisecond, StallTimeout: time.Second}))
	}
	if used := c.Used(); used != 3*8192 {
		t.Errorf("after three opens the cache holds %d bytes, want their tails' two whole blocks each", used)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		i := r.IntN(3)
		off := r.Int64N(int64(len(fakes[i].data)))
		readBack(t, srcs[i], fakes[i], off, 1+r.Int64N(9000))
		if used := c.Used(); used > c.Max() {
			t.Fatalf("the cache holds %d bytes, more than its %d", used, c.Max())
		}
	}
	var sum int64
	for _, s := range srcs {
		sum += s.Stats().CachedBytes
	}
	if sum != c.Used() {
		t.Errorf("the sources hold %d bytes, the cache %d", sum, c.Used())
	}
	// The tail's bytes before its first block boundary read without a
	// request, even once its blocks went.
	before := fakes[0].count()
	readBack(t, srcs[0], fakes[0], int64(len(fakes[0].data))-10000, 100)
	if fakes[0].count() != before {
		t.Error("a read of the tail fetched")
	}
	left := c.Used() - srcs[1].Stats().CachedBytes
	srcs[1].Close()
	if c.Used() != left {
		t.Errorf("after Close the cache holds %d bytes, want %d", c.Used(), left)
	}
}

// cachedSource opens an object of 1 MiB in blocks of 4 KiB cached in c,
// and reads its first n bytes.
func cachedSource(t *testing.T, c *Cache, n int64) (*fake, *Source) {
	t.Helper()
	f := newFake(1 << 20)
	s := open(t, f, &Options{BlockSize: 4096, TailBytes: 4096, Cache: c, Backoff: time.Millisecond, StallTimeout: time.Second})
	readBack(t, s, f, 0, n)
	s.wg.Wait() // and its read-ahead
	return f, s
}

// TestCacheSetMax: a cache's bound lowered pushes the least recently
// used blocks out of their sources at once; reads go on right, within the
// new bound.
func TestCacheSetMax(t *testing.T) {
	c := NewCache(256 << 10)
	f, s := cachedSource(t, c, 200<<10)
	c.SetMax(16 << 10)
	if c.Used() > 16<<10 || s.Stats().CachedBytes != c.Used() || c.Max() != 16<<10 {
		t.Errorf("after SetMax(16 KiB): the cache holds %d bytes, the source %d", c.Used(), s.Stats().CachedBytes)
	}
	for off := int64(0); off < 1<<20; off += 50 << 10 {
		readBack(t, s, f, off, 9000)
	}
	s.wg.Wait()
	if c.Used() > 16<<10 {
		t.Errorf("the cache holds %d bytes, more than its %d", c.Used(), c.Max())
	}
}

// TestReadAheadStopsAtTheReadLimit: a sequential reader whose reads carry
// a source.ReadLimit (a member's end) has nothing fetched past it.
func TestReadAheadStopsAtTheReadLimit(t *testing.T) {
	f := newFake(1 << 20)
	s := open(t, f, &Options{BlockSize: 4096, TailBytes: 4096, Backoff: time.Millisecond, StallTimeout: time.Second})
	limit := int64(100 << 10)
	ctx := source.WithReadLimit(context.Background(), limit)
	p := make([]byte, 4096)
	for off := int64(0); off < limit; off += 4096 {
		if _, err := s.ReadAtContext(ctx, p, off); err != nil || !bytes.Equal(p, f.data[off:off+4096]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	s.Close() // waits for fetches in flight
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fe := range f.fetches {
		if fe[0]+fe[1] > limit {
			t.Errorf("fetched bytes %d-%d, past the limit %d", fe[0], fe[0]+fe[1], limit)
		}
	}
	if len(f.fetches) >= 25 {
		t.Errorf("%d fetches for 25 blocks read in order: no read-ahead", len(f.fetches))
	}
}

// fakeHead is a fake that can fetch its object's first bytes.
type fakeHead struct{ *fake }

func (f fakeHead) Head(ctx context.Context, n int64) (Object, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Object{Size: int64(len(f.data)), ETag: f.etag}, bytes.Clone(f.data[:min(n, int64(len(f.data)))]), nil
}

// TestOpenWithTheHead: with Options.Head a source's first request is for
// the object's first bytes, which then read without a request (those in
// a partial block too); the rest is fetched as ever.
func TestOpenWithTheHead(t *testing.T) {
	for _, tc := range []struct{ size, head int64 }{{1 << 20, 10000}, {1 << 20, 8192}, {6000, 10000}} {
		f := newFake(int(tc.size))
		s := openBackend(t, fakeHead{f}, &Options{BlockSize: 4096, TailBytes: tc.head, Head: true, Backoff: time.Millisecond, StallTimeout: time.Second})
		readBack(t, s, f, 0, min(tc.head, tc.size))
		if n := f.count(); n != 0 {
			t.Errorf("%+v: reading the head fetched %d times", tc, n)
		}
		readBack(t, s, f, tc.size-100, 100)
		readBack(t, s, f, tc.head/2, 5000)
	}
}
