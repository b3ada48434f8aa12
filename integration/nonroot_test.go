//go:build linux

package integration

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the unprivileged user TestNonRootMount mounts as.
const nobody = 65534

// asNobody runs a program as the user nobody and waits for it.
func asNobody(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	return run(t, cmd)
}

// openFuseToUsers opens /dev/fuse to every user for the rest of the test
// (mode 0666, as udev sets it on desktops), where it is not already.
func openFuseToUsers(t *testing.T) {
	t.Helper()
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		t.Fatal(err)
	}
	mode := fi.Mode().Perm()
	if mode&0o006 == 0o006 {
		return
	}
	if err := os.Chmod("/dev/fuse", mode|0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Chmod("/dev/fuse", mode); err != nil {
			t.Errorf("restoring /dev/fuse to %v: %v", mode, err)
		}
	})
}

// withoutDAC is what runs a program as root without root's power to read
// and write any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), for mountVia:
// the daemon then meets the folders of other users as they are. It skips
// the test when not root.
func withoutDAC(t *testing.T) []string {
	t.Helper()
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a daemon without root's file permissions")
	}
	return []string{needTool(t, "setpriv"), "--bounding-set", "-dac_override,-dac_read_search"}
}

// TestNonRootMount mounts as an ordinary user, as most users will: the
// daemon runs as that user and mounts through the setuid fusermount3.
// Where /dev/fuse is closed to users (0600, as on this project's CI
// machine), mounting fails with one line that names it; opened to them
// (0666, as udev sets it on desktops), the user mounts, reads, is the
// owner of every file, keeps root out without allow_other, and unmounts.
// It needs root to arrange all that; run as a user, every other test
// already mounts without root.
func TestNonRootMount(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests already mount as this user")
	}
	needTool(t, "fusermount3")
	archive, arrays := testArchive(t)

	base, a, prog := publicCopies(t, archive)
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mnt, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	clearLater(t, mnt)

	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		t.Fatal(err)
	}
	mode := fi.Mode().Perm()
	if mode&0o006 != 0o006 {
		r := asNobody(t, prog, "mount", a, mnt)
		if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "/dev/fuse is not open to your user") || !strings.Contains(r.stderr, "ask an administrator") {
			t.Errorf("mount as nobody with /dev/fuse %v: exit %d, stderr %q; want 1 and one line naming /dev/fuse and what to ask for", mode, r.code, r.stderr)
		}
		if isMounted(mnt) {
			t.Fatalf("%s mounted anyway", mnt)
		}
	}
	openFuseToUsers(t)

	if r := asNobody(t, prog, "mount", a, mnt); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("mount as nobody: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	m, ok := mountOf(mnt)
	if !ok || m.FSType != "fuse.npzfs" {
		t.Fatalf("mount as nobody: %+v, %v", m, ok)
	}
	for _, pid := range daemons(mnt) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if !strings.Contains(string(b), "\nUid:\t65534\t") {
			t.Errorf("daemon %d does not run as nobody", pid)
		}
	}
	for _, arr := range arrays {
		key := strings.TrimSuffix(arr.name, ".npy")
		r := asNobody(t, "cat", filepath.Join(mnt, arr.name))
		if r.code != 0 || r.stdout != string(arr.data) {
			t.Errorf("cat %s as nobody: exit %d, %d bytes, want %d (%s)", arr.name, r.code, len(r.stdout), len(arr.data), r.stderr)
		}
		r = asNobody(t, "cat", filepath.Join(mnt, key, "raw.bin"))
		if r.code != 0 || r.stdout != string(arr.raw) {
			t.Errorf("cat %s/raw.bin as nobody: exit %d, %d bytes, want %d (%s)", key, r.code, len(r.stdout), len(arr.raw), r.stderr)
		}
		r = asNobody(t, "stat", "-c", "%u:%g %a", filepath.Join(mnt, arr.name), filepath.Join(mnt, key))
		if r.code != 0 || r.stdout != "65534:65534 444\n65534:65534 555\n" {
			t.Errorf("stat %s as nobody: exit %d: %q %s", arr.name, r.code, r.stdout, r.stderr)
		}
	}
	// Without allow_other the mount is the user's alone, root included.
	if _, err := os.ReadDir(mnt); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("root listing nobody's mount: %v, want permission denied", err)
	}

	pids := daemons(mnt)
	if r := asNobody(t, prog, "unmount", mnt); r.code != 0 || r.stderr != "" {
		t.Fatalf("unmount as nobody: exit %d, stderr %q", r.code, r.stderr)
	}
	if isMounted(mnt) {
		t.Errorf("%s still mounted after unmount", mnt)
	}
	for _, pid := range pids {
		if !waitGone(pid) {
			t.Errorf("daemon %d still running after unmount", pid)
		}
	}
}
