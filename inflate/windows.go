package inflate

import (
	"sync"
	"sync/atomic"
)

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
// length to inflate, each time). The budget may be lowered while it is
// used (SetLimit): the indexes in it are thinned then.
type WindowBudget struct {
	limit   atomic.Int64
	used    atomic.Int64
	thinned atomic.Int64

	mu      sync.Mutex
	indexes map[*index]bool // those counted in it, for SetLimit
}

// NewWindowBudget makes a budget of limit bytes of checkpoint windows.
func NewWindowBudget(limit int64) *WindowBudget {
	b := &WindowBudget{indexes: map[*index]bool{}}
	b.limit.Store(limit)
	return b
}

// Used is the bytes the windows under the budget take now.
func (b *WindowBudget) Used() int64 { return b.used.Load() }

// Limit is the budget.
func (b *WindowBudget) Limit() int64 { return b.limit.Load() }

// Thinned counts the times an index was thinned to stay within it.
func (b *WindowBudget) Thinned() int64 { return b.thinned.Load() }

func (b *WindowBudget) over() bool { return b.used.Load() > b.limit.Load() }

// SetLimit changes the budget to limit bytes. Past a lower one, the
// indexes counted in it are thinned at once, each in turn dropping every
// other checkpoint, until their windows fit in it or none has any more to
// drop.
func (b *WindowBudget) SetLimit(limit int64) {
	b.limit.Store(limit)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.over() {
		thinned := false
		for ix := range b.indexes {
			if !b.over() {
				return
			}
			thinned = ix.halve() || thinned
		}
		if !thinned {
			return
		}
	}
}

// join counts ix in the budget, for SetLimit; leave no more.
func (b *WindowBudget) join(ix *index) {
	b.mu.Lock()
	b.indexes[ix] = true
	b.mu.Unlock()
}

func (b *WindowBudget) leave(ix *index) {
	b.mu.Lock()
	delete(b.indexes, ix)
	b.mu.Unlock()
}
