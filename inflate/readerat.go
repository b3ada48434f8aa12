package inflate

import (
	"cmp"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/source"
)

const defaultSpan = 1 << 20

// Options tune a ReaderAt. The zero value is the default.
type Options struct {
	// SpanSize is the output distance between checkpoints; 0 means 1 MiB.
	SpanSize int64
	// Cache holds inflated spans, shared by every ReaderAt given it; nil
	// means a small private cache.
	Cache *Cache
	// Windows bounds the memory the checkpoints' windows take, shared by
	// every ReaderAt given it; nil means no bound (see WindowBudget).
	Windows *WindowBudget
	// Index, when set, is where the reader finds the index saved for its
	// stream, at the first read its own index does not cover (see
	// IndexSource, and Progress for what became of it).
	Index IndexSource
	// Helpers, when above 0, is how many goroutines may help a fresh
	// index grow when a read waits far past it (see help.go), places in
	// the HelperBudget allowing.
	Helpers int
	// HelperBudget bounds the goroutines that inflate besides the
	// reads, shared by every ReaderAt given it; nil means the process's
	// (DefaultHelperBudget).
	HelperBudget *HelperBudget

	test *testHooks // set by tests alone
}

// ReaderAt is random access into one raw DEFLATE stream of compressedSize
// bytes at the start of src, which must inflate to exactly size bytes with
// the given CRC-32. It is safe for concurrent use.
//
// The index of checkpoints grows lazily: a read at offset X first inflates
// sequentially from the last checkpoint to X (one goroutine at a time),
// recording a checkpoint every SpanSize bytes. A read inside the indexed
// part inflates at most one span per SpanSize of data it returns, from the
// checkpoint before it, unless the span is in the cache. A sequential
// reader at the frontier has the index extended a few spans ahead of it by
// a background goroutine, which caches those spans, so that inflating
// them overlaps with serving the reads; inside the index, the spans ahead
// of a sequential reader are inflated into the cache several at once, one
// a core, since they do not depend on each other. The first pass writes
// each checkpoint's window in packed form while the next span inflates.
//
// It is made of parts with one job and one lock each (see the package
// documentation): the index of checkpoints, the frontier that grows it,
// the spans cached, and the scheduler of read-ahead.
type ReaderAt struct {
	stream
	ix    index
	front frontier
	spans spanCache
	ahead scheduler
}

// Progress is what became of a reader's index, for a caller that keeps
// indexes: it looks after reads (the reader never calls it).
type Progress struct {
	// Indexed is how many bytes of output the index covers.
	Indexed int64
	// Complete: the index covers the whole stream, whose length and
	// CRC-32 were checked (MarshalIndex then succeeds).
	Complete bool
	// Loaded: the index was loaded whole from a saved one, and has
	// nothing the saved one does not.
	Loaded bool
	// Dropped is why a saved index was refused or discarded (see
	// ErrBadIndex); nil if none was.
	Dropped error
	// Chunks: the index is the stream's Chunks (Loaded too, never
	// Complete: it is not to be saved).
	Chunks bool
	// ChunksDropped is why Chunks were refused or dropped; nil if they
	// were not.
	ChunksDropped error
}

var readerIDs atomic.Uint64

// NewReaderAt builds the reader; nothing is read until the first ReadAt.
func NewReaderAt(src io.ReaderAt, compressedSize, size int64, crc uint32, opts *Options) *ReaderAt {
	var o Options
	if opts != nil {
		o = *opts
	}
	r := &ReaderAt{stream: stream{
		src:   src,
		csize: max(compressedSize, 0),
		size:  max(size, 0),
		crc:   crc,
		span:  cmp.Or(max(o.SpanSize, 0), defaultSpan),
		cache: o.Cache,
		id:    readerIDs.Add(1),
		hooks: o.test,
	}}
	if r.cache == nil {
		r.cache = NewCache(2 * r.spanCost())
	}
	// The background goroutines' context: Release ends it.
	bg, stop := context.WithCancel(context.Background())
	r.ix.init(o.Windows, o.test)
	r.spans.init(&r.stream)
	budget := cmp.Or(o.HelperBudget, &defaultHelpers)
	r.front.init(&r.stream, &r.ix, &r.spans, bg, stop, o.Index, o.Helpers, budget)
	r.ahead.init(&r.stream, &r.ix, &r.front, bg, stop, budget)
	return r
}

// Release gives back what the reader's index takes of its WindowBudget,
// for a reader that will not be read again (its archive closed), once its
// background goroutines have stopped (they are told to); it may still be
// read, but its index then counts toward no budget and grows no further
// ahead.
func (r *ReaderAt) Release() {
	r.ahead.halt()
	r.front.halt()
	r.ix.release()
}

// Size is the declared inflated size.
func (r *ReaderAt) Size() int64 { return r.size }

// IndexStats reports the checkpoints recorded so far and the bytes their
// stored windows take (including the unpacked window of the last one).
func (r *ReaderAt) IndexStats() (checkpoints int, windowBytes int64) { return r.ix.stats() }

// Indexed is how many bytes of output the index covers.
func (r *ReaderAt) Indexed() int64 { return r.ix.indexed(r.size) }

// Progress reports what became of the index: how far it reaches,
// whether it is complete, and what became of a saved one.
func (r *ReaderAt) Progress() Progress { return r.ix.progress(r.size) }

// IndexAll extends the index to the end of the stream, checking its
// length and CRC-32, in the calling goroutine (no read-ahead, no span
// kept in the cache), unless ctx ends first: what npzfs index and a
// mount's background indexing run. Reads of the stream go on meanwhile,
// each waiting for no more than the span being indexed.
func (r *ReaderAt) IndexAll(ctx context.Context) error { return r.IndexTo(ctx, r.size) }

// IndexTo is IndexAll as far as output offset off: it returns once the
// index covers off (the whole stream, for off at or past Size). An index
// made from Chunks covers the stream at once, and its length and CRC-32
// are checked for the whole stream as a read of its last span checks
// them (the spans not inflated yet are, in parallel: see Chunks); if
// the CRC-32 does not hold, the chunks are dropped and the stream
// indexed from its start.
func (r *ReaderAt) IndexTo(ctx context.Context, off int64) error {
	off = max(min(off, r.size-1), 0)
	for {
		err := r.front.extendFor(ctx, &outRange{start: off, end: off, background: true})
		if err != nil || off < r.size-1 {
			return err
		}
		if err := r.checkChunks(ctx); !errors.Is(err, ErrBadIndex) {
			return err
		}
	}
}

// ReadAt implements io.ReaderAt over the inflated bytes.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return r.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt for a read that ctx may cancel: it stops
// inflating (between spans, and in its reads of the compressed source when
// the source takes a context, see source.ContextReaderAt) once ctx is
// done, and returns ctx's error. The index stays consistent: what was
// indexed before the cancellation stays, and the next read goes on from
// there.
func (r *ReaderAt) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("inflate: negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	need := min(r.size, off+int64(len(p)))
	r.prefetch(r.ahead.noteRead(off, need))
	p = p[:need-off]
	n, err := r.readSpans(ctx, p, off, true)
	if err == nil && need == r.size {
		err = io.EOF
	}
	return n, err
}

// ReadCached reads len(p) bytes at off, as ReadAt does, if the cache
// holds every one of them now, and reports whether it did. It never
// inflates, waits for a span another read is inflating, or reads the
// source: a caller for whom blocking costs (a server reading requests)
// tries it before handing a read to a goroutine of its own. Only what
// ReadAt would serve from the cache as it is is read so: nothing past
// the index, nor from the last span before the index has reached the
// stream's end (see index.servedSpanOf). On false, p may hold some of
// the bytes.
func (r *ReaderAt) ReadCached(p []byte, off int64) (int, bool) {
	end := off + int64(len(p))
	if off < 0 || end > r.size {
		return 0, false
	}
	for pos := off; pos < end; {
		cp, spanEnd, ok := r.ix.servedSpanOf(pos, r.size)
		if !ok {
			return 0, false
		}
		s := r.cache.peek(cacheKey{r.spans.id, spanKey(&cp)}, min(end, spanEnd)-cp.out)
		if s == nil {
			return 0, false
		}
		pos += int64(copy(p[pos-off:], s.data[pos-cp.out:]))
		r.cache.release(s)
	}
	r.prefetch(r.ahead.noteRead(off, end)) // a sequential reader's, too
	return len(p), true
}

// readSpans reads p at off, all inside the stream, in order, a span at
// a time; with help, once the rest of it covers three spans or more
// that the index has, the spans after the first of those are inflated
// meanwhile (whole, into the cache, where its reads find them or wait
// for them), on as many goroutines as the HelperBudget has places for:
// indexed spans do not depend on one another, so a long read runs on
// every core the budget allows. (A read of two spans, as a sequential
// reader's crossing a span's end, is left to read-ahead.)
func (r *ReaderAt) readSpans(ctx context.Context, p []byte, off int64, help bool) (int, error) {
	n := 0
	end := off + int64(len(p))
	for n < len(p) {
		pos := off + int64(n)
		if starts := r.helpable(help, pos, end); starts != nil {
			if k := r.front.budget.take(len(starts) - 1); k > 0 {
				m, err := r.readHelped(ctx, p[n:], pos, starts, k)
				return n + m, err
			}
		}
		s, start, err := r.spanAt(ctx, pos, end)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], s.data[pos-start:])
		r.cache.release(s)
	}
	return n, nil
}

// helpable is, with help, the starts of the spans holding [off, end)
// when they are three or more that the index has; else nil.
func (r *ReaderAt) helpable(help bool, off, end int64) []int64 {
	if !help {
		return nil
	}
	return r.ix.spansIn(off, end, r.size, 3)
}

// readHelped is readSpans for p at off, whose spans start at starts,
// with k places of the HelperBudget taken for helpers, given back once
// they are done.
func (r *ReaderAt) readHelped(ctx context.Context, p []byte, off int64, starts []int64, k int) (int, error) {
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop() // the spans the read no longer needs
		wg.Wait()
		r.front.budget.give(k)
	}()
	wg.Go(func() {
		workers.Run(ctx, len(starts)-1, k, func(_, i int) {
			if s, _, err := r.spanAt(ctx, starts[i+1], r.size); err == nil {
				r.cache.release(s)
			}
		})
	})
	return r.readSpans(ctx, p, off, false)
}

// spanAt returns the span holding output offset off, or a prefix of it
// reaching need or the span's end, and where it starts. The caller holds
// the span and must release it.
//
// A span inflated for a read of part of it is inflated only as far as the
// read needs (halving the average cost of small random reads) and cached
// as such; a later read past that prefix inflates and caches the whole
// span, so reading a span in order costs little more than inflating it
// once.
func (r *ReaderAt) spanAt(ctx context.Context, off, need int64) (*span, int64, error) {
	for {
		if err := r.front.extendFor(ctx, &outRange{start: off, end: need}); err != nil {
			return nil, 0, err
		}
		cp, end, endBit := r.ix.spanOf(off, r.size, 8*r.csize)
		var err error
		if cp.chunk && end == r.size {
			err = r.checkChunks(ctx) // the stream's CRC-32, before its last span
		}
		var s *span
		var f *flight
		if err == nil {
			s, f, err = r.spans.get(ctx, spanKey(&cp), cp.out, min(need, end), cp.loaded)
		}
		if f != nil {
			target := min(need, end)
			if f.whole {
				target = end // checked against its CRC-32, or read again: whole
			}
			if cp.loaded {
				r.prefetchSpan(ctx, &cp, endBit)
			}
			s, err = r.fill(ctx, &cp, end, target, endBit)
			r.spans.land(f, s, err)
		}
		if errors.Is(err, ErrBadIndex) {
			continue // the loaded index is gone: look again
		}
		return s, cp.out, err
	}
}

// prefetchSpan tells a source.Prefetcher source the compressed bytes of
// the span from loaded checkpoint cp to endBit, before its window is
// read from the saved index: both may be far away (a remote archive and
// its sidecar), and are then fetched at once.
func (r *ReaderAt) prefetchSpan(ctx context.Context, cp *checkpoint, endBit int64) {
	p, ok := r.src.(source.Prefetcher)
	if !ok {
		return
	}
	from := cp.compStart()
	p.Prefetch(ctx, []source.Range{{Off: from >> 3, Len: (endBit+7)>>3 - from>>3}})
}

// fill inflates the span [cp.out, end), whose compressed bytes end at
// endBit, up to target for a read (a chunk's whole, its CRC-32 kept). A
// loaded span that fails is judged (see judge): the loaded index is
// discarded, or the stream found damaged from the span on, or the error
// (reading the source) passes.
func (r *ReaderAt) fill(ctx context.Context, cp *checkpoint, end, target, endBit int64) (*span, error) {
	var s *span
	var err error
	if cp.chunk {
		if s, err = r.inflateChunk(ctx, cp, end, endBit); err == nil {
			r.ix.chunkSum(cp, chunkCRC(s))
		}
	} else {
		var win []byte
		if win, err = r.ix.windowOf(ctx, cp); err == nil {
			s, err = r.inflateSpan(ctx, cp, win, end, target, nil)
		}
	}
	if err == nil || !cp.loaded || isCancel(err) || ctx.Err() != nil {
		return s, err
	}
	switch judge(cp, err) {
	case blameIndex:
		err = asBadIndex(cp, err)
		r.front.dropLoadedTurn(ctx, err, cp.chunk)
	case blameStream:
		err = damage(cp, end, err)
		r.ix.damaged(err, cp.out)
	}
	return nil, err
}

// prefetch inflates the indexed spans the scheduler says are due into
// the cache, each in a goroutine of its own, which then prefetches the
// spans due after it.
func (r *ReaderAt) prefetch(due spanStarts) {
	for _, off := range due.start[:due.n] {
		go func() {
			if s, _, err := r.spanAt(r.ahead.ctx, off, r.size); err == nil {
				r.cache.release(s)
			}
			r.prefetch(r.ahead.prefetched())
		}()
	}
}
