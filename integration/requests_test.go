//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requests is the mount's FUSE requests so far, by kind, as npzfs
// status --json gives them.
func requests(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	r := npzfs(t, "status", "--json", dir)
	var doc struct {
		Mounts []struct {
			Served struct{ Requests map[string]int64 }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil || len(doc.Mounts) != 1 {
		t.Fatalf("npzfs status --json %s: exit %d, %v, stdout %q, stderr %q", dir, r.code, err, r.stdout, r.stderr)
	}
	return doc.Mounts[0].Served.Requests
}

// sent is what after holds past before: the requests sent between them.
func sent(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, n := range after {
		if n > before[k] {
			d[k] = n - before[k]
		}
	}
	return d
}

// pyLoads runs np.load of each path, in one Python process.
func pyLoads(t *testing.T, paths ...string) {
	t.Helper()
	cmd := exec.Command(python, "-c", "import sys, numpy as np\nfor p in sys.argv[1:]: np.load(p)", "--")
	cmd.Args = append(cmd.Args[:3], paths...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("np.load: %v\n%s", err, out)
	}
}

// pyVersion is the interpreter's (major, minor).
func pyVersion(t *testing.T) (int, int) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import sys; print(*sys.version_info[:2])").Output()
	var major, minor int
	if err == nil {
		_, err = fmt.Sscan(string(out), &major, &minor)
	}
	if err != nil {
		t.Fatalf("python's version: %v %q", err, out)
	}
	return major, minor
}

// TestSmallLoadRequests: np.load of a small member makes the requests
// DESIGN.md says ("What each request costs"). Before 3.14, Python's open()
// asks isatty of the file, and the kernel forwards that ioctl: on a fresh
// mount a load is a lookup and the ioctl, whose answer pushes the file's
// bytes so that no read follows; after a listing that looked every name
// up (ls -l) the lookup is gone too. Python 3.14 asks no isatty of a
// regular file: its read takes the ioctl's place. A listing of names
// alone (os.listdir, ls) gives the kernel no attributes past its first
// reply, so a load after it costs what it costs on a fresh mount, never
// more; with --list-attrs every reply gives the files' attributes, and
// a load after any listing makes no lookup. The first load on a mount
// also meets the open and the flush the kernel then stops sending
// (answered ENOSYS), so each mount is warmed by one load first.
func TestSmallLoadRequests(t *testing.T) {
	needNumpy(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // this test's daemons alone
	archive := manyArrays(t, 1000)           // 3,000 names in the root: listings take several replies
	open := "ioctl"
	if major, minor := pyVersion(t); major > 3 || major == 3 && minor >= 14 {
		open = "read"
	}
	fresh, listed := map[string]int64{"lookup": 1, open: 1}, map[string]int64{open: 1}
	listdir := []string{python, "-c", "import os, sys; os.listdir(sys.argv[1])"}
	for _, tc := range []struct {
		listing string
		flags   []string
		cmd     []string
		want    map[string]int64
	}{
		{"none", nil, nil, fresh},
		{"os.listdir", nil, listdir, fresh},
		{"ls", nil, []string{"ls"}, fresh},
		{"ls -l", nil, []string{"ls", "-l"}, listed},
		{"none", []string{"--list-attrs"}, nil, fresh},
		{"os.listdir", []string{"--list-attrs"}, listdir, listed},
		{"ls", []string{"--list-attrs"}, []string{"ls"}, listed},
		{"ls -l", []string{"--list-attrs"}, []string{"ls", "-l"}, listed},
	} {
		name := tc.listing
		if tc.flags != nil {
			name = "list-attrs " + name
		}
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			dir := mount(t, archive, tc.flags...)
			pyLoads(t, filepath.Join(dir, "a000000.npy"))
			if tc.cmd != nil {
				if out, err := exec.Command(tc.cmd[0], append(tc.cmd[1:], dir)...).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v %.200s", tc.listing, err, out)
				}
			}
			before := requests(t, dir)
			// The last members, past the listing's first reply.
			pyLoads(t, filepath.Join(dir, "a000998.npy"))
			if got := sent(before, requests(t, dir)); !maps.Equal(got, tc.want) {
				t.Errorf("np.load after listing %s: requests %v, want %v", tc.listing, got, tc.want)
			}
			before = requests(t, dir)
			pyLoads(t, filepath.Join(dir, "a000999.npy"), filepath.Join(dir, "a000997.npy"))
			want := maps.Clone(tc.want)
			for k := range want {
				want[k] *= 2
			}
			if got := sent(before, requests(t, dir)); !maps.Equal(got, want) {
				t.Errorf("two np.loads after listing %s: requests %v, want %v", tc.listing, got, want)
			}
		})
	}
}

// TestListAttrsLongListing: with --list-attrs, a plain listing (ls -f)
// gives the attributes of the files that cost no read and makes no
// lookup, and ls -l, which stats each name as it lists, gets every
// attribute from the first reply after its first lookups to the end: a
// few lookups, not one for every folder and view its listing left bare.
// After ls, whose listing the kernel keeps without the folders' and
// views' attributes until ls -l's first lookup drops it, ls -l makes no
// more lookups than without the flag (those of the names it had from
// the kept listing before it was dropped).
func TestListAttrsLongListing(t *testing.T) {
	const arrays = 2000 // 6,000 names: dozens of replies
	archive := manyArrays(t, arrays)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // this test's daemons alone
	// listing mounts the archive, with flags, runs each command of
	// cmds, and reports the requests the last one made.
	listing := func(t *testing.T, flags []string, cmds ...[]string) map[string]int64 {
		t.Helper()
		dir := mount(t, archive, flags...)
		var before map[string]int64
		for _, c := range cmds {
			before = requests(t, dir)
			out, err := exec.Command(c[0], append(c[1:], dir)...).Output()
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if n := strings.Count(string(out), "\n"); n < 3*arrays {
				t.Errorf("%s listed %d lines, want %d names", c, n, 3*arrays)
			}
		}
		got := sent(before, requests(t, dir))
		t.Logf("%s %s: %v", flags, cmds[len(cmds)-1], got)
		return got
	}
	flag := []string{"--list-attrs"}
	ls, lsf, lsl := []string{"ls"}, []string{"ls", "-f"}, []string{"ls", "-l"}
	t.Run("ls_-f", func(t *testing.T) {
		got := listing(t, flag, lsf)
		if got["readdirplus"] == 0 || got["readdir"] != 0 || got["lookup"] != 0 {
			t.Errorf("ls -f: requests %v, want every reply with attributes and no lookup", got)
		}
	})
	t.Run("ls_-l", func(t *testing.T) {
		got := listing(t, flag, lsl)
		// ls -l looks up the bare names of the first plain reply
		// (about 3*arrays/replies), after which every reply is full.
		if n := got["readdirplus"]; n == 0 || got["readdir"] != 0 || got["lookup"] > 3*arrays/n {
			t.Errorf("ls -l: requests %v, want every reply with attributes and at most %d lookups", got, 3*arrays/max(n, 1))
		}
	})
	t.Run("ls_-l_after_ls", func(t *testing.T) {
		got, without := listing(t, flag, ls, lsl), listing(t, nil, ls, lsl)
		if got["lookup"] > without["lookup"] {
			t.Errorf("ls -l after ls: %d lookups, %d without --list-attrs", got["lookup"], without["lookup"])
		}
	})
}
