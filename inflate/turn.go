package inflate

import (
	"context"
	"sync"
)

// turns is the turn at growing the index and the reads waiting for it,
// guarded by mu. The turn is not a lock: it is taken with no lock held
// and held across the locks below it (see the package documentation).
// Every wait for it ends when the waiter's context is done.
type turns struct {
	mu      sync.Mutex
	turn    sync.Cond   // on mu: the turn was given back, read-ahead stopped, or a waiter's context is done
	busy    bool        // someone has the turn
	ahead   bool        // a read-ahead goroutine runs: reads leave the turns to it
	waiting []*outRange // what the reads waiting for the index want
}

// take waits for the turn, read-ahead or not, and takes it; or returns
// ctx's error once it is done.
func (f *frontier) take(ctx context.Context) error {
	_, err := f.waitTurn(ctx, -1, true)
	return err
}

// release gives the turn back, and wakes the reads waiting for it, to
// look again at the index and, if it still does not cover them, take a
// turn at growing it.
func (f *frontier) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy = false
	f.turn.Broadcast()
}

// claimAhead marks a read-ahead goroutine as running, and reports
// whether none was.
func (f *frontier) claimAhead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ahead {
		return false
	}
	f.ahead = true
	return true
}

// endAhead marks read-ahead as stopped: reads take turns again.
func (f *frontier) endAhead() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ahead = false
	f.turn.Broadcast()
}

// await waits until the index covers output offset off (done, with the
// stream's error if off is past it), ctx is done (done, with its error),
// or the turn is free: then it takes it. While read-ahead runs it grows
// the index for everyone: taking turns with it would make a read wait
// for spans past the ones it needs.
func (f *frontier) await(ctx context.Context, off int64) (bool, error) {
	return f.waitTurn(ctx, off, false)
}

// waitTurn is await, for off at or past 0, and take, for off below 0
// and anyway set: the turn is taken even while read-ahead runs.
func (f *frontier) waitTurn(ctx context.Context, off int64, anyway bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var unwake func() bool
	defer func() {
		if unwake != nil {
			unwake()
		}
	}()
	for {
		if off >= 0 {
			if ok, err := f.ix.covers(off, f.s.size); ok {
				return true, err
			}
		}
		if err := ctx.Err(); err != nil {
			return true, err
		}
		if !f.busy && (anyway || !f.ahead) {
			f.busy = true
			return false, nil
		}
		if unwake == nil {
			// A cond cannot wait on ctx: ctx wakes every waiter, to
			// look again, once it is done.
			unwake = context.AfterFunc(ctx, f.wake)
			f.s.hooks.waiting(forTurn)
		}
		f.turn.Wait()
	}
}

// wake wakes the goroutines waiting for the turn, to look again.
func (f *frontier) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turn.Broadcast()
}

// startWaiting adds want to the reads waiting for the index.
func (f *frontier) startWaiting(want *outRange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting = append(f.waiting, want)
}

// stopWaiting removes want from the reads waiting for the index.
func (f *frontier) stopWaiting(want *outRange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, w := range f.waiting {
		if w == want {
			last := len(f.waiting) - 1
			f.waiting[i] = f.waiting[last]
			f.waiting[last] = nil
			f.waiting = f.waiting[:last]
			return
		}
	}
}

// wanted reports whether a read waiting wants part of [start, end).
func (f *frontier) wanted(start, end int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.waiting {
		if w.start < end && start < w.end {
			return true
		}
	}
	return false
}

// deepWait reports whether a read (not IndexAll) waits at or past
// output offset off.
func (f *frontier) deepWait(off int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.waiting {
		if !w.background && w.start >= off {
			return true
		}
	}
	return false
}
