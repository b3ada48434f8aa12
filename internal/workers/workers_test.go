package workers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestRunEachOnce: every job runs once, on a goroutine number below k
// that runs no other job at the same time, and jobs are handed out in
// order (one goroutine runs them 0, 1, 2...).
func TestRunEachOnce(t *testing.T) {
	for _, tc := range []struct{ n, k, goroutines int }{
		{0, 4, 0}, {1, 4, 1}, {10, 3, 3}, {100, 8, 8}, {5, 0, 1}, {5, -2, 1},
	} {
		runs := make([]atomic.Int64, tc.n)
		busy := make([]atomic.Bool, max(tc.k, 1))
		var bad atomic.Int64
		var order []int
		err := Run(context.Background(), tc.n, tc.k, func(w, i int) {
			if w < 0 || w >= tc.goroutines || busy[w].Swap(true) {
				bad.Add(1)
				return
			}
			defer busy[w].Store(false)
			runs[i].Add(1)
			if tc.goroutines == 1 {
				order = append(order, i)
			}
		})
		if err != nil || bad.Load() != 0 {
			t.Fatalf("n %d, k %d: %v, %d jobs on a wrong or busy goroutine", tc.n, tc.k, err, bad.Load())
		}
		for i := range runs {
			if runs[i].Load() != 1 {
				t.Fatalf("n %d, k %d: job %d ran %d times", tc.n, tc.k, i, runs[i].Load())
			}
		}
		for j, i := range order {
			if i != j {
				t.Fatalf("n %d, k %d: one goroutine ran job %d %dth", tc.n, tc.k, i, j)
			}
		}
	}
}

// TestRunStopsAtCancel: once ctx is done no job is handed out, and Run
// says some were left out; a ctx done after the last job is no error.
func TestRunStopsAtCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran []int
	err := Run(ctx, 10, 1, func(_, i int) {
		ran = append(ran, i)
		if i == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || len(ran) != 4 {
		t.Fatalf("cancelled at job 3: ran %v, %v", ran, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	err = Run(ctx, 4, 2, func(_, i int) {
		if i == 3 {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("cancelled at the last job: %v", err)
	}
}
