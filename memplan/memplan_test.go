package memplan

import (
	"strings"
	"testing"
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
	if m.Target < 2<<30 || m.Indexes != m.Target/8 {
		t.Errorf("a 1 GiB span cache given: %v", m)
	}
}
