//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// TestConcurrentMountsOnOneMountPoint: mounts started together on one
// mount point do not stack: exactly one succeeds, every other says in one
// line that the folder is already mounted.
func TestConcurrentMountsOnOneMountPoint(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	dir := t.TempDir()
	clearLater(t, dir)
	const n = 10
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = npzfs(t, "mount", archive, dir)
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch r.code {
		case 0:
			ok++
		case 1:
			if !strings.Contains(r.stderr, "already mounted") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("a losing mount says %q, want one line saying it is already mounted", r.stderr)
			}
		default:
			t.Errorf("mount: exit %d: %s", r.code, r.stderr)
		}
	}
	stacked := 0
	for _, m := range mountinfo.Read() {
		if m.Dir == dir {
			stacked++
		}
	}
	if ok != 1 || stacked != 1 {
		t.Errorf("%d of %d mounts succeeded and %d are on %s; want exactly one", ok, n, stacked, dir)
	}
}

// TestUnmountClearsAStack: npzfs unmount removes every npzfs mount stacked
// on the mount point, not only the top one.
func TestUnmountClearsAStack(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	other := mount(t, archive)
	// A second npzfs mount on top of the first (npzfs itself no longer
	// stacks two, but a race before it locked did).
	if out, err := exec.Command("mount", "--bind", other, dir).CombinedOutput(); err != nil {
		t.Fatalf("cannot bind-mount to make a stack: %v: %s", err, out)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 || r.stderr != "" {
		t.Fatalf("unmount of a stack: exit %d: %s", r.code, r.stderr)
	}
	for _, m := range mountinfo.Read() {
		if m.Dir == dir {
			t.Errorf("%s still has a %s mount after unmount", dir, m.FSType)
		}
	}
	if !isMounted(other) {
		t.Errorf("unmounting the stack on %s took %s with it", dir, other)
	}
}

// TestUnmountStoppedDaemon: npzfs unmount does not wait on the daemon it
// removes: with the daemon stopped (SIGSTOP) and nothing of the mount in
// the kernel's caches, it still returns and the mount is gone.
func TestUnmountStoppedDaemon(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	pids := daemons(dir)
	if len(pids) != 1 {
		t.Fatalf("daemons for %s: %v, want one", dir, pids)
	}
	pid := pids[0]
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(pid, syscall.SIGCONT)
		if !waitGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid)
		}
	}()
	// Forget the mount's dentries and inodes, so that anything that
	// looks at the mount point has to ask the daemon.
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0)
	// The deadline only keeps a regression from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := run(t, exec.CommandContext(ctx, bin, "unmount", dir))
	if ctx.Err() != nil {
		t.Fatal("npzfs unmount waited on the stopped daemon")
	}
	if r.code != 0 {
		t.Errorf("unmount with the daemon stopped: exit %d: %s", r.code, r.stderr)
	}
	if isMounted(dir) {
		t.Errorf("%s still mounted", dir)
	}
}

// TestUnmountNamesInnerMount: a mount with another mount inside it is
// busy, and the message names the inner one.
func TestUnmountNamesInnerMount(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	inner := dir + "/labels" // a folder of the mount: the views of labels.npy
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", inner).CombinedOutput(); err != nil {
		t.Fatalf("cannot mount a tmpfs inside the mount: %v: %s", err, out)
	}
	defer syscall.Unmount(inner, syscall.MNT_DETACH)
	r := npzfs(t, "unmount", dir)
	if r.code != 1 || !strings.Contains(r.stderr, inner+" is mounted inside it") {
		t.Errorf("unmount with a mount inside: exit %d: %q; want exit 1 naming %s", r.code, r.stderr, inner)
	}
	if err := syscall.Unmount(inner, 0); err != nil {
		t.Fatal(err)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Errorf("unmount after the inner one: exit %d: %s", r.code, r.stderr)
	}
}

// TestUnmountWaitsForTheDaemon: npzfs unmount returns once the daemon of
// the mount it removed has exited (its log closed, its files written), so
// that what runs next sees it gone.
func TestUnmountWaitsForTheDaemon(t *testing.T) {
	archive, _ := testArchive(t)
	for range 3 {
		dir := mount(t, archive)
		pids := daemons(dir)
		if len(pids) != 1 {
			t.Fatalf("daemons for %s: %v, want one", dir, pids)
		}
		if r := npzfs(t, "unmount", dir); r.code != 0 || r.stderr != "" {
			t.Fatalf("unmount: exit %d: %s", r.code, r.stderr)
		}
		if processAlive(pids[0]) {
			t.Errorf("the daemon (pid %d) of %s still runs after npzfs unmount returned", pids[0], dir)
		}
	}
}

// TestMountThroughALink: a mount point named through a symbolic link is
// mounted on the folder the link leads to; status and unmount find it by
// the link as by the folder.
func TestMountThroughALink(t *testing.T) {
	archive, _ := testArchive(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	os.Mkdir(real, 0o755)
	os.Symlink("real", link)
	clearLater(t, real)
	if r := npzfs(t, "mount", archive, link); r.code != 0 {
		t.Fatalf("mount on a link: exit %d: %s", r.code, r.stderr)
	}
	if !isMounted(real) {
		t.Fatalf("%s is not mounted", real)
	}
	if r := npzfs(t, "status", link); r.code != 0 || !strings.HasPrefix(r.stdout, real+": "+archive+" (archive)") {
		t.Errorf("status of the link: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if r := npzfs(t, "unmount", link); r.code != 0 || r.stderr != "" || isMounted(real) {
		t.Errorf("unmount of the link: exit %d, %q; mounted: %v", r.code, r.stderr, isMounted(real))
	}
}
