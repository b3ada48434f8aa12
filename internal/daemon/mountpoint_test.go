//go:build linux

package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountPath: a mount point given through links, relative or absolute,
// in its parent or as itself, is named as the mount table names it; a
// loop of links is refused.
func TestMountPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	os.Symlink("real", filepath.Join(dir, "rel"))
	os.Symlink(filepath.Join(dir, "rel"), filepath.Join(dir, "abs"))
	os.Symlink(dir, filepath.Join(dir, "up"))
	os.Symlink("loop2", filepath.Join(dir, "loop1"))
	os.Symlink("loop1", filepath.Join(dir, "loop2"))
	for in, want := range map[string]string{
		real:                              real,
		filepath.Join(dir, "rel"):         real,
		filepath.Join(dir, "abs"):         real,
		filepath.Join(dir, "up", "abs"):   real,
		filepath.Join(dir, "up", "gone"):  filepath.Join(dir, "gone"),
		filepath.Join(dir, "rel") + "/":   real,
		filepath.Join(dir, "real", "..."): filepath.Join(real, "..."),
	} {
		if got, err := MountPath(in); got != want || err != nil {
			t.Errorf("MountPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := MountPath(filepath.Join(dir, "loop1")); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("a loop of links: %v", err)
	}
}

// TestKernelFoldersRefused: a mount point in a file system the kernel
// makes up (proc, sysfs) is refused naming it; a folder of the user's
// is not.
func TestKernelFoldersRefused(t *testing.T) {
	for dir, fsType := range map[string]string{"/proc/self": "proc", "/proc": "proc", "/sys/kernel": "sysfs"} {
		if _, err := checkMountpoint(dir); err == nil || !strings.Contains(err.Error(), "it is in "+fsType+", a file system the kernel makes up") {
			t.Errorf("%s: %v; want it refused as in %s", dir, err, fsType)
		}
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := checkMountpoint(dir); got != dir || err != nil {
		t.Errorf("a folder of one's own: %q, %v", got, err)
	}
}
