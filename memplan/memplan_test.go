package memplan

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMake: budgets not given are shares of the target; given ones
// stay; a target not given is the default, lowered by the cgroup's
// limit, and raised to fit the budgets given; one given below them is an
// error.
func TestMake(t *testing.T) {
	m, err := Make(Plan{Target: 256 << 20})
	if err != nil || m.SpanCache != 8<<20 || m.Indexes != 32<<20 || m.Remote != 128<<20 {
		t.Errorf("256 MiB: %v, %v", m, err)
	}
	m, err = Make(Plan{Target: 256 << 20, Indexes: 100 << 20})
	if err != nil || m.Indexes != 100<<20 || m.SpanCache != 8<<20 {
		t.Errorf("256 MiB with 100 MiB of indexes: %v, %v", m, err)
	}
	if _, err := Make(Plan{Target: 64 << 20, SpanCache: 100 << 20}); err == nil {
		t.Error("a target below the budgets given is not an error")
	}
	m, _ = Make(Plan{Target: 1})
	if m.Target != MinMemoryTarget || m.SpanCache != 1<<20 {
		t.Errorf("a tiny target: %v", m)
	}
	m, _ = Make(Plan{})
	limit := CgroupLimit()
	if limit > 0 && int64(float64(limit)*cgroupShare) < DefaultMemoryTarget {
		if want := max(int64(float64(limit)*cgroupShare), MinMemoryTarget); m.Target != want || !strings.Contains(m.Why, "cgroup") {
			t.Errorf("under a cgroup limit of %d: %v", limit, m)
		}
	} else if m.Target != DefaultMemoryTarget || m.SpanCache != 16<<20 || m.Indexes != 64<<20 || m.Remote != 256<<20 {
		t.Errorf("the default: %v", m)
	}
	m, _ = Make(Plan{SpanCache: 1 << 30})
	if m.Target < min(2<<30, MaxBudget()) || m.Indexes != m.Target/8 {
		t.Errorf("a 1 GiB span cache given: %v", m)
	}
}

// TestForLimit: the plan for another cgroup limit is made from what the
// first was made from: a target not given follows the limit, down and up
// again; one given stays, its reason naming a limit below it; budgets
// given stay.
func TestForLimit(t *testing.T) {
	m := plan([4]int64{}, 0)
	low := m.ForLimit(256 << 20)
	if low.Target != 224<<20 || low.SpanCache != 7<<20 || low.Indexes != 28<<20 || low.Remote != 112<<20 || !strings.Contains(low.Why, "cgroup's limit of 256 MiB") {
		t.Errorf("under 256 MiB: %v", low)
	}
	if back := low.ForLimit(0); back != m || back.Target != DefaultMemoryTarget {
		t.Errorf("without a limit again: %v, want %v", back, m)
	}
	given, err := Make(Plan{Target: 512 << 20, Indexes: 100 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if p := given.ForLimit(256 << 20); p.Target != 512<<20 || p.Indexes != 100<<20 || p.SpanCache != 16<<20 || !strings.Contains(p.Why, "as given, though the cgroup's limit is 256 MiB") {
		t.Errorf("a target given, under 256 MiB: %v", p)
	}
	if p := plan([4]int64{0, 0, 100 << 20, 0}, 0).ForLimit(128 << 20); p.Target != 200<<20 || p.Indexes != 100<<20 || p.Why != "twice the budgets given" {
		t.Errorf("a budget given, under 128 MiB: %v", p)
	}
}

// TestFollow: follow applies each plan a new limit makes, once, and
// nothing while the limit stays.
func TestFollow(t *testing.T) {
	var limit atomic.Int64
	applied := make(chan Plan)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var n int
	go func() {
		defer close(done)
		follow(ctx, plan([4]int64{}, 0), time.Millisecond, limit.Load, func(p Plan) {
			n++
			applied <- p
		})
	}()
	for _, l := range []int64{256 << 20, 1 << 30, 128 << 20} {
		limit.Store(l)
		want := min(l/8*7, DefaultMemoryTarget)
		if p := <-applied; p.Target != want {
			t.Errorf("limit %d MiB: target %d MiB, want %d", l>>20, p.Target>>20, want>>20)
		}
	}
	cancel()
	<-done
	if n != 3 {
		t.Errorf("%d plans applied for 3 limits", n)
	}
}

// TestSetMemoryLimit: the target becomes Go's soft memory limit, unless
// GOMEMLIMIT sets one.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	m := Plan{Target: 300 << 20}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	if got := SetMemoryLimit(m); got != 1<<30 || debug.SetMemoryLimit(-1) != 1<<30 {
		t.Errorf("with GOMEMLIMIT set: %d, want the user's 1 GiB", got)
	}
	os.Unsetenv("GOMEMLIMIT")
	if got := SetMemoryLimit(m); got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("without GOMEMLIMIT: %d, want the target", got)
	}
}

// TestMakeRefusesWhatBoundsNothing: a target or budget past the
// machine's memory, or budgets adding up past it, are errors that say
// the bound (none is replaced by a default); budgets given alone raise
// the target to twice theirs only as far as the machine's memory.
func TestMakeRefusesWhatBoundsNothing(t *testing.T) {
	most := MaxBudget()
	if most <= 0 || most > MaxMiB<<20 {
		t.Fatalf("MaxBudget %d", most)
	}
	if mem := MachineMemory(); mem > 0 && most != mem {
		t.Errorf("MaxBudget %d, the machine's memory %d", most, mem)
	}
	bound := fmt.Sprintf("(%d MiB)", most>>20)
	for _, want := range []Plan{
		{Target: most + 1<<20},
		{SpanCache: most + 1<<20},
		{Indexes: MaxMiB << 20},
		{Remote: most + 1},
		{SpanCache: most/2 + 1<<20, Indexes: most/2 + 1<<20},
		{SpanCache: most, Indexes: most, Remote: most},
	} {
		if m, err := Make(want); err == nil || !strings.Contains(err.Error(), bound) {
			t.Errorf("Make(%+v): %v, %v; want an error saying %s", want, m, err, bound)
		}
	}
	m, err := Make(Plan{SpanCache: most * 3 / 4})
	if err != nil || m.Target != most || !strings.Contains(m.Why, "machine's memory") {
		t.Errorf("budgets of 3/4 of the machine's memory: %v, %v; want the machine's memory as target", m, err)
	}
	m, err = Make(Plan{Target: most, SpanCache: most})
	if err != nil || m.Target != most || m.SpanCache != most {
		t.Errorf("all of the machine's memory given: %v, %v", m, err)
	}
}
