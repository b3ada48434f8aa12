package memplan

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// CgroupLimit is the memory limit of the process's cgroup in bytes:
// the lowest of memory.max and memory.high (cgroup v2) or
// memory.limit_in_bytes (v1) of its cgroup and those above it; 0 when
// there is none, or none can be read.
func CgroupLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return cgroupLimit(string(b), mountinfo.Read())
}

// cgroupLimit is CgroupLimit for the text of /proc/self/cgroup and
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
