//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestListAndExactSizes(t *testing.T) {
	archive, arrays := testArchive(t)
	dir := mount(t, archive)

	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"big", "big.npy", "big.ra", "images", "images.npy", "images.ra", "labels", "labels.npy", "labels.ra"}
	if !slices.Equal(names, want) {
		t.Fatalf("ls %s: %q, want %q", dir, names, want)
	}
	for _, a := range arrays {
		base := strings.TrimSuffix(a.name, ".npy")
		sub, err := os.ReadDir(filepath.Join(dir, base))
		if err != nil {
			t.Fatal(err)
		}
		var subNames []string
		for _, e := range sub {
			subNames = append(subNames, e.Name())
		}
		if !slices.Equal(subNames, []string{"header.json", "raw.bin"}) {
			t.Errorf("ls %s: %q", base, subNames)
		}
		// The very first stat of each file gives its exact size.
		for p, size := range map[string]int64{a.name: int64(len(a.data)), base + "/raw.bin": int64(len(a.raw))} {
			fi, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != size {
				t.Errorf("%s: size %d, want %d", p, fi.Size(), size)
			}
		}
		hj, err := os.ReadFile(filepath.Join(dir, base, "header.json"))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(dir, base, "header.json"))
		if fi.Size() != int64(len(hj)) {
			t.Errorf("%s/header.json: stat says %d bytes, read gives %d", base, fi.Size(), len(hj))
		}
	}
}

func TestCatEqualsMember(t *testing.T) {
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	for _, a := range arrays {
		base := strings.TrimSuffix(a.name, ".npy")
		for pass := 0; pass < 2; pass++ { // the second read comes from the page cache
			got, err := exec.Command("cat", filepath.Join(dir, a.name)).Output()
			if err != nil || !bytes.Equal(got, a.data) {
				t.Errorf("cat %s (pass %d): %d bytes, err %v; equal %v", a.name, pass, len(got), err, bytes.Equal(got, a.data))
			}
			got, err = os.ReadFile(filepath.Join(dir, base, "raw.bin"))
			if err != nil || !bytes.Equal(got, a.raw) {
				t.Errorf("read %s/raw.bin (pass %d): %d bytes, err %v; equal %v", base, pass, len(got), err, bytes.Equal(got, a.raw))
			}
		}
	}
}

func TestRandomReadsFromTheEnd(t *testing.T) {
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	for _, a := range arrays {
		base := strings.TrimSuffix(a.name, ".npy")
		f, err := os.Open(filepath.Join(dir, base, "raw.bin"))
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(a.raw))
		// Backwards, so deflated members are read against the grain.
		for _, off := range []int64{size - 1, size - 4097, size * 3 / 4, size / 2, 1, 0, size, size + 10} {
			if off < 0 {
				continue
			}
			buf := make([]byte, 5000)
			n, err := f.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				t.Errorf("%s: pread at %d: %v", base, off, err)
				continue
			}
			lo, hi := min(off, size), min(off+5000, size)
			if !bytes.Equal(buf[:n], a.raw[lo:hi]) {
				t.Errorf("%s: pread at %d: %d bytes differ from the array data", base, off, n)
			}
		}
		f.Close()
	}
}

func TestOdOnRawBin(t *testing.T) {
	od := needTool(t, "od")
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	a := arrays[0] // images, float32
	got, err := exec.Command(od, "-A", "d", "-t", "f4", "-N", "16", filepath.Join(dir, "images", "raw.bin")).Output()
	if err != nil {
		t.Fatal(err)
	}
	// The same od on a plain file with the array's bytes.
	ref := filepath.Join(t.TempDir(), "raw.bin")
	os.WriteFile(ref, a.raw, 0o644)
	want, err := exec.Command(od, "-A", "d", "-t", "f4", "-N", "16", ref).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("od on raw.bin:\n%s\nwant:\n%s", got, want)
	}
	// And the values are the array's: -100, -99.75, -99.5, -99.25.
	f := strings.Fields(strings.SplitN(string(got), "\n", 2)[0])
	if len(f) != 5 || f[1] != "-100" || f[2] != "-99.75" || f[3] != "-99.5" || f[4] != "-99.25" {
		t.Errorf("od values: %q", f)
	}
}

func TestHeaderJSON(t *testing.T) {
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	for _, a := range arrays {
		base := strings.TrimSuffix(a.name, ".npy")
		b, err := os.ReadFile(filepath.Join(dir, base, "header.json"))
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Descr        string  `json:"descr"`
			FortranOrder *bool   `json:"fortran_order"`
			Shape        []int64 `json:"shape"`
			DataOffset   int64   `json:"data_offset"`
			DataLength   int64   `json:"data_length"`
			Count        int64   `json:"count"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("%s/header.json: %v\n%s", base, err, b)
		}
		if !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s/header.json does not end in a newline", base)
		}
		count := int64(1)
		for _, d := range a.shape {
			count *= d
		}
		raw, _ := os.Stat(filepath.Join(dir, base, "raw.bin"))
		switch {
		case h.Descr != a.descr:
			t.Errorf("%s: descr %q, want %q", base, h.Descr, a.descr)
		case h.FortranOrder == nil || *h.FortranOrder:
			t.Errorf("%s: fortran_order %v", base, h.FortranOrder)
		case !slices.Equal(h.Shape, a.shape):
			t.Errorf("%s: shape %v, want %v", base, h.Shape, a.shape)
		case h.Count != count:
			t.Errorf("%s: count %d, want %d", base, h.Count, count)
		case h.DataOffset != int64(len(a.header)):
			t.Errorf("%s: data_offset %d, want %d", base, h.DataOffset, len(a.header))
		case h.DataLength != int64(len(a.raw)) || raw.Size() != h.DataLength:
			t.Errorf("%s: data_length %d, raw.bin %d bytes, want %d", base, h.DataLength, raw.Size(), len(a.raw))
		case h.DataOffset+h.DataLength != int64(len(a.data)):
			t.Errorf("%s: data_offset+data_length %d != member size %d", base, h.DataOffset+h.DataLength, len(a.data))
		}
	}
}

// numpyScript makes two archives with numpy (np.savez and
// np.savez_compressed) of the same arrays.
const numpyMake = `
import sys, numpy as np
def arrays():
    return dict(
        images=(np.arange(4*32*32*3, dtype='<f4').reshape(4, 32, 32, 3) * 0.5 - 7),
        labels=np.arange(50000, dtype='<i8') * 3 - 11,
        grid=np.asfortranarray(np.arange(600, dtype='>f8').reshape(20, 30)),
    )
np.savez(sys.argv[1], **arrays())
np.savez_compressed(sys.argv[2], **arrays())
`

// numpyCheck loads every array through the mount with mmap_mode='r', and
// raw.bin with np.memmap, and compares with the arrays rebuilt in memory.
const numpyCheck = `
import sys, json, numpy as np
mnt = sys.argv[1]
` + "exec(open(sys.argv[2]).read().split('np.savez(')[0])" + `
for name, want in arrays().items():
    a = np.load(mnt + '/' + name + '.npy', mmap_mode='r')
    assert isinstance(a, np.memmap), (name, type(a))
    assert a.dtype == want.dtype and a.shape == want.shape, (name, a.dtype, a.shape)
    assert np.array_equal(a, want), name
    h = json.load(open(mnt + '/' + name + '/header.json'))
    order = 'F' if h['fortran_order'] else 'C'
    r = np.memmap(mnt + '/' + name + '/raw.bin', dtype=np.dtype(h['descr']), mode='r', shape=tuple(h['shape']), order=order)
    assert np.array_equal(r, want), name
    print(name, a.dtype, a.shape, float(a.sum(dtype=np.float64)))
print('OK')
`

func TestNumpyMmapStoredAndDeflated(t *testing.T) {
	needFuse(t)
	needNumpy(t)
	tmp := t.TempDir()
	mk := filepath.Join(tmp, "make.py")
	os.WriteFile(mk, []byte(numpyMake), 0o644)
	check := filepath.Join(tmp, "check.py")
	os.WriteFile(check, []byte(numpyCheck), 0o644)
	stored, deflated := filepath.Join(tmp, "stored.npz"), filepath.Join(tmp, "deflated.npz")
	if out, err := exec.Command(python, mk, stored, deflated).CombinedOutput(); err != nil {
		t.Fatalf("making archives: %v\n%s", err, out)
	}
	for _, archive := range []string{stored, deflated} {
		t.Run(filepath.Base(archive), func(t *testing.T) {
			dir := mount(t, archive)
			out, err := exec.Command(python, check, dir, mk).CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "OK\n") {
				t.Fatalf("numpy through the mount: %v\n%s", err, out)
			}
			// sum of images = sum(i*0.5 - 7 for i < 12288)
			if !strings.Contains(string(out), "images float32 (4, 32, 32, 3) 37659648.0") {
				t.Errorf("unexpected numpy output:\n%s", out)
			}
		})
	}
}

func TestCProgramMmapsRawBin(t *testing.T) {
	needFuse(t)
	gcc := needTool(t, "gcc")
	tmp := t.TempDir()
	// The program the README shows.
	src, prog := filepath.Join("..", "examples", "mmap_sum.c"), filepath.Join(tmp, "mmap_sum")
	if out, err := exec.Command(gcc, "-O2", "-Wall", "-Werror", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	for _, tc := range []struct{ name, want string }{
		// images: 12000 values i*0.25-100; sum = 0.25*sum(i) - 1200000
		{"images", "n=12000 first=-100 second=-99.75 last=2899.75 sum=16798500.0"},
		// big (deflated): 1048576 values, sum = 0.25*n(n-1)/2 - 100n
		{"big", "n=1048576 first=-100 second=-99.75 last=262044 sum=137333964800.0"},
	} {
		out, err := exec.Command(prog, filepath.Join(dir, tc.name, "raw.bin")).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("%s: %v\n got: %s\nwant: %s", tc.name, err, out, tc.want)
		}
	}
}

func TestWritesRefusedWithEROFS(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	p := func(s string) string { return filepath.Join(dir, s) }
	checks := map[string]error{}
	_, checks["write (open O_WRONLY)"] = os.OpenFile(p("images.npy"), os.O_WRONLY, 0)
	_, checks["open O_RDWR"] = os.OpenFile(p("images/raw.bin"), os.O_RDWR, 0)
	_, checks["create"] = os.OpenFile(p("new.npy"), os.O_WRONLY|os.O_CREATE, 0o644)
	checks["mkdir"] = os.Mkdir(p("newdir"), 0o755)
	checks["unlink"] = os.Remove(p("labels.npy"))
	checks["rmdir"] = syscall.Rmdir(p("labels"))
	checks["rename"] = os.Rename(p("labels.npy"), p("l.npy"))
	checks["chmod"] = os.Chmod(p("images.npy"), 0o644)
	checks["truncate"] = os.Truncate(p("images.npy"), 0)
	checks["setxattr"] = syscall.Setxattr(p("images.npy"), "user.note", []byte("x"), 0)
	checks["symlink"] = os.Symlink("images.npy", p("ln"))
	for op, err := range checks {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", op, err)
		}
	}
	// A shell redirection, as a user would try it.
	out, err := exec.Command("sh", "-c", "echo x > "+p("images.npy")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Read-only file system") {
		t.Errorf("echo > images.npy: %v %s", err, out)
	}
}

func TestModesAndNoSymlinks(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	n := walkEntries(t, dir, func(path string, fi fs.FileInfo) {
		// Members, their views folders and views all take the member's
		// time (the test archive's members all have archiveTime).
		if path != dir && !fi.ModTime().Equal(archiveTime) {
			t.Errorf("%s: mtime %v, want the member's %v", path, fi.ModTime().UTC(), archiveTime)
		}
	})
	if n != 1+9+6 { // the root; a .npy, .ra and views folder per array; two views in each
		t.Errorf("walked %d entries, want 16", n)
	}
}

// walkEntries walks the mount on dir, checks every entry (a unique
// non-zero inode, the type readdir gave, a 0555 folder or a 0444 regular
// file and nothing else, owned by the mounting user), calls fn on each and
// returns how many there were.
func walkEntries(t *testing.T, dir string, fn func(path string, fi fs.FileInfo)) int {
	t.Helper()
	n := 0
	inos := map[uint64]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		n++
		st := fi.Sys().(*syscall.Stat_t)
		if other, dup := inos[st.Ino]; dup || st.Ino == 0 {
			t.Errorf("%s: inode %d (also %q)", path, st.Ino, other)
		}
		inos[st.Ino] = path
		if d.Type() != fi.Mode().Type() {
			t.Errorf("%s: readdir says type %v, stat %v", path, d.Type(), fi.Mode().Type())
		}
		switch {
		case fi.Mode().Type() == fs.ModeSymlink:
			t.Errorf("%s is a symlink", path)
		case fi.IsDir():
			if fi.Mode() != fs.ModeDir|0o555 {
				t.Errorf("%s: folder mode %v, want 0555", path, fi.Mode())
			}
		case fi.Mode().IsRegular():
			if fi.Mode() != 0o444 {
				t.Errorf("%s: file mode %v, want 0444", path, fi.Mode())
			}
		default:
			t.Errorf("%s: unexpected type %v", path, fi.Mode().Type())
		}
		if st.Uid != uint32(os.Getuid()) || st.Gid != uint32(os.Getgid()) {
			t.Errorf("%s: owner %d:%d, want %d:%d", path, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
		fn(path, fi)
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return n
}

func TestMountTableShowsNpzfs(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	m, _ := mountOf(dir)
	if m.Source != archive {
		t.Errorf("source %q, want the archive's absolute path %q", m.Source, archive)
	}
	if !slices.Contains(strings.Split(m.Options, ","), "ro") {
		t.Errorf("mount options %q lack ro", m.Options)
	}
	out, err := exec.Command("mount").Output()
	if err != nil {
		t.Skipf("mount(8): %v", err)
	}
	want := fmt.Sprintf("%s on %s type fuse.npzfs (ro,", archive, dir)
	if !strings.Contains(string(out), want) {
		t.Errorf("mount output lacks %q:\n%s", want, out)
	}
	if out, err := exec.Command("df", "-T", dir).Output(); err == nil {
		if !strings.Contains(string(out), "fuse.npzfs") {
			t.Errorf("df -T lacks fuse.npzfs:\n%s", out)
		}
	}
}

func TestStatfs(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(archive)
	if s.Blocks*uint64(s.Bsize) < uint64(fi.Size()) || s.Bfree != 0 || s.Files != 16 {
		t.Errorf("statfs: %d blocks of %d, free %d, files %d; archive %d bytes, 16 nodes", s.Blocks, s.Bsize, s.Bfree, s.Files, fi.Size())
	}
}

// oneLine checks a failure's stderr: exactly one line naming the command.
func oneLine(t *testing.T, what string, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit %d, want %d (stderr %q)", what, r.code, code, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || !strings.HasPrefix(r.stderr, "npzfs ") {
		t.Errorf("%s: stderr is not one line: %q", what, r.stderr)
	}
}

func TestBadMountInvocations(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	tmp := t.TempDir()
	notZip := filepath.Join(tmp, "notes.npz")
	os.WriteFile(notZip, []byte("this is not a zip archive, just some words\n"), 0o644)
	aFile := filepath.Join(tmp, "file")
	os.WriteFile(aFile, nil, 0o644)
	inside := filepath.Join(tmp, "inside")
	os.Mkdir(inside, 0o755)

	// Already mounted: a live mount on the target.
	busy := mount(t, archive)

	cases := []struct {
		name, archive, dir, mention string
	}{
		{"archive missing", filepath.Join(tmp, "missing.npz"), "", "does not exist"},
		{"not a zip", notZip, "", "not a readable .npz archive"},
		{"mount point inside the folder served", tmp, inside, "inside the folder"},
		{"mount point missing", archive, filepath.Join(tmp, "nowhere"), "mkdir"},
		{"mount point is a file", archive, aFile, "not a folder"},
		{"already mounted", archive, busy, "npzfs unmount"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir
			if dir == "" {
				dir = t.TempDir()
			}
			before := isMounted(dir)
			r := npzfs(t, "mount", c.archive, dir)
			oneLine(t, c.name, r, 1)
			if !strings.Contains(r.stderr, c.mention) {
				t.Errorf("%s: message %q does not mention %q", c.name, r.stderr, c.mention)
			}
			if after := isMounted(dir); after != before {
				t.Errorf("%s: mounted before %v, after %v", c.name, before, after)
			}
			if c.dir != busy {
				if pids := daemons(dir); len(pids) > 0 {
					t.Errorf("%s: daemons left behind: %v", c.name, pids)
				}
			}
		})
	}
	// The mount that was in the way still works.
	if _, err := os.Stat(filepath.Join(busy, "images", "raw.bin")); err != nil {
		t.Errorf("existing mount broken by a refused mount: %v", err)
	}

	for _, c := range []struct {
		name string
		args []string
	}{
		{"no arguments", []string{"mount"}},
		{"one argument", []string{"mount", archive}},
		{"rw", []string{"mount", "-o", "rw", archive, t.TempDir()}},
		{"unknown option", []string{"mount", "-o", "allow_other,frobnicate", archive, t.TempDir()}},
		{"unknown flag", []string{"mount", "--frobnicate", archive, t.TempDir()}},
	} {
		r := npzfs(t, c.args...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", c.name, r.code, r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, c := range []string{"mount", "unmount"} {
		r := npzfs(t, c, "--help")
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "Exit codes") {
			t.Errorf("npzfs %s --help: exit %d, output lacks exit codes:\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
}

// TestManyArrays mounts an archive of 100,000 arrays. It checks what is
// served, and logs how long mount and the listing took (no assertion on
// time: the machine may be busy).
func TestManyArrays(t *testing.T) {
	const maxListingHWM = 160 << 20
	needFuse(t)
	if testing.Short() {
		t.Skip("-short: skipping the 100,000-array archive")
	}
	const n = 100000
	archive := manyArrays(t, n)
	start := time.Now()
	dir := mount(t, archive)
	mounted := time.Since(start)
	pid := theDaemon(t, dir)
	start = time.Now()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	listed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d arrays: mount %v, first listing %v", n, mounted, listed)
	if len(names) != 3*n {
		t.Fatalf("listed %d names, want %d", len(names), 3*n)
	}
	// The listing allocates some hundred megabytes in a burst, just after
	// the mount, while the collector waits to resume: it must collect as
	// it goes (about 100 MB here; 340 MB when it did not).
	if hwm := vmHWM(t, pid); hwm > maxListingHWM {
		t.Errorf("daemon peak resident set %d MiB after the listing, want at most %d", hwm>>20, maxListingHWM>>20)
	}
	seen := map[string]bool{}
	for _, nm := range names {
		seen[nm] = true
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		base := fmt.Sprintf("a%06d", i)
		if !seen[base] || !seen[base+".npy"] || !seen[base+".ra"] {
			t.Errorf("%s missing from the listing", base)
		}
		raw, err := os.ReadFile(filepath.Join(dir, base, "raw.bin"))
		if err != nil || len(raw) != 12 || binary.LittleEndian.Uint32(raw[8:]) != math.Float32bits(float32(i+2)) {
			t.Errorf("%s/raw.bin: % x, %v", base, raw, err)
		}
	}
}

// TestMountWithoutFuse checks the two refusals that need a changed system,
// made in a private mount namespace (unshare -m, as root): /dev/fuse
// missing, and fusermount3 missing for a non-root user.
func TestMountWithoutFuse(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace")
	}
	unshare := needTool(t, "unshare")
	setpriv := needTool(t, "setpriv")
	fusermount := needTool(t, "fusermount3")
	archive, _ := testArchive(t)

	pub, pubArchive, pubBin := publicCopies(t, archive)
	null := filepath.Join(pub, "null")
	os.WriteFile(null, nil, 0o644)

	for _, c := range []struct{ name, script, mention string }{
		{
			"no /dev/fuse",
			// Keep /dev/null (the daemon's stdin) while /dev is emptied.
			`mount --bind /dev/null "$NULL" && mount -t tmpfs none /dev && touch /dev/null && mount --bind "$NULL" /dev/null && exec "$NPZFS" mount "$ARCHIVE" "$MNT"`,
			"/dev/fuse does not exist",
		},
		{
			"no fusermount3 as a non-root user",
			`mount --bind /dev/null "$FUSERMOUNT" && exec "$SETPRIV" --reuid=65534 --regid=65534 --clear-groups "$NPZFS" mount "$ARCHIVE" "$MNT"`,
			"fusermount3 not found",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			mnt, err := os.MkdirTemp(pub, "mnt-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(mnt, 0o777)
			clearLater(t, mnt)
			cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", c.script)
			cmd.Dir = pub
			cmd.Env = append(os.Environ(), "NULL="+null, "NPZFS="+pubBin, "ARCHIVE="+pubArchive, "MNT="+mnt,
				"FUSERMOUNT="+fusermount, "SETPRIV="+setpriv)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			err = cmd.Run()
			var ee *exec.ExitError
			code := 0
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			oneLine(t, c.name, result{stdout: so.String(), stderr: se.String(), code: code}, 1)
			if !strings.Contains(se.String(), c.mention) {
				t.Errorf("%s: %q does not mention %q", c.name, se.String(), c.mention)
			}
			if isMounted(mnt) {
				t.Errorf("%s: %s is mounted", c.name, mnt)
			}
		})
	}
}

// TestCorruptDeflatedMemberReadsEIO: damage inside a deflated member's
// compressed bytes reaches the reader as EIO (never ENOSYS, never silently
// wrong bytes), and the rest of the archive still serves.
func TestCorruptDeflatedMemberReadsEIO(t *testing.T) {
	needFuse(t)
	bad := newArray(t, "bad.npy", "<f4", []int64{1 << 18}, f32s(1<<18), true)
	good := newArray(t, "good.npy", "<i8", []int64{100}, i64s(100), false)
	path := filepath.Join(t.TempDir(), "corrupt.npz")
	writeZip(t, path, []member{bad.member, good.member})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// bad.npy's data starts after its 30-byte local header and name;
	// overwrite a run in the middle of its compressed stream.
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	csize := int(zr.File[0].CompressedSize64)
	zr.Close()
	start := 30 + len("bad.npy") + csize/2
	for i := start; i < start+64; i++ {
		b[i] ^= 0x5A
	}
	os.WriteFile(path, b, 0o644)

	dir := mount(t, path)
	for _, p := range []string{"bad.npy", "bad/raw.bin"} {
		_, err := os.ReadFile(filepath.Join(dir, p))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s: %v, want EIO", p, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "good", "raw.bin"))
	if err != nil || !bytes.Equal(got, good.raw) {
		t.Errorf("good/raw.bin next to a corrupt member: %d bytes, %v", len(got), err)
	}
}

// TestUnreadableMethodsAnswerEIO: members compressed with a method npzfs
// cannot read, or encrypted, are listed but read EIO, as every bad member.
func TestUnreadableMethodsAnswerEIO(t *testing.T) {
	needFuse(t)
	ok := newArray(t, "ok.npy", "<i8", []int64{10}, i64s(10), false)
	path := filepath.Join(t.TempDir(), "methods.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, h := range []*zip.FileHeader{
		{Name: "bzip2.npy", Method: 12},
		{Name: "encrypted.npy", Method: zip.Store, Flags: 1},
	} {
		h.Modified = archiveTime
		h.CRC32 = crc32.ChecksumIEEE(ok.data)
		h.CompressedSize64 = uint64(len(ok.data))
		h.UncompressedSize64 = uint64(len(ok.data))
		w, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(ok.data) // not really bzip2 or encrypted: never decoded
	}
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: ok.name, Method: zip.Store, Modified: archiveTime})
	w.Write(ok.data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dir := mount(t, path)
	for _, name := range []string{"bzip2.npy", "encrypted.npy"} {
		if _, err := os.ReadFile(filepath.Join(dir, name)); !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s: %v, want EIO", name, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "ok.npy")); err != nil || !bytes.Equal(got, ok.data) {
		t.Errorf("ok.npy: %d bytes, %v", len(got), err)
	}
}
