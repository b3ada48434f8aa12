package inflate

import (
	"context"
	"errors"
	"fmt"
	"github.com/npzfs/npzfs/source"
	"hash/crc32"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

const defaultSpan = 1 << 20

// maxAheadSpans is how far, in spans, readAhead inflates past the furthest
// read of a sequential reader: a few, so that it has work queued while the
// reader copies out what it inflated, without holding much of the cache.
const maxAheadSpans = 4

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
	// Complete, when set, is called once the index covers the whole
	// stream and its CRC-32 matched (see MarshalIndex), from the
	// goroutine that finished it.
	Complete func()
	// BadIndex, when set, is told why a loaded index was discarded.
	BadIndex func(error)
	// Load, when set, is asked once for a saved index (as MarshalIndex
	// wrote it: its bytes and size, kept readable while the reader is
	// used, see LoadIndex), at the first read the index does not cover;
	// it returns nil when there is none. An index that LoadIndex refuses
	// is told to BadIndex.
	Load func() (io.ReaderAt, int64)
	// Helpers, when above 0, is how many goroutines may help a fresh
	// index grow when a read waits far past it (see help.go).
	Helpers int
	// Grew, when set, is told how far the index reaches each time it
	// grows by a span (from the goroutine growing it, which holds the
	// index's lock: it must not read the reader).
	Grew func(indexed int64)
}

// checkpoint is a place decoding can resume from: the output offset, the
// decoder's state there, and the window before it.
type checkpoint struct {
	seq    int64 // the checkpoint's number, counting a span each from 0
	out    int64 // output offset
	bit    int64 // bit position of the next symbol, block header or stored byte
	block  int64 // bit position of the current Huffman block's header
	stored int32 // bytes left in the current stored block
	state  uint8
	final  bool
	winLen int32  // window bytes before out: min(32 KiB, out)
	win    []byte // packed window (see packWindow)
	// pend, while the window is packed in the background, stands for win
	// (see packLater).
	pend   *pendingWindow
	sum    uint32 // CRC-32 of the span's output, once it is indexed
	loaded bool   // from LoadIndex: its span is checked against sum
	// A loaded checkpoint's window stays in the index file until its
	// span is inflated: winSize bytes at winOff.
	winSize int32
	winOff  int64
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
type ReaderAt struct {
	src   io.ReaderAt
	csize int64
	size  int64
	crc   uint32
	span  int64
	cache *Cache
	id    uint64

	windows *WindowBudget // nil: unbounded
	stride  int64         // with windows: checkpoints kept are this many spans apart (see fitBudget)

	mu         sync.RWMutex
	cps        []checkpoint
	done       bool
	err        error // the stream's error, found inflating the span from errAt
	errAt      int64
	pendingWin []byte // unpacked window of the last checkpoint
	winBytes   int64
	released   bool // Release was called: windows no longer counts this index
	loaded     bool // the index came from LoadIndex (and has not been discarded)
	// frontierLoaded: the last checkpoint came from a partial index and
	// has no window yet (prepareFrontier makes it); loadedCPs is how many
	// checkpoints were loaded.
	frontierLoaded bool
	loadedCPs      int
	grew           func(int64)                 // Options.Grew
	complete       func()                      // Options.Complete
	badIndex       func(error)                 // Options.BadIndex
	load           func() (io.ReaderAt, int64) // Options.Load, until it is called (under extMu)
	indexSrc       io.ReaderAt                 // what a loaded index's windows are read from
	waiting        []*outRange                 // what the reads in extendTo want

	extMu   sync.Mutex // held while extending the index
	crcAcc  uint32     // CRC-32 of output up to the last checkpoint
	touched []bool
	extBuf  []byte // a buffer from cache.alloc that no span holds
	// Under extMu too: the window being packed in the background, and
	// the buffer its masked bytes are in (reused once it is packed).
	packing *pendingWindow
	packBuf []byte

	flightMu sync.Mutex
	flight   map[int64]*flightCall // by span start

	// Read-ahead (see noteRead). Lock order: extMu, aheadMu, mu.
	aheadMu     sync.Mutex
	seqEnd      int64      // end of the furthest read of the current sequential run
	seqRun      int64      // bytes the current sequential run has read in order
	aheading    bool       // a readAhead goroutine is running
	aheadSpans  int64      // how many spans readAhead may inflate past seqEnd
	aheadDone   *sync.Cond // on aheadMu: readAhead extended the index, or stopped
	aheadWG     sync.WaitGroup
	aheadCtx    context.Context // read-ahead's: Release cancels it
	stopAhead   context.CancelFunc
	aheadStarts atomic.Int64 // readAhead goroutines started, for tests
	// Inside the index, a sequential reader has the spans ahead of it
	// inflated into the cache, several at once (see prefetch).
	prefetchOK    bool         // the cache is large enough to prefetch into
	prefetching   int          // prefetch goroutines running
	prefetchNext  int64        // where the next prefetch starts
	prefetchCount atomic.Int64 // prefetches started, for tests

	// The parallel first pass: output it has indexed while it runs (for
	// Indexed), and whether it made the index (under mu).
	parallelDone atomic.Int64
	parallel     bool

	// Helpers for a deep first read (see help.go): how many, and their
	// work, under extMu; helpStarts and helpSplices count the times they
	// were started and their runs spliced in, for tests.
	helpers     int
	helpChunk   int64 // the least compressed length of a chunk (minChunk; tests make it less)
	help        *helping
	helpStarts  atomic.Int64
	helpSplices atomic.Int64
}

// outRange is a range [start, end) of output offsets a read wants
// (background: IndexAll's, which helpers do not help).
type outRange struct {
	start, end int64
	background bool
}

// flightCall is one inflation of a span that concurrent reads of it wait
// for rather than repeat.
type flightCall struct {
	wg      sync.WaitGroup
	waiters int // guarded by flightMu; each is given a hold on span
	span    *span
	err     error
}

var readerIDs atomic.Uint64

var decoders = sync.Pool{New: func() any { return newDecoder() }}

// Release gives back what the reader's index takes of its WindowBudget,
// for a reader that will not be read again (its archive closed), once its
// read-ahead has stopped (it is told to); it may still be read, but its
// index then counts toward no budget and grows no further ahead.
func (r *ReaderAt) Release() {
	r.aheadMu.Lock() // noteRead starts no read-ahead after this
	r.stopAhead()
	r.aheadMu.Unlock()
	r.aheadWG.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.windows != nil && !r.released {
		r.windows.used.Add(-r.winBytes)
	}
	r.released = true
}

// NewReaderAt builds the reader; nothing is read until the first ReadAt.
func NewReaderAt(src io.ReaderAt, compressedSize, size int64, crc uint32, opts *Options) *ReaderAt {
	r := &ReaderAt{src: src, csize: max(compressedSize, 0), size: max(size, 0), crc: crc, span: defaultSpan}
	if opts != nil {
		if opts.SpanSize > 0 {
			r.span = opts.SpanSize
		}
		r.cache = opts.Cache
		r.windows = opts.Windows
		r.complete, r.badIndex, r.load, r.grew = opts.Complete, opts.BadIndex, opts.Load, opts.Grew
		r.helpers = max(opts.Helpers, 0)
		r.helpChunk = minChunk
	}
	if r.cache == nil {
		r.cache = NewCache(2 * (r.span + windowSize + outSlack))
	}
	r.id = readerIDs.Add(1)
	r.aheadDone = sync.NewCond(&r.aheadMu)
	r.aheadCtx, r.stopAhead = context.WithCancel(context.Background())
	// Spans inflated ahead are cached until read: leave the cache at least
	// half of its budget for everything else.
	spans := r.cache.Budget() / (r.span + windowSize + outSlack)
	r.aheadSpans = min(maxAheadSpans, spans/2)
	// Prefetching holds its spans ahead and those in flight: in a cache
	// that cannot hold twice that, spans would be pushed out while reads
	// still use them, and their buffers made anew instead of recycled.
	r.prefetchOK = spans >= 2*(r.aheadSpans+int64(maxPrefetch))
	r.cps = []checkpoint{{state: stHeader}}
	r.flight = make(map[int64]*flightCall)
	return r
}

// Size is the declared inflated size.
func (r *ReaderAt) Size() int64 { return r.size }

// IndexStats reports the checkpoints recorded so far and the bytes their
// stored windows take (including the unpacked window of the last one).
func (r *ReaderAt) IndexStats() (checkpoints int, windowBytes int64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.cps), r.winBytes + int64(len(r.pendingWin))
}

// ReadAt implements io.ReaderAt over the inflated bytes.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return r.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt for a read that ctx may cancel: it stops
// inflating (between spans, and in its reads of the compressed source when
// the source takes a context, see ContextReaderAt) once ctx is done, and
// returns ctx's error. The index stays consistent: what was indexed before
// the cancellation stays, and the next read goes on from there.
func (r *ReaderAt) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("inflate: negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := 0
	need := min(r.size, off+int64(len(p)))
	r.noteRead(off, need)
	for n < len(p) && off+int64(n) < r.size {
		pos := off + int64(n)
		s, start, err := r.spanAt(ctx, pos, need)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], s.data[pos-start:])
		r.cache.release(s)
	}
	if off+int64(n) >= r.size {
		return n, io.EOF
	}
	return n, nil
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
	if err := r.extendTo(ctx, off, need); err != nil {
		return nil, 0, err
	}
	r.mu.RLock()
	k := sort.Search(len(r.cps), func(i int) bool { return r.cps[i].out > off }) - 1
	cp := r.cps[k]
	end := r.size
	if k+1 < len(r.cps) {
		end = r.cps[k+1].out
	}
	r.mu.RUnlock()
	need = min(need, end)
	key := cacheKey{r.id, cp.out}
	for {
		target := need
		if cp.loaded {
			target = end // checked against its CRC-32: whole
		}
		if s := r.cache.get(key); s != nil {
			if cp.out+int64(len(s.data)) >= need {
				return s, cp.out, nil
			}
			r.cache.release(s)
			target = end // a second read into this span: inflate all of it
		}
		r.flightMu.Lock()
		if c := r.flight[cp.out]; c != nil {
			c.waiters++
			r.flightMu.Unlock()
			c.wg.Wait()
			if c.err != nil && isCancel(c.err) && ctx.Err() == nil {
				continue // the read inflating it was cancelled, not this one
			}
			if errors.Is(c.err, ErrBadIndex) {
				return r.spanAt(ctx, off, need) // the loaded index is gone
			}
			if c.err != nil {
				return nil, 0, c.err
			}
			if cp.out+int64(len(c.span.data)) >= need {
				return c.span, cp.out, nil
			}
			r.cache.release(c.span)
			continue // it inflated less than this read needs
		}
		c := &flightCall{}
		c.wg.Add(1)
		r.flight[cp.out] = c
		r.flightMu.Unlock()

		c.span, c.err = r.inflateSpan(ctx, &cp, end, target, nil)
		if c.err != nil && cp.loaded && !isCancel(c.err) && ctx.Err() == nil {
			// Whatever went wrong, the loaded index said otherwise.
			if !errors.Is(c.err, ErrBadIndex) {
				c.err = fmt.Errorf("%w: span at %d: %w", ErrBadIndex, cp.out, c.err)
			}
			r.dropLoaded(c.err)
		}
		if c.err == nil {
			r.cache.put(key, c.span)
		}
		r.flightMu.Lock()
		delete(r.flight, cp.out) // no more waiters after this
		waiters := c.waiters
		r.flightMu.Unlock()
		if c.err == nil {
			r.cache.retain(c.span, waiters)
		}
		c.wg.Done()
		if errors.Is(c.err, ErrBadIndex) {
			return r.spanAt(ctx, off, need)
		}
		return c.span, cp.out, c.err
	}
}

// resume prepares d to decode from cp into buf, whose first cp.winLen
// bytes the caller has filled with the window.
func (r *ReaderAt) resume(ctx context.Context, d *decoder, cp *checkpoint, buf []byte) error {
	d.r, d.ra, d.raSize = nil, source.WithContext(ctx, r.src), r.csize
	d.out = buf
	d.pos = int(cp.winLen)
	d.minPos = 0
	d.trackEnd, d.stopBit = 0, 0
	d.bits, d.nb = 0, 0
	// What the checkpoint says of the current block, so that a decoder
	// from the pool carries nothing over into the next checkpoint (a
	// span that ends in the stored block it began in records its header).
	d.blockBit, d.stored, d.final = cp.block, int(cp.stored), cp.final
	switch cp.state {
	case stHeader:
		d.state = stHeader
		return d.seekBit(cp.bit, inBufSize)
	case stStored:
		d.state, d.stored, d.final = stStored, int(cp.stored), cp.final
		return d.seekBit(cp.bit, inBufSize)
	default:
		if err := d.seekBit(cp.block, smallFill); err != nil {
			return err
		}
		if err := d.readHeader(); err != nil {
			return err
		}
		if d.state != stHuff {
			return &CorruptError{Offset: cp.block >> 3, Msg: "checkpoint block is not a Huffman block"}
		}
		return d.seekBit(cp.bit, inBufSize)
	}
}

// inflateSpan inflates the indexed span [cp.out, end) as far as the
// first symbol boundary at or after target (end itself is one), into a
// span held for the caller.
//
// With check set, the decoder must end in check's state (its bit and
// block positions, block state), as when check was recorded: see
// prepareFrontier.
func (r *ReaderAt) inflateSpan(ctx context.Context, cp *checkpoint, end, target int64, check *checkpoint) (*span, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	w := int(cp.winLen)
	n := int(target - cp.out)
	buf := r.cache.alloc(w + n + outSlack)
	win, err := r.windowOf(cp)
	if err != nil {
		return nil, err
	}
	if err := unpackWindow(d, win, buf, w); err != nil {
		if cp.loaded {
			return nil, fmt.Errorf("%w: the window of the span at %d does not inflate", ErrBadIndex, cp.out)
		}
		return nil, err
	}
	if err := r.resume(ctx, d, cp, buf); err != nil {
		return nil, r.wrapDecodeErr(d, err, cp.out)
	}
	if err := d.decode(w + n); err != nil {
		return nil, r.wrapDecodeErr(d, err, cp.out+int64(d.pos-w))
	}
	got := d.pos - w
	if got < n || int64(got) > end-cp.out || (target == end && got != n) {
		return nil, &OffsetError{Offset: cp.out, Err: errors.New("inflate: span does not reproduce its indexed length (source changed?)")}
	}
	if cp.loaded && crc32.ChecksumIEEE(buf[w:w+got]) != cp.sum {
		r.cache.recycle(buf)
		return nil, fmt.Errorf("%w: the span at %d does not inflate to its CRC-32", ErrBadIndex, cp.out)
	}
	if check != nil && (uint8(d.state) != check.state || d.bitPos() != check.bit || d.blockBit != check.block || int32(storedLeft(d)) != check.stored || d.final != check.final) {
		r.cache.recycle(buf)
		return nil, fmt.Errorf("%w: the span at %d does not end where the next checkpoint says", ErrBadIndex, cp.out)
	}
	d.out = nil
	return newSpan(buf, buf[w:w+got:w+got]), nil
}

// storedLeft is what a checkpoint records of d's stored block: the bytes
// left in it, or 0 outside one (where d.stored is what an earlier block
// left, which depends on the decoder's history, not the stream's).
func storedLeft(d *decoder) int {
	if d.state == stStored {
		return d.stored
	}
	return 0
}

func (r *ReaderAt) wrapDecodeErr(d *decoder, err error, outOff int64) error {
	if err == io.ErrUnexpectedEOF {
		return &OffsetError{Offset: outOff, Err: &truncatedError{compOffset: d.bitPos() >> 3}}
	}
	return &OffsetError{Offset: outOff, Err: err}
}

// extendTo grows the index until it covers output offset off, for a read
// of [off, end), or until ctx is done.
//
// The index grows a span at a time, by whichever read (or readAhead)
// takes r.extMu; the others wait for the span to be done, then look
// again, so a read returns as soon as the index covers it, however much
// deeper other reads are going (no read waits behind a deeper one).
func (r *ReaderAt) extendTo(ctx context.Context, off, end int64) error {
	return r.extendFor(ctx, &outRange{start: off, end: end})
}

// extendFor is extendTo for want.
func (r *ReaderAt) extendFor(ctx context.Context, want *outRange) error {
	off := want.start
	if ok, err := r.covers(off); ok {
		return err
	}
	r.mu.Lock()
	r.waiting = append(r.waiting, want)
	r.mu.Unlock()
	defer r.stopWaiting(want)
	for {
		// Wait for a turn at extending, or for the index to cover off.
		r.aheadMu.Lock()
		for {
			ok, err := r.covers(off)
			if ok {
				r.aheadMu.Unlock()
				return err
			}
			if err := ctx.Err(); err != nil {
				r.aheadMu.Unlock()
				return err
			}
			// While readAhead runs it extends for everyone: taking
			// turns with it would make this read wait for spans past
			// the ones it needs.
			if !r.aheading && r.extMu.TryLock() {
				break
			}
			r.aheadDone.Wait() // broadcast after every span indexed
		}
		r.aheadMu.Unlock()
		err := r.extendLocked(ctx, off)
		r.unlockExt()
		if err != nil {
			return err
		}
	}
}

// extendLocked, with r.extMu held, extends the index by a span (see
// extendOne). Once the index covers off, no span buffer is kept for the
// next extension.
func (r *ReaderAt) extendLocked(ctx context.Context, off int64) error {
	err := r.extendOne(ctx, false)
	if err != nil {
		r.recordErr(err)
	}
	if ok, _ := r.covers(off); ok || err != nil {
		r.cache.recycle(r.extBuf)
		r.extBuf = nil
	}
	return err
}

// covers reports whether the index covers output offset off, or the
// stream's error if off is in or past the span where it was found: bytes
// before that span inflated without error and are served whether or not
// the error was found first (by read-ahead, or by another reader), so the
// answer to a read never depends on timing.
func (r *ReaderAt) covers(off int64) (bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.err != nil && off >= r.errAt {
		return true, r.err
	}
	// A checkpoint exactly at the declared size still has the end of
	// the stream (and the CRC) to check before anything is served.
	last := r.cps[len(r.cps)-1].out
	return r.done || (last > off && last < r.size), nil
}

// recordErr keeps an error (if any) from extendOne if the stream itself
// is bad: every later read of the span that failed, or past it, fails
// alike (see covers). Other errors (reading src) may pass; they are left
// for the next read to retry. r.extMu is held, so the last checkpoint is
// where the failed span starts.
func (r *ReaderAt) recordErr(err error) {
	if err != nil && isStreamError(err) {
		r.stopHelp()
		r.mu.Lock()
		r.err = err
		r.errAt = r.cps[len(r.cps)-1].out
		r.mu.Unlock()
	}
}

// noteRead follows the reads of [off, end) to tell a sequential reader,
// and starts readAhead for one that is at the index frontier.
//
// Reads within a span of the end of the current run continue it (a
// sequential reader's requests, several in flight, may come slightly out
// of order); others start a new, empty run. Read-ahead starts once a run
// has read a span in order: random reads, however large, never make one,
// and a run is never deep past the frontier, which each read extends to
// cover itself.
func (r *ReaderAt) noteRead(off, end int64) {
	r.aheadMu.Lock()
	defer r.aheadMu.Unlock()
	switch {
	case off > r.seqEnd+r.span || end < r.seqEnd-r.span:
		r.seqEnd, r.seqRun, r.prefetchNext = end, 0, 0
	case end > r.seqEnd:
		r.seqRun += end - r.seqEnd
		r.seqEnd = end
	}
	r.prefetchAhead()
	if r.aheading || r.aheadSpans == 0 || !r.aheadDue() {
		return
	}
	r.aheading = true
	r.aheadStarts.Add(1)
	r.aheadWG.Add(1)
	go r.readAhead()
}

// aheadDue reports whether the index should grow ahead of the current
// run: it is sequential, the stream is not done or bad, and the frontier
// is less than aheadSpans past the run. r.aheadMu is held.
func (r *ReaderAt) aheadDue() bool {
	if r.seqRun < r.span || r.aheadCtx.Err() != nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	last := r.cps[len(r.cps)-1].out
	return !r.done && r.err == nil && last < r.seqEnd+r.aheadSpans*r.span
}

// readAhead extends the index, caching the spans it inflates, until it is
// aheadSpans past the sequential reader, at the end of the stream or on
// an error. It then stops: a reader that stops reading leaves no goroutine
// behind, and one that reads on starts another.
func (r *ReaderAt) readAhead() {
	defer r.aheadWG.Done()
	for r.extendAhead() {
	}
}

// extendAhead extends the index by a span for readAhead if that is still
// due, and reports whether readAhead should go on. Holding r.extMu while
// deciding keeps the frontier from moving under the decision.
func (r *ReaderAt) extendAhead() bool {
	r.extMu.Lock()
	defer r.unlockExt()
	r.aheadMu.Lock()
	if !r.aheadDue() {
		r.aheading = false
		r.aheadMu.Unlock()
		return false
	}
	r.aheadMu.Unlock() // reads go on while the span inflates
	err := r.extendOne(r.aheadCtx, true)
	r.recordErr(err)
	r.aheadMu.Lock()
	r.aheading = err == nil
	r.aheadMu.Unlock()
	return err == nil
}

// unlockExt releases r.extMu and wakes the reads waiting in extendTo, to
// look again at the index and, if it still does not cover them, take a
// turn at extending it. Whoever holds r.extMu releases it so.
func (r *ReaderAt) unlockExt() {
	r.extMu.Unlock()
	r.aheadMu.Lock()
	r.aheadDone.Broadcast()
	r.aheadMu.Unlock()
}

// fitBudget keeps the index within the archive's window budget. Once
// an index has been thinned it keeps only the checkpoints whose number is
// a multiple of its stride (and the last, where indexing goes on), so
// its checkpoints stay evenly spaced, stride spans apart; while the
// budget is passed, it doubles its stride. r.mu is held for writing (by
// extendOne, with r.extMu). Spans are cached and inflated by their
// start, so reads holding a span or waiting on one are not affected.
func (r *ReaderAt) fitBudget() {
	if r.stride > 1 {
		// The checkpoint before the last was just given its window.
		if k := len(r.cps) - 2; k > 0 && r.cps[k].seq%r.stride != 0 {
			r.dropCheckpoints()
		}
	}
	for r.windows.over() && len(r.cps) > 2 {
		r.stride = max(r.stride, 1) * 2
		r.windows.thinned.Add(1)
		if !r.dropCheckpoints() && r.stride > int64(len(r.cps))*4 {
			return // nothing left to drop
		}
	}
}

// dropCheckpoints removes the checkpoints between the first and the last
// whose number is not a multiple of r.stride, with their windows, and
// reports whether it removed any.
func (r *ReaderAt) dropCheckpoints() bool {
	last := len(r.cps) - 1
	kept := r.cps[:1]
	var freed int64
	for i := 1; i < last; i++ {
		if r.cps[i].seq%r.stride != 0 {
			freed += int64(len(r.cps[i].win))
			// The kept span before it now runs on through it.
			k := &kept[len(kept)-1]
			k.sum = crc32Combine(k.sum, r.cps[i].sum, r.cps[i+1].out-r.cps[i].out)
			continue
		}
		kept = append(kept, r.cps[i])
	}
	kept = append(kept, r.cps[last])
	dropped := len(kept) < len(r.cps)
	clear(r.cps[len(kept):])
	r.cps = kept
	r.winBytes -= freed
	if !r.released {
		r.windows.used.Add(-freed)
	}
	return dropped
}

func (r *ReaderAt) stopWaiting(want *outRange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.waiting {
		if w == want {
			last := len(r.waiting) - 1
			r.waiting[i] = r.waiting[last]
			r.waiting[last] = nil
			r.waiting = r.waiting[:last]
			return
		}
	}
}

// wanted reports whether a read in extendTo wants part of [start, end).
// r.mu is held.
func (r *ReaderAt) wanted(start, end int64) bool {
	for _, w := range r.waiting {
		if w.start < end && start < w.end {
			return true
		}
	}
	return false
}

// isCancel reports an error that ended a read because its context was done.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func isStreamError(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) || errors.Is(err, ErrTooLong) || errors.Is(err, ErrTooShort) || errors.Is(err, ErrChecksum)
}

// extendOne inflates the span after the last checkpoint, recording the
// next checkpoint (or verifying the end of the stream). The span goes into
// the cache if ahead (readAhead: a sequential reader is about to read it)
// or if a read in extendTo wants part of it: not only the read extending,
// so that reads issued together (a sequential reader with several requests
// in flight, as kernel readahead makes) find their spans cached whichever
// of them extends the index past those spans, but indexing deep into a
// member does not flush the shared cache. r.extMu is held.
//
// The first time, it asks Options.Load for a saved index instead, and
// loads it if there is one (whichever extends first: a read, or
// readAhead).
func (r *ReaderAt) extendOne(ctx context.Context, ahead bool) error {
	if r.loadSaved() {
		return nil
	}
	if err := r.prepareFrontier(ctx); err != nil {
		return err
	}
	r.maybeHelp()
	r.mu.RLock()
	k := len(r.cps) - 1
	cp := r.cps[k]
	win := r.pendingWin
	r.mu.RUnlock()

	target := cp.out + r.span
	last := target >= r.size
	if last {
		target = r.size + 1
	}
	if h := r.help; h.on() && h.final >= 0 && h.final < target {
		target, last = h.final, false // the next chunk's start ends this span
	}
	w := int(cp.winLen)
	n := int(target - cp.out)
	buf := r.extBuf
	r.extBuf = nil
	if need := w + n + outSlack; cap(buf) >= need {
		buf = buf[:need]
	} else {
		r.cache.recycle(buf)
		buf = r.cache.alloc(need)
	}
	copy(buf, win)

	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	if err := r.resume(ctx, d, &cp, buf); err != nil {
		return r.wrapDecodeErr(d, err, cp.out)
	}
	if r.touched == nil {
		r.touched = make([]bool, windowSize)
	}
	clear(r.touched)
	d.touched, d.trackEnd = r.touched, w
	end, err := r.decodeHelped(d, cp.out, w, target)
	if end < target {
		last = false // the span ends at a chunk's start before the stream's end
	}
	d.trackEnd, d.touched = 0, nil
	d.out = nil
	produced := d.pos - w
	endOut := cp.out + int64(produced)
	if endOut > r.size {
		return &OffsetError{Offset: r.size, Err: ErrTooLong}
	}
	if err != nil {
		return r.wrapDecodeErr(d, err, endOut)
	}
	data := buf[w : w+produced : w+produced]
	sum := crc32.ChecksumIEEE(data)
	acc := crc32.Update(r.crcAcc, crc32.IEEETable, data)

	// A helper's run from the next chunk's start, when this span ends
	// there (see help.go); waiting for it is the last thing that may
	// fail and leave the span to be inflated again.
	var run *chunkRun
	if h := r.help; h.on() && d.state != stDone && h.final >= 0 && endOut >= h.final {
		if run, err = r.helpReached(ctx, d, endOut, acc); err != nil {
			return err
		}
	}
	r.crcAcc = acc

	var next checkpoint
	if d.state == stDone {
		if endOut < r.size {
			return &OffsetError{Offset: endOut, Err: ErrTooShort}
		}
		if r.crcAcc != r.crc {
			if r.isLoaded() {
				// The CRCs of the loaded spans, which the running CRC
				// began from, were not all checked: the loaded index
				// is at fault, not the stream, until shown otherwise.
				r.dropLoadedLocked(fmt.Errorf("%w: the stream's CRC-32 does not match the loaded spans'", ErrBadIndex))
				return nil
			}
			return &OffsetError{Offset: r.size, Err: ErrChecksum}
		}
	} else {
		if last {
			// Not reachable: a last span that is not done ran past size.
			return &OffsetError{Offset: r.size, Err: ErrTooLong}
		}
		wl := min(int64(windowSize), endOut)
		next = checkpoint{
			seq:    cp.seq + 1,
			out:    endOut,
			bit:    d.bitPos(),
			block:  d.blockBit,
			stored: int32(storedLeft(d)),
			state:  uint8(d.state),
			final:  d.final,
			winLen: int32(wl),
		}
	}

	if d.state == stDone {
		r.stopHelp()
	}

	// The window before this span is packed while the next span
	// inflates (packing takes about a sixth of inflating's time); the
	// last is packed now.
	pend := r.packLater(win, r.touched[:w])
	var nextWin []byte
	if d.state != stDone && run == nil {
		// The window before this span is in packBuf: its buffer takes
		// the window before the next.
		nextWin = append(win[:0], buf[d.pos-int(next.winLen):d.pos]...)
	}

	r.mu.Lock()
	r.cps[k].pend = pend
	r.cps[k].sum = sum
	switch {
	case d.state == stDone:
		r.done = true
	case run != nil:
		nextWin = r.splice(run, endOut, cp.seq+1)
	default:
		r.cps = append(r.cps, next)
	}
	r.pendingWin = nextWin
	done, frontier := r.done, r.cps[len(r.cps)-1].out
	keep := ahead || r.wanted(cp.out, endOut)
	if r.windows != nil {
		r.fitBudget()
	}
	r.mu.Unlock()
	if done {
		r.pack(cp.seq, pend)
	} else {
		go r.pack(cp.seq, pend)
	}
	if done && r.complete != nil {
		r.complete()
	} else if !done && r.grew != nil {
		r.grew(frontier)
	}
	if keep {
		s := newSpan(buf, data)
		r.cache.put(cacheKey{r.id, cp.out}, s)
		r.cache.release(s)
	} else {
		r.extBuf = buf // nothing else refers to it: reuse it for the next span
	}
	return nil
}

// loadSaved asks Options.Load for a saved index the first time it is
// called, and loads it if there is one, reporting whether there was.
// r.extMu is held.
func (r *ReaderAt) loadSaved() bool {
	load := r.load
	if load == nil {
		return false
	}
	r.load = nil
	src, size := load()
	if src == nil {
		return false
	}
	if err := r.loadIndexLocked(src, size); err != nil && r.badIndex != nil {
		r.badIndex(err)
	}
	return true
}

// A pendingWindow is a checkpoint's window being packed: win is set
// before done is closed.
type pendingWindow struct {
	done   chan struct{}
	masked []byte // the window, with only its touched bytes kept
	win    []byte
}

// packLater waits for the window packed before (packBuf is then free),
// copies the touched bytes of win into packBuf, and returns the pending
// window for pack. r.extMu is held.
func (r *ReaderAt) packLater(win []byte, touched []bool) *pendingWindow {
	if p := r.packing; p != nil {
		<-p.done
	}
	if r.packBuf == nil {
		r.packBuf = make([]byte, windowSize)
	}
	masked := r.packBuf[:len(win)]
	maskWindow(masked, win, touched)
	r.packing = &pendingWindow{done: make(chan struct{}), masked: masked}
	return r.packing
}

// pack packs the window p of the checkpoint numbered seq, and gives it to
// that checkpoint if the index still has it (thinning may have dropped
// it), counting it in the window budget.
func (r *ReaderAt) pack(seq int64, p *pendingWindow) {
	if testPackHook != nil {
		testPackHook(seq)
	}
	p.win = packWindow(p.masked)
	p.masked = nil
	r.mu.Lock()
	i := sort.Search(len(r.cps), func(i int) bool { return r.cps[i].seq >= seq })
	if i < len(r.cps) && r.cps[i].pend == p {
		r.cps[i].win, r.cps[i].pend = p.win, nil
		r.winBytes += int64(len(p.win))
		if r.windows != nil && !r.released {
			r.windows.used.Add(int64(len(p.win)))
		}
	}
	r.mu.Unlock()
	close(p.done)
}

// Tests' hooks: testPackHook runs as a window starts being packed;
// testPendHook as a read starts waiting for one.
var testPackHook func(seq int64)
var testPendHook func()

// maxPrefetch bounds the spans inflated at once for a sequential reader
// inside the index: one a core, and no more than it may have ahead.
var maxPrefetch = min(runtime.NumCPU(), maxAheadSpans)

// prefetchAhead starts inflating the indexed spans that begin after the
// end of a sequential run, up to aheadSpans spans past it and maxPrefetch
// at once, into the cache: spans inside the index do not depend on each
// other, so a sequential read of an indexed member (a saved index, or a
// second pass) runs on every core. The span the run is in is left to its
// reads, which inflate as much of it as they need. r.aheadMu is held.
func (r *ReaderAt) prefetchAhead() {
	if !r.prefetchOK || r.seqRun < r.span || r.aheadCtx.Err() != nil {
		return
	}
	from := max(r.prefetchNext, r.seqEnd)
	until := r.seqEnd + r.aheadSpans*r.span
	r.mu.RLock()
	defer r.mu.RUnlock()
	last := len(r.cps) - 1 // the frontier's span is not indexed until done
	if r.done {
		last++
	}
	k := sort.Search(len(r.cps), func(i int) bool { return r.cps[i].out >= from })
	for ; r.prefetching < maxPrefetch && k < last && r.cps[k].out < until; k++ {
		start := r.cps[k].out
		r.prefetching++
		r.prefetchCount.Add(1)
		r.aheadWG.Add(1)
		go r.prefetch(start)
		r.prefetchNext = start + 1
	}
}

// prefetch inflates the span starting at output offset off into the
// cache (unless it is there, or being inflated), then starts more if due.
func (r *ReaderAt) prefetch(off int64) {
	defer r.aheadWG.Done()
	if s, _, err := r.spanAt(r.aheadCtx, off, r.size); err == nil {
		r.cache.release(s)
	}
	r.aheadMu.Lock()
	r.prefetching--
	r.prefetchAhead()
	r.aheadMu.Unlock()
}
