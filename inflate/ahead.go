package inflate

import (
	"context"
	"sync"
	"sync/atomic"
)

// maxAheadSpans is how far, in spans, read-ahead inflates past the
// furthest read of a sequential reader: a few, so that it has work
// queued while the reader copies out what it inflated, without holding
// much of the cache.
const maxAheadSpans = 4

// scheduler follows a reader's reads to tell a sequential reader, and
// has the spans ahead of one inflated in the background: at the
// frontier, a read-ahead goroutine grows the index a few spans ahead of
// it, caching them, so that a second core inflates while the first
// serves reads; inside the index, the next spans are inflated into the
// cache several at once (prefetch, which the reader runs: see
// ReaderAt.prefetch), since indexed spans do not depend on each other.
// mu guards everything but the counters; the goroutines stop when ctx is
// done (the reader released).
type scheduler struct {
	s      *stream
	ix     *index
	f      *frontier
	budget *HelperBudget // the prefetches' places
	ctx    context.Context
	stop   context.CancelFunc

	mu           sync.Mutex
	seqEnd       int64 // end of the furthest read of the current sequential run
	seqRun       int64 // bytes the current sequential run has read in order
	spans        int64 // how many spans read-ahead may inflate past seqEnd
	prefetchOK   bool  // the cache is large enough to prefetch into
	maxPrefetch  int   // prefetches at once: one a place in the budget, and no more than spans ahead
	prefetching  int   // prefetches running
	prefetchNext int64 // where the next prefetch starts
	wg           sync.WaitGroup

	starts     atomic.Int64 // read-ahead goroutines started, for tests
	prefetches atomic.Int64 // prefetches started, for tests
}

func (a *scheduler) init(s *stream, ix *index, f *frontier, ctx context.Context, stop context.CancelFunc, budget *HelperBudget) {
	a.s, a.ix, a.f, a.budget = s, ix, f, budget
	a.ctx, a.stop = ctx, stop
	a.maxPrefetch = min(budget.Limit(), maxAheadSpans)
	// Spans inflated ahead are cached until read: leave the cache at
	// least half of its budget for everything else.
	spans := s.cache.Budget() / s.spanCost()
	a.spans = min(maxAheadSpans, spans/2)
	// Prefetching holds its spans ahead and those in flight: in a cache
	// that cannot hold twice that, spans would be pushed out while reads
	// still use them, and their buffers made anew instead of recycled.
	a.prefetchOK = spans >= 2*(a.spans+int64(a.maxPrefetch))
}

// halt stops the scheduler's goroutines and waits for them to end.
func (a *scheduler) halt() {
	a.mu.Lock()
	a.stop() // noteRead starts nothing after this
	a.mu.Unlock()
	a.wg.Wait()
}

// noteRead follows the reads of [off, end) to tell a sequential reader,
// starts read-ahead for one that is at the index frontier, and returns
// the spans to prefetch for one inside the index (see prefetchAhead).
//
// Reads within a span of the end of the current run continue it (a
// sequential reader's requests, several in flight, may come slightly out
// of order); others start a new, empty run. Read-ahead starts once a run
// has read a span in order: random reads, however large, never make one,
// and a run is never deep past the frontier, which each read extends to
// cover itself.
func (a *scheduler) noteRead(off, end int64) spanStarts {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case off > a.seqEnd+a.s.span || end < a.seqEnd-a.s.span:
		a.seqEnd, a.seqRun, a.prefetchNext = end, 0, 0
	case end > a.seqEnd:
		a.seqRun += end - a.seqEnd
		a.seqEnd = end
	}
	pre := a.prefetchAhead()
	if a.spans > 0 && a.due() && a.f.claimAhead() {
		a.starts.Add(1)
		a.wg.Add(1)
		go a.readAhead()
	}
	return pre
}

// due reports whether the index should grow ahead of the current run:
// it is sequential, the stream is not done or bad, and the frontier is
// less than a.spans past the run. a.mu is held.
func (a *scheduler) due() bool {
	if a.seqRun < a.s.span || a.ctx.Err() != nil {
		return false
	}
	front, open := a.ix.frontOut()
	return open && front < a.seqEnd+a.spans*a.s.span
}

// readAhead grows the index, caching the spans it inflates, until it is
// a.spans past the sequential reader, at the end of the stream or on an
// error. It then stops: a reader that stops reading leaves no goroutine
// behind, and one that reads on starts another.
func (a *scheduler) readAhead() {
	defer a.wg.Done()
	a.f.loadSaved(a.ctx) // an error: released, and extendAhead stops
	for a.extendAhead() {
	}
}

// extendAhead grows the index by a span for readAhead if that is still
// due, and reports whether readAhead should go on. Holding the turn
// while deciding keeps the frontier from moving under the decision.
func (a *scheduler) extendAhead() bool {
	if a.f.take(a.ctx) != nil { // released
		a.mu.Lock()
		a.f.endAhead()
		a.mu.Unlock()
		return false
	}
	defer a.f.release()
	a.mu.Lock()
	if !a.due() {
		a.f.endAhead()
		a.mu.Unlock()
		return false
	}
	a.mu.Unlock() // reads go on while the span inflates
	err := a.f.extendOne(a.ctx, true)
	a.f.recordErr(err)
	if err != nil {
		a.mu.Lock()
		a.f.endAhead()
		a.mu.Unlock()
	}
	return err == nil
}

// spanStarts are the starts of up to maxAheadSpans indexed spans, the
// first n of start.
type spanStarts struct {
	start [maxAheadSpans]int64
	n     int
}

// prefetchAhead returns the indexed spans that begin after the end of a
// sequential run to inflate into the cache now, up to a.spans spans past
// it and a.maxPrefetch at once, as many as the budget has places for:
// spans inside the index do not depend on each other, so a sequential
// read of an indexed member (a saved index, or a second pass) runs on
// every core. The span the run is in is left to its reads, which inflate
// as much of it as they need. Each span returned is counted as a
// prefetch running, with its place in the budget, until prefetched says
// it is done. a.mu is held.
func (a *scheduler) prefetchAhead() spanStarts {
	if !a.prefetchOK || a.seqRun < a.s.span || a.ctx.Err() != nil || a.prefetching >= a.maxPrefetch {
		return spanStarts{}
	}
	from := max(a.prefetchNext, a.seqEnd)
	// a.spans spans ahead: of the index's length there (a chunk
	// index's spans may be longer than s.span).
	until := a.seqEnd + a.spans*max(a.s.span, a.ix.spanLen(a.seqEnd, a.s.size))
	var pre spanStarts
	pre.start, pre.n = a.ix.indexedStarts(from, until, a.maxPrefetch-a.prefetching)
	pre.n = a.budget.take(pre.n)
	if pre.n > 0 {
		a.prefetching += pre.n
		a.prefetches.Add(int64(pre.n))
		a.wg.Add(pre.n)
		a.prefetchNext = pre.start[pre.n-1] + 1
	}
	return pre
}

// prefetched ends a prefetch that prefetchAhead returned, and returns
// the next ones due.
func (a *scheduler) prefetched() spanStarts {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.wg.Done()
	a.prefetching--
	a.budget.give(1)
	return a.prefetchAhead()
}
