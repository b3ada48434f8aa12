//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMountOwner: a mount made with --owner lives no longer than its
// owner, whatever ends it (SIGKILL here), and with --rmdir its mount
// point goes too; status shows the owner meanwhile. An owner that is
// gone already is refused in one line, nothing mounted.
func TestMountOwner(t *testing.T) {
	needFuse(t)
	archive, _ := bigArchive(t, 1)
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	pid := strconv.Itoa(owner.Process.Pid)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	clearLater(t, dir)
	if r := npzfs(t, "mount", "--owner", pid, "--rmdir", archive, dir); r.code != 0 {
		t.Fatalf("mount --owner: exit %d, %q", r.code, r.stderr)
	}
	if r := npzfs(t, "status", dir); r.code != 0 || !strings.Contains(r.stdout, "owner       pid "+pid+": unmounted once it exits") {
		t.Errorf("status: exit %d, %q", r.code, r.stdout)
	}
	owner.Process.Signal(syscall.SIGKILL)
	owner.Wait()
	eventually(t, "the mount gone with its owner", func() bool { return !isMounted(dir) })
	eventually(t, "the mount point removed", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})

	other := t.TempDir()
	r := npzfs(t, "mount", "--owner", pid, archive, other)
	if r.code != 1 || !strings.Contains(r.stderr, "--owner "+pid+": no such process") || strings.Count(r.stderr, "\n") != 1 || isMounted(other) {
		t.Errorf("mount with a dead owner: exit %d, %q", r.code, r.stderr)
	}
}
