//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fstabScript runs in a private mount namespace (unshare -m), so that
// nothing it binds or mounts is seen outside it: npzfs is bound where
// mount(8)'s sanitised PATH finds it (/usr/local/sbin), and an fstab
// with one more line over /etc/fstab. It mounts with "mount -t
// fuse.npzfs" as root, then the fstab entry as the user nobody, copies
// what it reads and what /proc/mounts says into $OUT for the test to
// check, and unmounts; the trap unmounts whatever a failure left.
const fstabScript = `
set -e
trap 'umount "$MNT1" 2>/dev/null || true; umount "$MNT2" 2>/dev/null || true' EXIT
mount --bind "$BINDIR" /usr/local/sbin
mount --bind "$FSTAB" /etc/fstab

# As root, options and all.
mount -t fuse.npzfs "$ARCHIVE" "$MNT1" -o ro,allow_other,cache_mb=8,max_header_kb=64
cat "$MNT1/images.npy" > "$OUT/root-images.npy"
cat "$MNT1/labels/raw.bin" > "$OUT/root-labels.raw"
grep " $MNT1 " /proc/mounts > "$OUT/root-mounts"
umount "$MNT1"
grep -c " $MNT1 " /proc/mounts > "$OUT/root-after" || true

# An option npzfs does not know: one line, no mount.
if mount -t fuse.npzfs "$ARCHIVE" "$MNT1" -o ro,bogus_option 2> "$OUT/bogus-stderr"; then echo mounted > "$OUT/bogus-mounted"; fi
grep -c " $MNT1 " /proc/mounts > "$OUT/bogus-after" || true

# An archive that is not there: one line that says so.
if mount -t fuse.npzfs "$ARCHIVE.missing" "$MNT1" -o ro 2> "$OUT/missing-stderr"; then echo mounted > "$OUT/missing-mounted"; fi

# The fstab entry, as an ordinary user (noauto,user).
setpriv --reuid=65534 --regid=65534 --clear-groups mount "$MNT2"
setpriv --reuid=65534 --regid=65534 --clear-groups cat "$MNT2/big.npy" > "$OUT/user-big.npy"
grep " $MNT2 " /proc/mounts > "$OUT/user-mounts"
ps -o uid=,args= -C npzfs | grep -F "$MNT2" | grep -v defunct | awk '{print $1}' > "$OUT/user-daemon-uid"
setpriv --reuid=65534 --regid=65534 --clear-groups umount "$MNT2"
grep -c " $MNT2 " /proc/mounts > "$OUT/user-after" || true
`

// TestMountTypeAndFstab: "mount -t fuse.npzfs ARCHIVE MNT -o ..." and an
// /etc/fstab line with noauto,user work through fuse3's mount.fuse3 as
// they do for sshfs: as root, and as an ordinary user mounting the fstab
// entry; mount(8)'s own options (rw, dev, suid, user, noauto) are taken
// or ignored, npzfs flags are taken as options (cache_mb=8), and an
// unknown option is refused in one line.
func TestMountTypeAndFstab(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace and act as another user")
	}
	unshare := needTool(t, "unshare")
	needTool(t, "setpriv")
	needTool(t, "mount.fuse3")
	archive, arrays := testArchive(t)
	pub, pubArchive, pubBin := publicCopies(t, archive)
	binDir := filepath.Join(pub, "bin")
	out := filepath.Join(pub, "out")
	mnt1, mnt2 := filepath.Join(pub, "mnt1"), filepath.Join(pub, "mnt2")
	for _, d := range []string{binDir, out, mnt1, mnt2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(mnt2, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pubBin, filepath.Join(binDir, "npzfs")); err != nil {
		t.Fatal(err)
	}
	fstab, err := os.ReadFile("/etc/fstab")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	fstab = append(fstab, "\n"+pubArchive+" "+mnt2+" fuse.npzfs noauto,user,ro,cache_mb=8 0 0\n"...)
	fstabFile := filepath.Join(pub, "fstab")
	if err := os.WriteFile(fstabFile, fstab, 0o644); err != nil {
		t.Fatal(err)
	}
	// The user mounts through fusermount3, which needs /dev/fuse open to
	// users.
	openFuseToUsers(t)

	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", fstabScript)
	cmd.Env = append(os.Environ(), "BINDIR="+binDir, "FSTAB="+fstabFile, "ARCHIVE="+pubArchive,
		"MNT1="+mnt1, "MNT2="+mnt2, "OUT="+out)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("the mount script failed: %v\n%s%s", err, so.String(), se.String())
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return string(b)
	}
	want := map[string][]byte{}
	for _, a := range arrays {
		want[a.name] = a.data
		want[a.name+".raw"] = a.raw
	}
	if got := read("root-images.npy"); got != string(want["images.npy"]) {
		t.Errorf("images.npy through mount -t fuse.npzfs: %d bytes, want %d", len(got), len(want["images.npy"]))
	}
	if got := read("root-labels.raw"); got != string(want["labels.npy.raw"]) {
		t.Errorf("labels/raw.bin through mount -t fuse.npzfs: %d bytes, want %d", len(got), len(want["labels.npy.raw"]))
	}
	// mount(8)'s default dev and suid do not lift nosuid and nodev.
	if m := read("root-mounts"); !strings.Contains(m, pubArchive+" "+mnt1+" fuse.npzfs ro,nosuid,nodev,") || !strings.Contains(m, "allow_other") {
		t.Errorf("mount -t fuse.npzfs: /proc/mounts says %q", m)
	}
	if got := read("user-big.npy"); got != string(want["big.npy"]) {
		t.Errorf("big.npy through the fstab entry, as nobody: %d bytes, want %d", len(got), len(want["big.npy"]))
	}
	if m := read("user-mounts"); !strings.Contains(m, " fuse.npzfs ro,") || !strings.Contains(m, "user_id=65534") {
		t.Errorf("the fstab entry mounted as nobody: /proc/mounts says %q", m)
	}
	if uid := strings.TrimSpace(read("user-daemon-uid")); uid != "65534" {
		t.Errorf("the fstab entry's daemon runs as %q, want 65534", uid)
	}
	for _, f := range []string{"root-after", "bogus-after", "user-after"} {
		if n := strings.TrimSpace(read(f)); n != "0" {
			t.Errorf("%s: %s mounts left", f, n)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "bogus-mounted")); err == nil {
		t.Error("mount with an unknown option succeeded")
	}
	if _, err := os.Stat(filepath.Join(out, "missing-mounted")); err == nil {
		t.Error("mount of a missing archive succeeded")
	}
	if se := strings.TrimSpace(read("missing-stderr")); strings.Count(se, "\n") != 0 || !strings.Contains(se, "does not exist") {
		t.Errorf("mount of a missing archive: stderr %q, want one line that says so", se)
	}
	if se := strings.TrimSpace(read("bogus-stderr")); strings.Count(se, "\n") != 0 || !strings.Contains(se, `unsupported mount option "bogus_option"`) {
		t.Errorf("mount with an unknown option: stderr %q, want one line naming it", se)
	}
}
