package memplan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// writeLimits writes limit files under dir: path -> contents.
func writeLimits(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCgroupLimit: the lowest limit on the process's cgroup's path to the
// top of its hierarchy, for cgroup v2 (memory.max, memory.high), v1
// (memory.limit_in_bytes, whose "unlimited" is a huge number) and both
// at once; a hierarchy mounted from below the root (a container's) is
// read from there; none is 0.
func TestCgroupLimit(t *testing.T) {
	v2, v1 := t.TempDir(), t.TempDir()
	writeLimits(t, v2, map[string]string{
		"memory.max":       "max",
		"a/memory.max":     "1073741824",
		"a/b/memory.max":   "max",
		"a/b/memory.high":  "805306368",
		"a/b/c/memory.max": "max",
		"other/memory.max": "1048576",
		"x/memory.max":     "536870912",
		"x/y/memory.max":   "garbage",
	})
	writeLimits(t, v1, map[string]string{
		"memory.limit_in_bytes":     "9223372036854771712",
		"p/memory.limit_in_bytes":   "9223372036854771712",
		"p/q/memory.limit_in_bytes": "268435456",
	})
	cg2 := mountinfo.Entry{Dir: v2, Root: "/", FSType: "cgroup2", Super: "rw,nsdelegate"}
	cg1 := mountinfo.Entry{Dir: v1, Root: "/", FSType: "cgroup", Super: "rw,memory"}
	cpu := mountinfo.Entry{Dir: "/nonexistent", Root: "/", FSType: "cgroup", Super: "rw,cpu"}
	// A container's view: its cgroup's folder mounted as the top.
	inner := mountinfo.Entry{Dir: filepath.Join(v2, "x"), Root: "/x", FSType: "cgroup2"}
	for _, c := range []struct {
		name    string
		cgroups string
		mounts  []mountinfo.Entry
		want    int64
	}{
		{"v2, high below max", "0::/a/b/c\n", []mountinfo.Entry{cg2}, 805306368},
		{"v2, an ancestor's", "0::/a\n", []mountinfo.Entry{cg2}, 1073741824},
		{"v2, none", "0::/\n", []mountinfo.Entry{cg2}, 0},
		{"v2, unreadable files", "0::/x/y\n", []mountinfo.Entry{cg2}, 536870912},
		{"v2 not mounted", "0::/a\n", nil, 0},
		{"v1", "4:memory:/p/q\n3:cpu:/\n", []mountinfo.Entry{cpu, cg1}, 268435456},
		{"v1, unlimited", "4:memory:/p\n", []mountinfo.Entry{cg1}, 0},
		{"v1 combined controllers", "4:cpu,memory:/p/q\n", []mountinfo.Entry{{Dir: v1, Root: "/", FSType: "cgroup", Super: "rw,cpu,memory"}}, 268435456},
		{"hybrid: the lower", "0::/a/b/c\n4:memory:/p/q\n", []mountinfo.Entry{cg2, cg1}, 268435456},
		{"mounted from below the root", "0::/x/y\n", []mountinfo.Entry{inner}, 536870912},
		{"not below the mounted root", "0::/xy\n", []mountinfo.Entry{inner}, 0},
	} {
		if got := cgroupLimit(c.cgroups, c.mounts); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestWatcher: a watcher follows its limit files as they change,
// reading the mount table again only when the process's cgroups change.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	writeLimits(t, dir, map[string]string{"a/memory.max": "max", "b/memory.max": "268435456"})
	cgroups := "0::/a\n"
	var mounts int
	w := watcher{
		read: func(name string) ([]byte, error) {
			if name == "/proc/self/cgroup" {
				return []byte(cgroups), nil
			}
			return os.ReadFile(name)
		},
		mounts: func() []mountinfo.Entry {
			mounts++
			return []mountinfo.Entry{{Dir: dir, Root: "/", FSType: "cgroup2"}}
		},
	}
	if got := w.limit(); got != 0 {
		t.Errorf("no limit: %d", got)
	}
	writeLimits(t, dir, map[string]string{"a/memory.max": "536870912"})
	if got := w.limit(); got != 512<<20 || mounts != 1 {
		t.Errorf("a limit set: %d, %d readings of the mount table", got, mounts)
	}
	cgroups = "0::/b\n" // moved
	if got := w.limit(); got != 256<<20 || mounts != 2 {
		t.Errorf("moved: %d, %d readings of the mount table", got, mounts)
	}
}
