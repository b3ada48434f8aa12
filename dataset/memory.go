package dataset

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// DefaultMemoryTarget is a daemon's memory target where neither the
// command line nor the memory limit of its cgroup sets a lower one. Its
// shares are the budgets npzfs has always had by default: 16 MiB of
// inflated spans, 64 MiB of checkpoint windows, 256 MiB of fetched
// blocks.
const DefaultMemoryTarget = 512 << 20

// MinMemoryTarget is the least memory target a daemon gets.
const MinMemoryTarget = 32 << 20

// cgroupShare is the part of its cgroup's memory limit a daemon takes as
// its target by default, leaving the rest for what Go's soft limit does
// not count (the program's text, the kernel's memory for its pipes and
// files).
const cgroupShare = 7.0 / 8

// Memory is a daemon's memory target and how it is shared: every cache
// and budget is sized inside it, and it is Go's soft memory limit, which
// makes the collector work harder as the heap nears it instead of letting
// the heap grow to twice what is live. What no budget bounds (requests in
// flight and their buffers, spans being inflated, central directories of
// open archives, the collector's headroom) lives in what the shares leave
// free: at least 3/8 of the target.
type Memory struct {
	Target    int64 // bytes
	SpanCache int64 // inflated spans (npz.Options.CacheBytes): 1/32 of Target
	Indexes   int64 // checkpoints' windows (npz.Options.IndexBytes): 1/8
	Remote    int64 // a remote archive's fetched blocks: 1/2
	// Why says where Target comes from, for the log.
	Why string
}

// PlanMemory completes want: each budget set (non-zero) is kept, each
// other gets its share of the target. The target is want.Target when set;
// otherwise DefaultMemoryTarget, or 7/8 of the memory limit of the
// process's cgroup (v2 or v1, the lowest on its path) where that is less,
// raised to twice the budgets set when they take more than half of it. A
// target set below the budgets set is an error.
func PlanMemory(want Memory) (Memory, error) {
	m := want
	set := m.SpanCache + m.Indexes + m.Remote
	switch {
	case m.Target > 0:
		if set > m.Target {
			return m, fmt.Errorf("the memory target of %d MiB is less than the budgets given (%d MiB)", m.Target>>20, set>>20)
		}
		m.Why = "as given"
	default:
		m.Target, m.Why = DefaultMemoryTarget, "the default"
		if limit := CgroupMemoryLimit(); limit > 0 && int64(float64(limit)*cgroupShare) < m.Target {
			m.Target = int64(float64(limit) * cgroupShare)
			m.Why = fmt.Sprintf("7/8 of the cgroup's limit of %d MiB", limit>>20)
		}
		if 2*set > m.Target {
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
	return m, nil
}

func (m Memory) String() string {
	return fmt.Sprintf("memory target %d MiB (%s): inflated spans %d MiB, indexes %d MiB, remote blocks %d MiB",
		m.Target>>20, m.Why, m.SpanCache>>20, m.Indexes>>20, m.Remote>>20)
}

// SetMemoryLimit makes the target Go's soft memory limit, unless the
// GOMEMLIMIT environment variable sets one (the user's setting stands).
// It returns the limit in effect.
func (m Memory) SetMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(m.Target)
	return m.Target
}

// CgroupMemoryLimit is the memory limit of the process's cgroup in bytes:
// the lowest of memory.max and memory.high (cgroup v2) or
// memory.limit_in_bytes (v1) of its cgroup and those above it; 0 when
// there is none, or none can be read.
func CgroupMemoryLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return cgroupLimit(string(b), mountinfo.Read())
}

// cgroupLimit is CgroupMemoryLimit for the text of /proc/self/cgroup and
// the mount table.
func cgroupLimit(cgroups string, mounts []mountinfo.Entry) int64 {
	var lowest int64
	for _, line := range strings.Split(cgroups, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var files []string
		var fsType, controller string
		switch {
		case f[0] == "0" && f[1] == "":
			fsType, files = "cgroup2", []string{"memory.max", "memory.high"}
		case hasOption(f[1], "memory"):
			fsType, controller, files = "cgroup", "memory", []string{"memory.limit_in_bytes"}
		default:
			continue
		}
		for _, mt := range mounts {
			if mt.FSType != fsType || (controller != "" && !hasOption(mt.Super, controller)) {
				continue
			}
			rel, ok := below(f[2], mt.Root)
			if !ok {
				continue // the process's cgroup is not in what is mounted there
			}
			// From the process's cgroup up to the mount's top.
			for p := rel; ; p = path.Dir(p) {
				for _, name := range files {
					if v := readLimit(filepath.Join(mt.Dir, p, name)); v > 0 && (lowest == 0 || v < lowest) {
						lowest = v
					}
				}
				if p == "/" {
					break
				}
			}
			break
		}
	}
	return lowest
}

// below returns the cgroup p as a path from root, the cgroup mounted,
// if p is root or below it.
func below(p, root string) (string, bool) {
	p, root = path.Clean("/"+p), path.Clean("/"+root)
	switch {
	case root == "/":
		return p, true
	case p == root:
		return "/", true
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	return "/" + rest, ok
}

// hasOption reports whether the comma-separated list opts holds o.
func hasOption(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup's memory limit file: a number of bytes, "max"
// or (v1) a number too large to be a limit for none, which give 0.
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 {
		return 0
	}
	return v
}
