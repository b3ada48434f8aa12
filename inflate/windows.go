package inflate

import "sync/atomic"

// A WindowBudget bounds the memory the checkpoints of several ReaderAts
// take: each checkpoint keeps the 32 KiB of output before it (packed, see
// packWindow), so an index grows with the member, about 60 MB for 1 GiB
// of incompressible data at 512 KiB spans. When a ReaderAt extending its
// index finds the total over the budget, it thins its own index, keeping
// every other checkpoint (so they stay evenly spaced, and so on as the
// index grows), until the total is back under it or it has no more to
// drop. The windows then take at most the budget plus one window
// (at most 32 KiB) for each ReaderAt that has been read; thinned indexes
// make random reads deep into large members slower (a span of twice the
// length to inflate, each time).
type WindowBudget struct {
	limit   int64
	used    atomic.Int64
	thinned atomic.Int64
}

// NewWindowBudget makes a budget of limit bytes of checkpoint windows.
func NewWindowBudget(limit int64) *WindowBudget { return &WindowBudget{limit: limit} }

// Used is the bytes the windows under the budget take now.
func (b *WindowBudget) Used() int64 { return b.used.Load() }

// Limit is the budget.
func (b *WindowBudget) Limit() int64 { return b.limit }

// Thinned counts the times an index was thinned to stay within it.
func (b *WindowBudget) Thinned() int64 { return b.thinned.Load() }

func (b *WindowBudget) over() bool { return b.used.Load() > b.limit }
