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
	var w watcher
	return w.limit()
}

// watcher reads the memory limit of the process's cgroup again and
// again, cheaply: /proc/self/cgroup and the limit files, and the mount
// table only when the process's cgroups are others than the last time.
type watcher struct {
	cgroups string   // the text of /proc/self/cgroup last read
	files   []string // the limit files on its cgroups' paths
	// read reads a file, mounts the mount table (os.ReadFile,
	// mountinfo.Read when nil).
	read   func(string) ([]byte, error)
	mounts func() []mountinfo.Entry
}

// limit is CgroupLimit, now.
func (w *watcher) limit() int64 {
	read, mounts := w.read, w.mounts
	if read == nil {
		read, mounts = os.ReadFile, mountinfo.Read
	}
	b, err := read("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	if string(b) != w.cgroups || w.files == nil {
		w.cgroups, w.files = string(b), limitFiles(string(b), mounts())
	}
	return lowest(w.files, read)
}

// cgroupLimit is CgroupLimit for the text of /proc/self/cgroup and
// the mount table.
func cgroupLimit(cgroups string, mounts []mountinfo.Entry) int64 {
	return lowest(limitFiles(cgroups, mounts), os.ReadFile)
}

// lowest is the lowest of the limits in files, read with read; 0 where
// none sets one.
func lowest(files []string, read func(string) ([]byte, error)) int64 {
	var low int64
	for _, f := range files {
		if v := readLimit(f, read); v > 0 && (low == 0 || v < low) {
			low = v
		}
	}
	return low
}

// limitFiles are the memory limit files of the cgroups in cgroups (the
// text of /proc/self/cgroup) and of those above them, as mounts (the
// mount table) has them mounted: never nil.
func limitFiles(cgroups string, mounts []mountinfo.Entry) []string {
	files := []string{}
	for _, line := range strings.Split(cgroups, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var names []string
		var fsType, controller string
		switch {
		case f[0] == "0" && f[1] == "":
			fsType, names = "cgroup2", []string{"memory.max", "memory.high"}
		case hasOption(f[1], "memory"):
			fsType, controller, names = "cgroup", "memory", []string{"memory.limit_in_bytes"}
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
				for _, name := range names {
					files = append(files, filepath.Join(mt.Dir, p, name))
				}
				if p == "/" {
					break
				}
			}
			break
		}
	}
	return files
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

// readLimit reads a cgroup's memory limit file with read: a number of
// bytes, "max" or (v1) a number too large to be a limit for none, which
// give 0.
func readLimit(file string, read func(string) ([]byte, error)) int64 {
	b, err := read(file)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 {
		return 0
	}
	return v
}
