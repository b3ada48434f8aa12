package remote

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/source"
)

// Defaults of Options.
const (
	DefaultBlockSize    = 256 << 10
	DefaultCacheBytes   = 256 << 20
	DefaultMaxRequest   = 16 << 20
	DefaultMaxReadAhead = 64 << 20
	DefaultRequests     = 8
	DefaultTailBytes    = 4 << 20
	DefaultRetries      = 5
	DefaultBackoff      = 200 * time.Millisecond
	DefaultStallTimeout = 20 * time.Second
	DefaultReadTimeout  = 2 * time.Minute
)

// Options tune a Source; the zero value of each field means its default.
type Options struct {
	// BlockSize is the unit of fetching and caching: a random 4 KiB read
	// fetches one block.
	BlockSize int64
	// CacheBytes bounds the blocks kept in memory; the least recently
	// used go first.
	CacheBytes int64
	// MaxRequest bounds one request: adjacent missing blocks are fetched
	// together up to it.
	MaxRequest int64
	// MaxReadAhead is the largest window fetched ahead of a sequential
	// reader (it starts at 4 blocks and doubles); at most a quarter of
	// CacheBytes.
	MaxReadAhead int64
	// Requests bounds the requests in flight.
	Requests int
	// TailBytes is what Open fetches from the end of the object, in one
	// request: the end records and, for most archives, the whole central
	// directory.
	TailBytes int64
	// Head has Open fetch the object's first TailBytes instead, when the
	// backend can (HeadReader): for an object read from its start (a
	// sidecar, whose first index may be the one wanted).
	Head bool
	// Retries is how many times a failed request is tried again (a 5xx,
	// a throttling answer, a reset connection, a short body, a stall),
	// after a jittered backoff that starts at Backoff and doubles; a
	// negative value means none.
	Retries int
	Backoff time.Duration
	// StallTimeout is how long a request may go without a byte before it
	// is abandoned and tried again.
	StallTimeout time.Duration
	// ReadTimeout bounds a fetch, its retries included.
	ReadTimeout time.Duration
	// Cache, when set, holds the fetched blocks in place of a cache of
	// the source's own of CacheBytes, shared with other sources (whose
	// budget it is); CacheBytes still bounds read-ahead.
	Cache *Cache
	// Disk, when set, keeps fetched blocks on disk too, for this source
	// and later ones of the same object. It is not used for an object
	// with no ETag, version or modification time, whose changes could
	// not be told.
	Disk *DiskCache
	// Logf, when set, receives retries and failures.
	Logf func(format string, args ...any)
}

func (o *Options) withDefaults() Options {
	var d Options
	if o != nil {
		d = *o
	}
	set := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&d.BlockSize, DefaultBlockSize)
	set(&d.CacheBytes, DefaultCacheBytes)
	set(&d.MaxRequest, DefaultMaxRequest)
	set(&d.MaxReadAhead, DefaultMaxReadAhead)
	set(&d.TailBytes, DefaultTailBytes)
	d.MaxRequest = max(d.MaxRequest, d.BlockSize)
	d.MaxReadAhead = min(d.MaxReadAhead, d.CacheBytes/4)
	if d.Requests <= 0 {
		d.Requests = DefaultRequests
	}
	switch {
	case d.Retries < 0:
		d.Retries = 0
	case d.Retries == 0:
		d.Retries = DefaultRetries
	}
	if d.Backoff <= 0 {
		d.Backoff = DefaultBackoff
	}
	if d.StallTimeout <= 0 {
		d.StallTimeout = DefaultStallTimeout
	}
	if d.ReadTimeout <= 0 {
		d.ReadTimeout = DefaultReadTimeout
	}
	return d
}

// Source is a remote object read through a block cache. It implements
// io.ReaderAt and the optional interfaces of package source that apply
// (ContextReaderAt, Identifier, ModTimer, Prefetcher). It is safe for
// concurrent use.
type Source struct {
	b    Backend
	obj  Object
	opts Options

	// tail is the object's bytes [tailOff, tailEnd), fetched at Open:
	// what its last bytes held before the first block boundary in them
	// (the blocks after it went to the cache).
	tail             []byte
	tailOff, tailEnd int64

	diskKey string // the object's folder in opts.Disk, or "" for none

	bg     context.Context // fetches run under it: Close cancels it
	cancel context.CancelFunc
	sem    chan struct{}  // a slot per request in flight
	wg     sync.WaitGroup // fetches running

	n     counts
	cache *Cache // the blocks' budget: opts.Cache, or the source's own
	group *Group // the group the source is one of, or nil

	mu      sync.Mutex
	blocks  map[int64]*block // cached and in flight
	used    int64            // bytes of cached blocks
	changed error            // set once the object is found changed
	streams [8]stream        // recent sequential readers (read-ahead)
	clock   uint64
}

// block is BlockSize bytes of the object (fewer at its end), cached or in
// flight. done is closed when data or err is set.
type block struct {
	src  *Source
	idx  int64
	data []byte
	err  error
	done chan struct{}
	elem *list.Element // in the Cache's list while cached (its lock guards it)
}

// stream is a reader going forwards: next is where its next read is
// expected, ahead how far read-ahead has been asked for.
type stream struct {
	start, next, ahead, window int64
	used                       uint64
}

// Open fetches the tail of b's object and returns a Source over it. The
// error says what is wrong in one line (not found, access denied, a
// server that ignores ranges, a connection refused), naming the object
// as b.String does. The fetch keeps the stall rule and gives up after
// ReadTimeout, its retries included, or when ctx ends.
func Open(ctx context.Context, b Backend, opts *Options) (*Source, error) {
	s := &Source{b: b, opts: opts.withDefaults(), blocks: make(map[int64]*block)}
	ctx, cancel := context.WithTimeout(WithStallTimeout(ctx, s.opts.StallTimeout), s.opts.ReadTimeout)
	defer cancel()
	s.cache = s.opts.Cache
	if s.cache == nil {
		s.cache = NewCache(s.opts.CacheBytes)
	}
	s.sem = make(chan struct{}, s.opts.Requests)
	first, what, which := b.Tail, "the end of the archive", "last"
	h, head := b.(HeadReader)
	if head = head && s.opts.Head; head {
		first, what, which = h.Head, "the start of the object", "first"
	}
	var edge []byte
	err := retry(ctx, &s.opts, s.b, what, &s.n.retries, func(ctx context.Context) error {
		s.n.requests.Add(1)
		obj, t, err := first(ctx, s.opts.TailBytes)
		if err == nil && (int64(len(t)) > obj.Size || int64(len(t)) != min(s.opts.TailBytes, obj.Size)) {
			err = fmt.Errorf("%s: the server sent %d bytes for the %s %d of a %d-byte object", b, len(t), which, min(s.opts.TailBytes, obj.Size), obj.Size)
		}
		s.obj, edge = obj, t
		return err
	})
	if err != nil {
		return nil, err
	}
	s.n.fetched.Add(int64(len(edge)))
	if head {
		s.keep(0, edge)
	} else {
		s.keep(s.obj.Size-int64(len(edge)), edge)
	}
	if s.opts.Disk != nil {
		if s.obj.ETag == "" && s.obj.Version == "" && s.obj.LastModified.IsZero() {
			s.logf("%s: the server gives no ETag or Last-Modified: the disk cache is not used", b)
		} else {
			s.diskKey = diskKey(s.Identity(), s.opts.BlockSize)
		}
	}
	s.bg, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// keep keeps bytes [off, off+len(data)) of the object, fetched at Open
// (its first or its last bytes): those in whole blocks (the object's
// last, shorter block too) as cached blocks, each a copy so that each
// can go on its own; the bytes at either end that fill no whole block as
// the source's own range [tailOff, tailEnd), kept while the source is.
func (s *Source) keep(off int64, data []byte) {
	size, bs := s.obj.Size, s.opts.BlockSize
	end := off + int64(len(data))
	first, last := (off+bs-1)/bs, end/bs // whole blocks: first to last-1
	if end == size {
		last = (size + bs - 1) / bs
	}
	switch {
	case first*bs > off: // the last bytes, from inside a block
		s.tailOff, s.tailEnd = off, min(first*bs, end)
	case last*bs < end: // the first bytes, to inside a block
		s.tailOff, s.tailEnd = last*bs, end
	default:
		s.tailOff, s.tailEnd = size, size
	}
	if s.tailEnd > s.tailOff {
		s.tail = bytes.Clone(data[s.tailOff-off : s.tailEnd-off])
	}
	for i := first; i < last; i++ {
		data := bytes.Clone(data[i*bs-off : min((i+1)*bs, size)-off])
		b := &block{src: s, idx: i, data: data, done: make(chan struct{})}
		close(b.done)
		s.mu.Lock()
		s.blocks[i] = b
		s.used += int64(len(data))
		s.mu.Unlock()
		forget(s.cache.add(b))
	}
}

// Close stops fetching and returns once no fetch runs, and gives the
// cache back its blocks; reads after it fail.
func (s *Source) Close() error {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	bs := make([]*block, 0, len(s.blocks))
	for _, b := range s.blocks {
		bs = append(bs, b)
	}
	clear(s.blocks)
	s.used = 0
	s.mu.Unlock()
	s.cache.remove(bs)
	if s.group != nil {
		s.group.closed(s)
	}
	return nil
}

// Size is the object's size.
func (s *Source) Size() int64 { return s.obj.Size }

// Object is what the object was when opened.
func (s *Source) Object() Object { return s.obj }

// Identity implements source.Identifier.
func (s *Source) Identity() string { return s.b.String() + " " + s.obj.Identity() }

// ModTime implements source.ModTimer.
func (s *Source) ModTime() time.Time { return s.obj.LastModified }

// String names the object, with no credential or signed query string.
func (s *Source) String() string { return s.b.String() }

// Stats are counts of what a Source did since it was opened.
type Stats struct {
	Requests     int64 // requests made, retries included
	Retries      int64 // requests made again after a failure
	BytesFetched int64 // bytes received from the server
	BlockHits    int64 // blocks reads found in memory (cached or in flight)
	BlockMisses  int64 // blocks reads had to ask for
	DiskHits     int64 // blocks of those the disk cache gave
	CachedBytes  int64 // bytes of blocks in memory now
	DiskBytes    int64 // bytes of blocks on disk now (a Group's, with a DiskCache)
}

// Stats reports what the source did so far.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	used := s.used
	s.mu.Unlock()
	st := s.n.stats()
	st.CachedBytes = used
	return st
}

// counts are what a source did, counted as it goes.
type counts struct {
	requests atomic.Int64 // made, retries included
	retries  atomic.Int64 // requests made again after a failure
	fetched  atomic.Int64 // bytes received
	hits     atomic.Int64 // blocks a read found cached or in flight
	misses   atomic.Int64 // blocks a read had to ask for
	diskHits atomic.Int64 // blocks the disk cache gave
}

func (n *counts) stats() Stats {
	return Stats{
		Requests: n.requests.Load(), Retries: n.retries.Load(), BytesFetched: n.fetched.Load(),
		BlockHits: n.hits.Load(), BlockMisses: n.misses.Load(), DiskHits: n.diskHits.Load(),
	}
}

// add adds o's counts to st's (but CachedBytes, a level, not a count).
func (st Stats) add(o Stats) Stats {
	st.Requests += o.Requests
	st.Retries += o.Retries
	st.BytesFetched += o.BytesFetched
	st.BlockHits += o.BlockHits
	st.BlockMisses += o.BlockMisses
	st.DiskHits += o.DiskHits
	return st
}

// Requests is how many requests the source has made, retries included.
func (s *Source) Requests() int64 { return s.n.requests.Load() }

// BytesFetched is how many bytes of the object have been received.
func (s *Source) BytesFetched() int64 { return s.n.fetched.Load() }

// ReadAt implements io.ReaderAt.
func (s *Source) ReadAt(p []byte, off int64) (int, error) {
	return s.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext implements source.ContextReaderAt: it returns when the
// bytes are there, or when ctx is done (the fetch goes on, for whoever
// else waits for it, and its bytes are cached).
func (s *Source) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", s.b, off)
	}
	if off >= s.obj.Size {
		return 0, io.EOF
	}
	want := p[:min(int64(len(p)), s.obj.Size-off)]
	var eof error
	if len(want) < len(p) {
		eof = io.EOF
	}
	if len(want) == 0 {
		return 0, eof
	}
	// What the tail holds is not fetched again (the central directory
	// of a large archive starts before it and runs on into it).
	n := 0
	for n < len(want) {
		pos := off + int64(n)
		if pos >= s.tailOff && pos < s.tailEnd {
			n += copy(want[n:], s.tail[pos-s.tailOff:])
			continue
		}
		stop := off + int64(len(want))
		if pos < s.tailOff {
			stop = min(stop, s.tailOff)
		}
		k, err := s.readBlocks(ctx, want[n:stop-off], pos)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, eof
}

// readBlocks reads p at off from blocks, fetching those missing.
func (s *Source) readBlocks(ctx context.Context, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	bs := s.opts.BlockSize
	first, last := off/bs, (end-1)/bs
	limit, ok := source.ReadLimit(ctx)
	if !ok {
		limit = s.obj.Size
	}
	raFrom, raTo := s.readAhead(off, end, limit)
	blocks, err := s.get(first, last, raFrom, raTo)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range blocks {
		select {
		case <-b.done:
		case <-ctx.Done():
			return n, ctx.Err()
		}
		if b.err != nil {
			return n, b.err
		}
		start := max(off, b.idx*bs)
		n += copy(p[start-off:], b.data[start-b.idx*bs:])
	}
	if n < len(p) {
		return n, fmt.Errorf("%s: %w", s.b, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// prefetchGap is the largest gap between wanted blocks that Prefetch
// fetches rather than skips: on a link of 100 MB/s with 20 ms a request,
// 1 MiB costs half a request.
const prefetchGap = 1 << 20

// Prefetch implements source.Prefetcher: the missing blocks of the ranges
// are fetched in the background, adjacent ones (and ones at most 1 MiB
// apart, the gap included) in one request.
func (s *Source) Prefetch(ctx context.Context, ranges []source.Range) {
	bs := s.opts.BlockSize
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil || s.bg.Err() != nil {
		return
	}
	var idx []int64
	for _, r := range ranges {
		if r.Len <= 0 || r.Off < 0 {
			continue
		}
		end := min(r.Off+r.Len, s.obj.Size)
		for i := r.Off / bs; i <= (end-1)/bs && i*bs < end; i++ {
			if from, to := max(i*bs, r.Off), min((i+1)*bs, end); from >= s.tailOff && to <= s.tailEnd {
				continue // what is wanted of it, the tail holds
			}
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	gap := max(prefetchGap/bs, 1)
	var want []int64
	for j, i := range idx {
		if j > 0 && i-idx[j-1] <= gap {
			for k := idx[j-1] + 1; k < i; k++ {
				want = append(want, k)
			}
		}
		want = append(want, i)
	}
	want = slices.DeleteFunc(want, func(i int64) bool { return s.blocks[i] != nil })
	s.startLocked(sortedRuns(want))
}

// readAhead notes a read of [off, end) and returns the blocks past last
// to fetch ahead of it: none for a random reader; for a sequential one,
// once it has read 4 blocks in a row, a window that doubles, up to
// MaxReadAhead, and never past limit (the read's source.ReadLimit: the
// end of what it reads).
func (s *Source) readAhead(off, end, limit int64) (from, to int64) {
	bs := s.opts.BlockSize
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	oldest := 0
	for i := range s.streams {
		st := &s.streams[i]
		if st.used == 0 || off < st.next-2*bs || off > st.next+2*bs {
			continue
		}
		st.used = s.clock
		if end <= st.next {
			return 0, 0 // read again, or out of order: no further
		}
		st.next = end
		if st.next-st.start < 4*bs {
			// Not yet: a reader of a header, then of one element far
			// away, must not fetch what follows the header.
			return 0, 0
		}
		st.window = min(max(2*st.window, 4*bs), s.opts.MaxReadAhead)
		// Ask for more only when less than half the window is left
		// ahead, so read-ahead goes out in large requests.
		if st.ahead-st.next >= st.window/2 {
			return 0, 0
		}
		lo := max(st.ahead, st.next)
		hi := min(st.next+st.window, limit, s.obj.Size)
		if hi <= lo {
			return 0, 0
		}
		st.ahead = hi
		return lo, hi
	}
	for i := range s.streams {
		if s.streams[i].used < s.streams[oldest].used {
			oldest = i
		}
	}
	s.streams[oldest] = stream{start: off, next: end, ahead: end, used: s.clock}
	return 0, 0
}
