// Package workers runs a number of jobs on a bounded number of
// goroutines: the one worker pool of npzfs, for the inflater's parallel
// first pass and whatever else does many independent things at once
// (checking members, indexing archives).
package workers

import (
	"context"
	"sync"
	"sync/atomic"
)

// Run calls job(w, i) for each i from 0 to n-1, handing the i out in
// increasing order to min(k, n) goroutines (one when k < 1), and returns
// once every job handed out has returned. w, from 0 to min(k, n)-1, is
// the goroutine running the job: a goroutine runs one job at a time, so
// jobs may keep state by w without locking it. Once ctx is done no more
// jobs are handed out (the ones running are not told: they have ctx
// themselves), and Run returns ctx's error if a job was left out. With
// one goroutine to run them the jobs run on the caller's, which costs
// nothing to start: a single small job is as cheap as calling it.
func Run(ctx context.Context, n, k int, job func(w, i int)) error {
	if min(max(k, 1), n) == 1 {
		for i := range n {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			job(0, i)
		}
		return nil
	}
	// ctx is looked at before an i is taken, so every i taken is run and
	// the jobs left out are exactly those from next on.
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(max(k, 1), n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				job(w, i)
			}
		})
	}
	wg.Wait()
	if next.Load() < int64(n) {
		return ctx.Err()
	}
	return nil
}
