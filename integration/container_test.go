//go:build linux

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inNamespace is a shell script that mounts an archive in the namespaces
// it runs in (logging to the folder it copies to), copies members out of
// the mount, notes the mount's line of /proc/self/mounts and unmounts. Arguments: npzfs, the archive, the
// mount point, the folder to copy to, then the members.
const inNamespace = `npzfs=$1 archive=$2 mnt=$3 out=$4
shift 4
"$npzfs" mount --log "$out/log" "$archive" "$mnt" || exit 3
rc=0
grep " $mnt fuse.npzfs " /proc/self/mounts >"$out/mounts" || rc=4
for f; do
  cat "$mnt/$f" >"$out/$(printf %s "$f" | tr / _)" || rc=4
done
"$npzfs" unmount "$mnt" || rc=5
exit $rc
`

// TestMountInContainers mounts the way a container does, with the parts
// of one that matter to a mount (namespaces, capabilities, no fuse3
// package) made by util-linux's unshare and setpriv:
//   - root given CAP_SYS_ADMIN in an image without fusermount3 (docker
//     run --cap-add SYS_ADMIN --device /dev/fuse): npzfs mounts with
//     mount(2) itself;
//   - root of a user namespace of an ordinary user's (a rootless
//     container, as podman runs them): likewise, with the capability
//     that namespace gives;
//   - root without CAP_SYS_ADMIN (docker run without --cap-add): one line
//     saying what to pass, and nothing mounted.
//
// The mounts live in the test's own mount namespaces, where the host does
// not see them; each script unmounts its own, and the cleanup stops any
// daemon left.
func TestMountInContainers(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to make the namespaces")
	}
	unshare := needTool(t, "unshare")
	setpriv := needTool(t, "setpriv")
	archive, arrays := testArchive(t)

	base, a, prog := publicCopies(t, archive)
	empty := filepath.Join(base, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, arr := range arrays {
		members = append(members, arr.name, strings.TrimSuffix(arr.name, ".npy")+"/raw.bin")
	}

	// inside runs the script through the commands via, with a mount
	// point, a folder to copy to and a home made for it, and returns the
	// folder.
	inside := func(t *testing.T, via ...string) (result, string) {
		t.Helper()
		dir, err := os.MkdirTemp(base, "run-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mnt, out, home := filepath.Join(dir, "mnt"), filepath.Join(dir, "out"), filepath.Join(dir, "home")
		for _, d := range []string{mnt, out, home} {
			if err := os.Mkdir(d, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			for _, pid := range daemons(mnt) {
				t.Errorf("a daemon for %s is left: killing it", mnt)
				syscall.Kill(pid, syscall.SIGKILL)
				waitGone(pid)
			}
		})
		args := append(append(via, "sh", "-c", inNamespace, "sh", prog, a, mnt, out), members...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home}
		return run(t, cmd), out
	}
	check := func(t *testing.T, r result, out string) {
		t.Helper()
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "mounts")); !bytes.Contains(b, []byte(" ro,nosuid,nodev,")) {
			t.Errorf("the mount: %q, want it read-only, nosuid and nodev", b)
		}
		for _, arr := range arrays {
			key := strings.TrimSuffix(arr.name, ".npy")
			for name, want := range map[string][]byte{arr.name: arr.data, key + "_raw.bin": arr.raw} {
				if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes (%v), want %d", name, len(got), err, len(want))
				}
			}
		}
	}

	t.Run("root without fusermount3", func(t *testing.T) {
		// A private mount namespace in which fusermount3 is an empty file.
		hide := `for f in /usr/bin/fusermount3 /usr/bin/fusermount /bin/fusermount3 /bin/fusermount; do
  [ -e "$f" ] && { mount --bind "$0" "$f" || exit 9; }
done
exec "$@"`
		r, out := inside(t, unshare, "--mount", "--propagation", "private", "sh", "-c", hide, empty)
		check(t, r, out)
	})

	t.Run("rootless", func(t *testing.T) {
		// Rootless containers get /dev/fuse as their user can open it.
		openFuseToUsers(t)
		r, out := inside(t, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
			unshare, "--user", "--map-root-user", "--mount", "--propagation", "private")
		check(t, r, out)
	})

	t.Run("root without CAP_SYS_ADMIN", func(t *testing.T) {
		r, _ := inside(t, setpriv, "--bounding-set", "-sys_admin")
		if r.code != 3 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "lacks CAP_SYS_ADMIN") || !strings.Contains(r.stderr, "--cap-add SYS_ADMIN") {
			t.Errorf("exit %d, stderr %q; want the script's 3 and one line naming CAP_SYS_ADMIN and --cap-add SYS_ADMIN", r.code, r.stderr)
		}
	})
}
