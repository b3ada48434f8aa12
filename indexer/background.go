package indexer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/npzfs/npzfs/npz"
)

// Background is the indexing of one archive's deflated members in the
// background (a mount's --index), whose progress may be asked from the
// moment it is made.
type Background struct {
	members []*npz.Member
	mu      sync.Mutex
	start   time.Time
	done    int // members done
	failed  int
	before  int64 // bytes of the members done
	end     time.Time
}

// BackgroundProgress is how far a Background indexing has got.
type BackgroundProgress struct {
	Members, MembersDone, Failed int
	Bytes, BytesDone             int64
	Rate                         float64 // bytes a second
	SecondsLeft                  float64
	Done                         bool
}

// NewBackground is the background indexing of a's members that have
// saved indexes (npz.Member.SavesIndex: large deflated members, and
// large stored ones, which it verifies), picked now; Run runs it.
func NewBackground(a *npz.Archive) *Background {
	members, _, _ := pickMembers(a.Members(), nil)
	return &Background{members: members, start: time.Now()}
}

// Run indexes the members one after the other, on a thread of the
// lowest CPU priority, until done or ctx ends (reads of a mount wait for
// no more than a span of it), and reports what it did. It fails when ctx
// ends.
func (b *Background) Run(ctx context.Context) (*Report, error) {
	runtime.LockOSThread() // the thread dies with the goroutine
	rep := &Report{Archives: 1, Workers: 1}
	if err := lowerPriority(); err != nil {
		rep.Failures = append(rep.Failures, Failure{Err: fmt.Errorf("cannot lower its priority: %w", err)})
	}
	for _, m := range b.members {
		res, err := m.BuildIndex(ctx, 1)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Members = append(rep.Members, memberIndex("", m, res, err))
		b.mu.Lock()
		b.done++
		b.before += m.Size()
		if err != nil {
			b.failed++
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.end = time.Now()
	rep.Elapsed = b.end.Sub(b.start)
	b.mu.Unlock()
	return rep, nil
}

// Progress is how far the indexing has got.
func (b *Background) Progress() *BackgroundProgress {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := &BackgroundProgress{Members: len(b.members), MembersDone: b.done, Failed: b.failed, BytesDone: b.before, Done: !b.end.IsZero()}
	for i, m := range b.members {
		st.Bytes += m.Size()
		if i == b.done && !st.Done {
			st.BytesDone += m.Indexed()
		}
	}
	end := b.end
	if end.IsZero() {
		end = time.Now()
	}
	if secs := end.Sub(b.start).Seconds(); secs > 0 {
		st.Rate = float64(st.BytesDone) / secs
	}
	if st.Rate > 0 && !st.Done {
		st.SecondsLeft = float64(st.Bytes-st.BytesDone) / st.Rate
	}
	return st
}
