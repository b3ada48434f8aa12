package memplan

import (
	"context"
	"time"
)

// FollowEvery is how often Follow reads the cgroup's memory limit again.
const FollowEvery = time.Second

// Follow follows the memory limit of the process's cgroup in a goroutine
// of its own, for a daemon that a cgroup may limit after it started
// (moved into another cgroup, or its cgroup's limit changed): every
// FollowEvery it reads the limit again, and when the plan what m was made
// from makes under it (ForLimit) is another, it makes that plan's target
// Go's soft memory limit (SetMemoryLimit) and calls apply with it, for
// the caches to be resized to its budgets. A target or budget given
// stays as given. Each look reads /proc/self/cgroup and the few limit
// files on its cgroups' paths; the mount table only when the cgroups
// changed. The stop it returns ends the goroutine, and returns once it
// has ended: apply is not called after.
func Follow(m Plan, apply func(Plan)) (stop func()) {
	var w watcher
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		follow(ctx, m, FollowEvery, w.limit, func(p Plan) {
			SetMemoryLimit(p)
			apply(p)
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// follow is Follow with the limit read by limit every every, calling
// apply alone.
func follow(ctx context.Context, m Plan, every time.Duration, limit func() int64, apply func(Plan)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p := m.ForLimit(limit()); p != m {
			m = p
			apply(m)
		}
	}
}
