package inflate

import (
	"context"
	"sync/atomic"

	"github.com/npzfs/npzfs/internal/crc"
	"github.com/npzfs/npzfs/internal/workers"
)

// Helping the lazy first pass. On a reader with Options.Helpers set, the
// first read far past an index still in its first chunk (further than a
// (Helpers+1)th of the output past it) has the stream cut into up to
// Helpers+1 chunks, one more than the helpers its HelperBudget has room
// for, as the parallel pass cuts it (see parallel.go): helper
// goroutines find the starts of chunks 1 on and run from them, while the
// index grows from the stream's start as it always does, a span a turn,
// answering the reads before it as it reaches them. When it reaches the
// next chunk's start, proven as a run proves it (a block header at the
// very bit, then the start's recorded state), the helper's run of that
// chunk is waited for and spliced in: the index jumps to that run's end,
// the next chunk's start. A run that failed, or a start passed any other
// way, leaves the index to grow on as before.

// helpState is the frontier's helpers: how many at most, the budget
// they take their places in, the least compressed length of a chunk
// (minChunk; tests make it less), and their work; helpStarts and
// helpSplices count the times they were started and their runs spliced
// in, for tests.
type helpState struct {
	helpers     int
	budget      *HelperBudget
	helpChunk   int64
	help        *helping
	helpStarts  atomic.Int64
	helpSplices atomic.Int64
}

// helping is a reader's help (the frontier's, held by the turn): the
// pass the helpers run, and where the frontier heads in it.
type helping struct {
	p    *parallelPass
	w    *passWorker // for a start the index needs that no helper has begun
	stop context.CancelFunc
	heading
}

// on reports whether h is help under way: a reader without helpers, or
// whose helpers are done or will never start, has a nil or empty one.
func (h *helping) on() bool { return h != nil && h.p != nil }

// maybeHelp starts helpers when a read waits far past an index still in
// its first chunk and the budget has room for one at least, or decides
// there will be none. The turn is held.
func (f *frontier) maybeHelp() {
	if f.helpers == 0 || f.help != nil {
		return
	}
	n := int(min(f.s.csize/f.helpChunk, int64(f.helpers+1)))
	chunk := (f.s.csize + int64(n) - 1) / int64(max(n, 1))
	// The index may have grown a little for shallower reads, but not
	// into the chunks the helpers would run.
	front, early := f.ix.early(chunk * 8)
	if early && !f.deepWait(front.out+f.s.size/int64(f.helpers+1)) {
		return
	}
	if !early || n < 2 || f.s.csize >= f.s.size {
		f.help = &helping{} // never: too late, or the stream too short or stored
		return
	}
	// A chunk a helper, but the first: with no room in the budget,
	// the next span looks again.
	k := f.budget.take(n - 1)
	if k == 0 {
		return
	}
	n = k + 1
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bg.Err() != nil {
		f.budget.give(k)
		return // released
	}
	ctx, stop := context.WithCancel(f.bg)
	p := newPass(f.s, ctx, n, f.ix.first())
	f.help = &helping{p: p, w: &passWorker{}, stop: stop, heading: heading{next: -2, final: -1}}
	ws := make([]passWorker, k)
	f.helpStarts.Add(1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer f.budget.give(k)
		// Task k is chunk k/2+1's start when k is even, else its run.
		// Every task runs, cancelled or not, so that each run's ran is
		// closed: the tasks themselves stop soon once ctx is done.
		workers.Run(context.Background(), 2*(n-1), len(ws), func(g, k int) {
			i := k/2 + 1
			p.task(&ws[g], i, k%2 == 1)
			if k%2 == 1 {
				close(p.ran[i])
			}
		})
	}()
}

// decodeHelped decodes the span from output offset out0 (its window w
// bytes) to target, or to the next chunk's start where it comes first,
// and returns where the span ends. The turn is held.
func (f *frontier) decodeHelped(ctx context.Context, d *decoder, out0 int64, w int, target int64) (int64, error) {
	h := f.help
	if !h.on() {
		return target, d.decode(w + int(target-out0))
	}
	return h.decode(ctx, h.p, h.w, d, out0, w, target)
}

// helpReached is called when a span ends at or past where the next
// chunk's start lies (end, in the output), with acc the CRC-32 of the
// output up to end. If the decoder is there in the start's state, it
// waits for the helper's run from that start (or for ctx) and returns
// it, to be spliced in; nil leaves the index to grow on. The turn is
// held.
func (f *frontier) helpReached(ctx context.Context, d *decoder, end int64, acc uint32) (*chunkRun, error) {
	h := f.help
	p, j, final := h.p, h.next, h.final
	if at, err := h.arrived(ctx, p, h.w, d, end); !at || err != nil {
		return nil, err
	}
	f.s.hooks.waiting(forRun)
	select {
	case <-p.ran[j]:
	case <-ctx.Done():
		h.final = final // the span is inflated again, and ends here again
		return nil, ctx.Err()
	}
	run := &p.runs[j]
	if run.err != nil || len(run.cps) == 0 ||
		(run.next < 0 && (end+run.size != f.s.size || crc.Combine(acc, run.crc, run.size) != f.s.crc)) {
		f.stopHelp() // the index grows on from here alone, and finds what is wrong
		return nil, nil
	}
	h.chunk, h.next = run.next, -2
	if run.next < 0 {
		f.stopHelp()
	}
	return run, nil
}

// stopHelp cancels the helpers' work still going on, and lets go of
// it; the index grows on alone. The turn is held.
func (f *frontier) stopHelp() {
	if h := f.help; h.on() {
		h.stop()
		f.help = &helping{}
	}
}
