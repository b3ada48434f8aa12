//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// TestMountRefusesAnUnwritableLog: a log that takes no line (/dev/full)
// would lose every message of the mount: npzfs mount says so in one line,
// exits 1 and leaves nothing mounted and no daemon, whether the log is
// given as a flag or a mount option, detached or in the foreground.
func TestMountRefusesAnUnwritableLog(t *testing.T) {
	needFuse(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("no /dev/full to log to: %v", err)
	}
	archive, _ := testArchive(t)
	for _, flags := range [][]string{
		{"--log", "/dev/full"},
		{"-o", "ro,log=/dev/full"},
		{"-f", "--log=/dev/full"},
	} {
		dir := t.TempDir()
		clearLater(t, dir)
		what := strings.Join(flags, " ")
		r := npzfs(t, append(append([]string{"mount"}, flags...), archive, dir)...)
		oneLine(t, what, r, 1)
		if want := "cannot write to the log /dev/full: no space left on device"; !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %q does not say %q", what, r.stderr, want)
		}
		if isMounted(dir) {
			t.Errorf("%s: mounted", what)
		}
		if pids := daemons(dir); len(pids) > 0 {
			t.Errorf("%s: daemons left behind: %v", what, pids)
		}
	}
}

// TestMountRefusesKernelFolders: a mount point is resolved by the
// command, as its user means it (/proc/self is the command, not the
// daemon), and one in a file system the kernel makes up (/proc, /sys,
// /dev) is refused in one line naming it, with nothing mounted.
func TestMountRefusesKernelFolders(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	link := filepath.Join(t.TempDir(), "self")
	if err := os.Symlink("/proc/self", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, fsType string }{
		{"/proc/self", "proc"},
		{link, "proc"},
		{"/sys/kernel", "sysfs"},
	} {
		before := npzfsMounts()
		r := npzfs(t, "mount", archive, c.dir)
		oneLine(t, c.dir, r, 1)
		if want := fmt.Sprintf(": it is in %s, a file system the kernel makes up", c.fsType); !strings.Contains(r.stderr, "cannot mount on /") || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %q does not say %q", c.dir, r.stderr, want)
		}
		if c.fsType == "proc" && strings.Contains(r.stderr, "/proc/self") {
			t.Errorf("%s: the mount point was not resolved by the command: %q", c.dir, r.stderr)
		}
		if after := npzfsMounts(); after != before {
			t.Errorf("%s: npzfs mounts under /proc or /sys went from %d to %d", c.dir, before, after)
		}
	}
}

// npzfsMounts counts the npzfs mounts in /proc and /sys.
func npzfsMounts() int {
	n := 0
	for _, m := range mountinfo.Read() {
		if strings.HasPrefix(m.FSType, "fuse.npzfs") && (strings.HasPrefix(m.Dir, "/proc/") || strings.HasPrefix(m.Dir, "/sys/")) {
			n++
		}
	}
	return n
}
