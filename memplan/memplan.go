// Package memplan plans a daemon's memory: one target, from the command
// line or the memory limit of the process's cgroup, and the shares of it
// each cache and budget gets; it makes the target Go's soft memory limit
// (SetMemoryLimit), and follows the cgroup's limit while the daemon runs
// (Follow), for the daemon to resize its caches to each new plan.
package memplan

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
)

// DefaultMemoryTarget is a daemon's memory target where neither the
// command line nor the memory limit of its cgroup sets a lower one. Its
// shares are the budgets npzfs has always had by default: 16 MiB of
// inflated spans, 64 MiB of checkpoint windows, 256 MiB of fetched
// blocks.
const DefaultMemoryTarget = 512 << 20

// MinMemoryTarget is the least memory target a daemon gets.
const MinMemoryTarget = 32 << 20

// MaxMiB is the largest number of MiB whose bytes an int64 holds: the
// bound of a size in MiB that nothing smaller bounds.
const MaxMiB = math.MaxInt64 >> 20

// MaxBudget is the largest memory target, or budget, a plan takes, in
// bytes: the machine's physical memory (MachineMemory), where it is
// known, else MaxMiB MiB. A target above it bounds nothing.
func MaxBudget() int64 {
	if m := MachineMemory(); m > 0 {
		return m
	}
	return MaxMiB << 20
}

// clampBytes is n as an int64, at most MaxMiB MiB.
func clampBytes(n uint64) int64 {
	return int64(min(n, uint64(MaxMiB)<<20))
}

// cgroupShare is the part of its cgroup's memory limit a daemon takes as
// its target by default, leaving the rest for what Go's soft limit does
// not count (the program's text, the kernel's memory for its pipes and
// files).
const cgroupShare = 7.0 / 8

// Plan is a daemon's memory target and how it is shared: every cache
// and budget is sized inside it, and it is Go's soft memory limit, which
// makes the collector work harder as the heap nears it instead of letting
// the heap grow to twice what is live. What no budget bounds (requests in
// flight and their buffers, spans being inflated, central directories of
// open archives, the collector's headroom) lives in what the shares leave
// free: at least 3/8 of the target.
type Plan struct {
	Target    int64 // bytes
	SpanCache int64 // inflated spans (npz.Options.CacheBytes): 1/32 of Target
	Indexes   int64 // checkpoints' windows (npz.Options.IndexBytes): 1/8
	Remote    int64 // a remote dataset's fetched blocks and folder listings: 1/2
	// Why says where Target comes from, for the log.
	Why string
	// given is what Make was asked for (Target and the budgets), for
	// ForLimit.
	given [4]int64
}

// Make completes want: each budget set (non-zero) is kept, each
// other gets its share of the target. The target is want.Target when set;
// otherwise DefaultMemoryTarget, or 7/8 of the memory limit of the
// process's cgroup (v2 or v1, the lowest on its path) where that is less,
// raised to twice the budgets set when they take more than half of it
// (but not past MaxBudget). A target set below the budgets set is an
// error, and so are a target or budgets set past MaxBudget.
func Make(want Plan) (Plan, error) {
	most := MaxBudget()
	for _, v := range []int64{want.Target, want.SpanCache, want.Indexes, want.Remote} {
		if v > most {
			return want, fmt.Errorf("%d MiB is more than %s", v>>20, maxBudgetText(most))
		}
	}
	var set int64
	for _, v := range []int64{want.SpanCache, want.Indexes, want.Remote} {
		if v = max(v, 0); v > most-set {
			return want, fmt.Errorf("the budgets given add up to more than %s", maxBudgetText(most))
		}
		set += v
	}
	if want.Target > 0 && set > want.Target {
		return want, fmt.Errorf("the memory target of %d MiB is less than the budgets given (%d MiB)", want.Target>>20, set>>20)
	}
	return plan([4]int64{want.Target, want.SpanCache, want.Indexes, want.Remote}, CgroupLimit()), nil
}

// ForLimit is the plan what m was made from (Make's want) makes where the
// process's cgroup has a memory limit of limit bytes (0: none).
func (m Plan) ForLimit(limit int64) Plan { return plan(m.given, limit) }

// plan is Make's plan for given (Target, SpanCache, Indexes, Remote), under
// a cgroup memory limit of limit bytes (0: none). Make has checked that
// given is within MaxBudget.
func plan(given [4]int64, limit int64) Plan {
	m := Plan{Target: given[0], SpanCache: given[1], Indexes: given[2], Remote: given[3], given: given}
	most := MaxBudget()
	set := max(m.SpanCache, 0) + max(m.Indexes, 0) + max(m.Remote, 0)
	switch {
	case m.Target > 0:
		m.Why = "as given"
		if limit > 0 && m.Target > int64(float64(limit)*cgroupShare) {
			m.Why = fmt.Sprintf("as given, though the cgroup's limit is %d MiB", limit>>20)
		}
	default:
		m.Target, m.Why = DefaultMemoryTarget, "the default"
		if limit > 0 && int64(float64(limit)*cgroupShare) < m.Target {
			m.Target = int64(float64(limit) * cgroupShare)
			m.Why = fmt.Sprintf("7/8 of the cgroup's limit of %d MiB", limit>>20)
		}
		switch {
		case set > most/2:
			m.Target, m.Why = most, "the machine's memory, less than twice the budgets given"
		case 2*set > m.Target:
			m.Target, m.Why = 2*set, "twice the budgets given"
		}
	}
	m.Target = max(m.Target, MinMemoryTarget)
	share := func(v *int64, div int64) {
		if *v <= 0 {
			*v = max(m.Target/div, 1<<20)
		}
	}
	share(&m.SpanCache, 32)
	share(&m.Indexes, 8)
	share(&m.Remote, 2)
	return m
}

// SetMemoryLimit makes the plan's target Go's soft memory limit, unless
// the GOMEMLIMIT environment variable sets one (the user's setting
// stands). It returns the limit in effect.
func SetMemoryLimit(m Plan) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(m.Target)
	return m.Target
}

func (m Plan) String() string {
	return fmt.Sprintf("memory target %d MiB (%s): inflated spans %d MiB, indexes %d MiB, remote blocks and listings %d MiB",
		m.Target>>20, m.Why, m.SpanCache>>20, m.Indexes>>20, m.Remote>>20)
}

// maxBudgetText says what the bound most (MaxBudget) is: "this machine's
// memory (15934 MiB)", or the largest size an int64 of bytes holds.
func maxBudgetText(most int64) string {
	if most < MaxMiB<<20 {
		return fmt.Sprintf("this machine's memory (%d MiB)", most>>20)
	}
	return fmt.Sprintf("the largest size npzfs counts (%d MiB)", most>>20)
}
