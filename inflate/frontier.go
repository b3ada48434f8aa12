package inflate

import (
	"bytes"
	"context"
	"hash/crc32"
	"sync"

	"github.com/npzfs/npzfs/internal/crc"
)

// frontier grows a reader's index, a span at a time from its last
// checkpoint, one growth at a time: whoever grows it (a read past it,
// read-ahead, IndexAll) takes the turn, inflates the next span, records
// it and gives the turn back, so that the reads waiting look again and a
// read returns as soon as the index covers it, whatever deeper reads are
// under way. Helpers (help.go) and the parallel first pass (parallel.go)
// are its ways of growing faster, and a saved index (saved.go) its way
// of not growing at all.
//
// turns (turn.go) is the turn and the reads waiting for it, guarded by
// mu; saved (ask.go) has a lock of its own; growth and helpState belong
// to whoever has the turn, and are read and written by it alone.
type frontier struct {
	s     *stream
	ix    *index
	spans *spanCache
	// bg is the helpers' context, done when the reader is released by
	// stop; wg counts the goroutines the frontier started.
	bg   context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	turns
	saved asker
	growth
	helpState
}

// growth is what growing the index uses from one span to the next: it
// belongs to the holder of the turn.
type growth struct {
	crcAcc  uint32 // CRC-32 of the output up to the frontier
	touched []bool
	buf     []byte // a buffer from cache.alloc that no span holds
	// The window being packed in the background, and the buffer its
	// masked bytes are in (reused once it is packed).
	packing *pendingWindow
	packBuf []byte
}

// outRange is a range [start, end) of output offsets a read wants
// (background: IndexAll's, which helpers do not help).
type outRange struct {
	start, end int64
	background bool
}

func (f *frontier) init(s *stream, ix *index, spans *spanCache, bg context.Context, stop context.CancelFunc, saved IndexSource, helpers int, budget *HelperBudget) {
	f.s, f.ix, f.spans = s, ix, spans
	f.bg, f.stop = bg, stop
	f.turn.L = &f.mu
	f.saved.src = saved
	f.helpers, f.budget = max(helpers, 0), budget
	f.helpChunk = minChunk
}

// halt stops the helpers and waits for them to end.
func (f *frontier) halt() {
	f.mu.Lock()
	f.stop() // maybeHelp starts no helpers after this
	f.mu.Unlock()
	f.wg.Wait()
}

// extendFor grows the index until it covers want.start, or until ctx is
// done, taking turns with the others growing it.
func (f *frontier) extendFor(ctx context.Context, want *outRange) error {
	if ok, err := f.ix.covers(want.start, f.s.size); ok {
		return err
	}
	if want.start >= f.s.span || want.background {
		// A saved index helps a read past the first span only: that
		// span is inflated from the stream's start either way, and
		// asking for an index may cost a request (a remote sidecar).
		// Indexing the whole stream (IndexTo) loads it whatever the
		// stream's size.
		if err := f.loadSaved(ctx); err != nil {
			return err
		}
	}
	f.startWaiting(want)
	defer f.stopWaiting(want)
	for {
		if done, err := f.await(ctx, want.start); done {
			return err
		}
		err := f.extendLocked(ctx, want.start)
		f.release()
		if err != nil {
			return err
		}
		if f.saved.readyNow() {
			// The saved index looked for meanwhile has come: loaded
			// now, it takes the read the rest of the way.
			if err := f.loadSaved(ctx); err != nil {
				return err
			}
		}
	}
}

// extendLocked grows the index by a span (see extendOne), keeping an
// error found in the stream. Once the index covers off, no span buffer
// is kept for the next growth. The turn is held.
func (f *frontier) extendLocked(ctx context.Context, off int64) error {
	err := f.extendOne(ctx, false)
	f.recordErr(err)
	if ok, _ := f.ix.covers(off, f.s.size); ok || err != nil {
		f.s.cache.recycle(f.buf)
		f.buf = nil
	}
	return err
}

// recordErr keeps an error from extendOne if the stream itself is bad:
// every later read of the span that failed, or past it, fails alike.
// Other errors (reading src) may pass; they are left for the next read
// to retry. The turn is held, so the frontier is where the failed span
// starts.
func (f *frontier) recordErr(err error) {
	if err != nil && isStreamError(err) {
		f.stopHelp()
		f.ix.fail(err)
	}
}

// A grownSpan is the span extendOne inflated from the frontier.
type grownSpan struct {
	buf  []byte     // the window, then the span's output
	data []byte     // the output, in buf
	end  int64      // where the span ends in the output
	acc  uint32     // the CRC-32 of the output up to end
	last bool       // the span must end the stream
	next checkpoint // the checkpoint at end, unless the stream ends there
	run  *chunkRun  // a helper's run from end, spliced in after the span
}

// extendOne inflates the span after the frontier and records it with
// the next checkpoint (or, the stream's end verified, completes the
// index). The span goes into the cache if keep (read-ahead: a sequential
// reader is about to read it) or if a read waiting wants part of it: not
// only the read growing the index, so that reads issued together (a
// sequential reader with several requests in flight, as kernel readahead
// makes) find their spans cached whichever of them grows the index past
// those spans, but indexing deep into a member does not flush the shared
// cache. The turn is held.
func (f *frontier) extendOne(ctx context.Context, keep bool) error {
	if err := f.prepareFrontier(ctx); err != nil {
		return err
	}
	f.maybeHelp()
	k, cp, win := f.ix.front()
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	g, err := f.decodeSpan(ctx, d, &cp, win)
	if err == nil {
		// Before endSpan, which may take a helper's run: after it the
		// span is recorded, whatever ctx says.
		err = f.packed(ctx)
	}
	if err == nil {
		err = f.endSpan(ctx, d, &g)
	}
	if err != nil {
		f.buf = g.buf // no span holds it
		return err
	}
	f.record(k, &cp, win, d, &g, keep)
	return nil
}

// decodeSpan inflates the span from cp, whose window is win, up to a
// span's length or the stream's end, or to the next chunk's start where
// helpers have found it before that.
func (f *frontier) decodeSpan(ctx context.Context, d *decoder, cp *checkpoint, win []byte) (g grownSpan, err error) {
	target := cp.out + f.s.span
	g.last = target >= f.s.size
	if g.last {
		target = f.s.size + 1
	}
	if h := f.help; h.on() && h.final >= 0 && h.final < target {
		target, g.last = h.final, false // the next chunk's start ends this span
	}
	w := int(cp.winLen)
	g.buf = f.spanBuf(w + int(target-cp.out) + outSlack)
	copy(g.buf, win)
	if err := f.s.resume(ctx, d, cp, g.buf); err != nil {
		return g, decodeErr(d, err, cp.out)
	}
	// The bytes of the window that matches read are marked, to pack only
	// those. A stream's first span has no window: nothing to mark, and
	// no 32 KiB to touch for a member that may be a few hundred bytes.
	if w > 0 {
		if f.touched == nil {
			f.touched = make([]bool, windowSize)
		}
		clear(f.touched[:w])
		d.touched, d.trackEnd = f.touched, w
	}
	end, err := f.decodeHelped(ctx, d, cp.out, w, target)
	if end < target {
		g.last = false // the span ends at a chunk's start before the stream's end
	}
	d.trackEnd, d.touched = 0, nil
	d.out = nil
	g.end = cp.out + int64(d.pos-w)
	if g.end > f.s.size {
		return g, &OffsetError{Offset: f.s.size, Err: ErrTooLong}
	}
	if err != nil {
		return g, decodeErr(d, err, g.end)
	}
	g.data = g.buf[w:d.pos:d.pos]
	g.acc = crc32.Update(f.crcAcc, crc32.IEEETable, g.data)
	return g, nil
}

// spanBuf returns a buffer of n bytes to inflate a span into: the last
// one's, when no span took it, or one from the cache.
func (f *frontier) spanBuf(n int) []byte {
	buf := f.buf
	f.buf = nil
	if cap(buf) >= n {
		return buf[:n]
	}
	f.s.cache.recycle(buf)
	return f.s.cache.alloc(n)
}

// endSpan checks where the span ended and finds what follows it: a
// helper's run from there (waiting for it is the last thing that may
// fail and leave the span to be inflated again), the stream's end (its
// length and CRC-32 checked), or the next checkpoint.
func (f *frontier) endSpan(ctx context.Context, d *decoder, g *grownSpan) error {
	if h := f.help; h.on() && d.state != stDone && h.final >= 0 && g.end >= h.final {
		run, err := f.helpReached(ctx, d, g.end, g.acc)
		if err != nil {
			return err
		}
		g.run = run
	}
	if d.state == stDone {
		if g.end < f.s.size {
			return &OffsetError{Offset: g.end, Err: ErrTooShort}
		}
		if g.acc != f.s.crc {
			// From a loaded partial index, the running CRC began from
			// its spans' CRC-32s: evidence, as the spans checked are.
			return &OffsetError{Offset: f.s.size, Err: ErrChecksum}
		}
		return nil
	}
	if g.last {
		// Not reachable: a last span that is not done ran past size.
		return &OffsetError{Offset: f.s.size, Err: ErrTooLong}
	}
	g.next = d.checkpoint(g.end, min(windowSize, g.end))
	return nil
}

// record adds the span from checkpoint k (cp, whose window is win) to
// the index: its CRC-32 and its window, packed in the background while
// the next span inflates (the last is packed now); then what follows it.
// The span is cached if it is wanted, or else its buffer kept for the
// next.
func (f *frontier) record(k int, cp *checkpoint, win []byte, d *decoder, g *grownSpan, keep bool) {
	f.crcAcc = g.acc
	done := d.state == stDone
	if done {
		f.stopHelp()
	}
	pend := f.packLater(win, f.touched[:cp.winLen])
	var add []checkpoint
	var frontWin []byte
	switch {
	case done:
	case g.run != nil:
		add, frontWin = f.splice(g.run, g.end, cp.seq+1)
		done = g.run.next < 0
	default:
		g.next.seq = cp.seq + 1
		add = []checkpoint{g.next}
		// win is in packBuf now: its buffer takes the next window.
		frontWin = append(win[:0], g.buf[d.pos-int(g.next.winLen):d.pos]...)
	}
	f.ix.grow(k, crc32.ChecksumIEEE(g.data), pend, add, frontWin, done)
	keep = keep || f.wanted(cp.out, g.end)
	if done {
		f.ix.pack(cp.seq, pend)
	} else {
		go f.ix.pack(cp.seq, pend)
	}
	if keep {
		s := newSpan(g.buf, g.data)
		f.spans.put(cp.out, s)
		f.s.cache.release(s)
	} else {
		f.buf = g.buf // nothing else refers to it: reuse it for the next span
	}
}

// splice returns a helper's run from output offset end as checkpoints
// of the index numbered from seq on, with the start it ends at as the
// new frontier, and that start's window (none at the stream's end); the
// run's CRC-32 goes into the running one.
func (f *frontier) splice(run *chunkRun, end, seq int64) ([]checkpoint, []byte) {
	add := make([]checkpoint, 0, len(run.cps)+1)
	for _, c := range run.cps {
		c.out += end
		c.seq = seq
		seq++
		add = append(add, c)
	}
	f.crcAcc = crc.Combine(f.crcAcc, run.crc, run.size)
	f.helpSplices.Add(1)
	if run.next < 0 {
		return add, nil
	}
	st := &f.help.p.starts[run.next]
	c := st.cp
	c.out, c.seq = end+run.size, seq
	return append(add, c), bytes.Clone(st.win)
}
