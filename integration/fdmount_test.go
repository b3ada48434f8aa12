//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// handFUSE plays the privileged process of a container runtime or CSI
// driver: it opens /dev/fuse, mounts it on dir with mount(2) as type
// fuse.npzfs, and returns the device, to be handed to npzfs as
// /dev/fd/N. The test's cleanup unmounts dir, as that process would.
func handFUSE(t *testing.T, source, dir string) *os.File {
	t.Helper()
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", dev.Fd())
	if err := syscall.Mount(source, dir, "fuse.npzfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_RDONLY, opts); err != nil {
		dev.Close()
		t.Fatalf("mount(2) of /dev/fuse on %s: %v", dir, err)
	}
	useDir(dir)
	t.Cleanup(func() {
		if isMounted(dir) {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dev
}

// needHanding fails the test (under NPZFS_REQUIRE_FUSE=1) or skips it
// where FUSE or root is missing: handFUSE's mount(2) needs both.
func needHanding(t *testing.T) {
	t.Helper()
	needFuse(t)
	if os.Geteuid() != 0 {
		if requireFuse() {
			t.Fatal("mount(2) of /dev/fuse needs root (NPZFS_REQUIRE_FUSE=1)")
		}
		t.Skip("mount(2) of /dev/fuse needs root")
	}
}

// handedCopies makes a folder of our own that the user nobody can
// reach, named after what, holding the program and a copy of the
// archive src, whose paths name the test's daemons alone; it returns the
// folder and the paths of both.
func handedCopies(t *testing.T, src, what string) (base, prog, archive string) {
	t.Helper()
	base, err := os.MkdirTemp("", "npzfs-"+what+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	prog, archive = filepath.Join(base, "npzfs"), filepath.Join(base, what+".npz")
	for _, c := range [][2]string{{bin, prog}, {src, archive}} {
		b, err := os.ReadFile(c[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c[1], b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base, prog, archive
}

// TestMountHandedFD: npzfs mount ARCHIVE /dev/fd/N serves a FUSE device
// that another process opened and mounted, with no fusermount3 and no
// mount of its own: it reads the arrays exactly through that process's
// folder; npzfs unmount by a user who may not unmount it says who must;
// the mount's owner (root here) unmounts it and the daemon exits. A
// daemon stopped by SIGTERM leaves the folder for its owner to unmount.
func TestMountHandedFD(t *testing.T) {
	needHanding(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // this test's daemons alone
	shared, arrays := testArchive(t)
	_, prog, archive := handedCopies(t, shared, "handed")
	for _, fg := range []bool{false, true} {
		t.Run(fmt.Sprintf("foreground=%v", fg), func(t *testing.T) {
			dir := t.TempDir()
			dev := handFUSE(t, archive, dir)
			args := []string{"mount", archive, "/dev/fd/3"}
			if fg {
				args = []string{"mount", "-f", archive, "/dev/fd/3"}
			}
			cmd := exec.Command(prog, args...)
			cmd.ExtraFiles = []*os.File{dev} // fd 3 in npzfs
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if fg {
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
			} else if err := cmd.Run(); err != nil {
				t.Fatalf("npzfs %s: %v: %s", strings.Join(args, " "), err, stderr.String())
			}
			dev.Close() // the daemon holds it now, alone
			pids := processesOf(prog, archive)
			if len(pids) != 1 {
				t.Fatalf("daemons serving %s: %v", archive, pids)
			}
			handedReads(t, dir, arrays)
			if !fg {
				handedUnmount(t, prog, dir, pids[0])
				return
			}
			// SIGTERM: the daemon stops; the folder is its owner's to
			// unmount.
			syscall.Kill(pids[0], syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("npzfs -f after SIGTERM: %v: %s", err, stderr.String())
			}
			var st syscall.Stat_t
			if err := syscall.Stat(dir, &st); !errors.Is(err, syscall.ENOTCONN) {
				t.Errorf("stat of the folder after the daemon stopped: %v, want ENOTCONN", err)
			}
			if !isMounted(dir) {
				t.Errorf("%s was unmounted by the daemon, which did not mount it", dir)
			}
			if err := syscall.Unmount(dir, 0); err != nil {
				t.Errorf("unmount by its owner: %v", err)
			}
		})
	}
}

// handedReads reads every array of the handed mount on dir, and its
// raw.bin, against what it holds.
func handedReads(t *testing.T, dir string, arrays []arrayMember) {
	t.Helper()
	for _, a := range arrays {
		got, err := os.ReadFile(filepath.Join(dir, a.name))
		if err != nil || !bytes.Equal(got, a.data) {
			t.Errorf("%s: %d bytes, %v; equal %v", a.name, len(got), err, bytes.Equal(got, a.data))
		}
		got, err = os.ReadFile(filepath.Join(dir, strings.TrimSuffix(a.name, ".npy"), "raw.bin"))
		if err != nil || !bytes.Equal(got, a.raw) {
			t.Errorf("%s raw.bin: %d bytes, %v", a.name, len(got), err)
		}
	}
}

// handedUnmount checks that npzfs status names the handed mount where the
// helper put it, once (its daemon, pid, answers for that folder); that
// npzfs unmount by nobody says who must unmount it; and that root's
// unmount ends the daemon.
func handedUnmount(t *testing.T, prog, dir string, pid int) {
	t.Helper()
	r := npzfs(t, "status", "--json")
	var doc struct{ Mounts []statusOf }
	json.Unmarshal([]byte(r.stdout), &doc)
	var ours []statusOf
	for _, st := range doc.Mounts {
		if st.Mountpoint == dir || strings.HasPrefix(st.Mountpoint, "/dev/fd/") {
			ours = append(ours, st)
		}
	}
	if len(ours) != 1 || ours[0].Mountpoint != dir || !ours[0].Answering || ours[0].PID != pid {
		t.Errorf("npzfs status --json: the handed mount as %+v; want it once, on %s, answering from pid %d", ours, dir, pid)
	}
	r = asNobody(t, prog, "unmount", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "was mounted for user 0, not you") || !strings.Contains(r.stderr, "/dev/fd/N") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("npzfs unmount as nobody: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("npzfs unmount as root: exit %d: %s", r.code, r.stderr)
	}
	if !waitGone(pid) {
		t.Errorf("daemon %d still serving after its folder was unmounted", pid)
	}
}
