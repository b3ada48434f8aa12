//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// TestMaxHeaderOption: an array of many record fields has a format 2.0
// header of more than 64 KiB, as numpy writes it; the mount serves its
// views by default, and --max-header-kb below its length serves the
// member without them.
func TestMaxHeaderOption(t *testing.T) {
	needFuse(t)
	var descr npy.List
	for i := range 5000 {
		descr = append(descr, npy.Tuple{fmt.Sprintf("field%04d", i), "<i4"})
	}
	hdr, err := npy.EncodeHeader(descr, false, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 2*5000*4)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	data := append(append([]byte{}, hdr...), raw...)
	archive := filepath.Join(t.TempDir(), "wide.npz")
	writeZip(t, archive, []member{{name: "wide.npy", data: data, deflate: true}})

	dir := mount(t, archive)
	doc, err := os.ReadFile(filepath.Join(dir, "wide", "header.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Version      string `json:"version"`
		HeaderLength int    `json:"header_length"`
		DataLength   int    `json:"data_length"`
	}
	if err := json.Unmarshal(doc, &h); err != nil {
		t.Fatal(err)
	}
	if h.Version != "2.0" || h.HeaderLength <= 64<<10 || h.DataLength != len(raw) {
		t.Errorf("header.json: version %s, header_length %d, data_length %d", h.Version, h.HeaderLength, h.DataLength)
	}
	got, err := os.ReadFile(filepath.Join(dir, "wide", "raw.bin"))
	if err != nil || string(got) != string(raw) {
		t.Errorf("raw.bin: %d bytes, err %v; want the %d array bytes", len(got), err, len(raw))
	}

	small := mount(t, archive, "--max-header-kb", "64")
	if ents, err := os.ReadDir(filepath.Join(small, "wide")); err != nil || len(ents) != 0 {
		t.Errorf("with --max-header-kb 64, wide/: %d entries, %v; want it empty", len(ents), err)
	}
	got, err = os.ReadFile(filepath.Join(small, "wide.npy"))
	if err != nil || string(got) != string(data) {
		t.Errorf("with --max-header-kb 64, wide.npy: %d bytes, err %v; want the member", len(got), err)
	}
}

// readChars is the bytes a process has read through read-like system
// calls (rchar in /proc/PID/io): data it copied through user space.
func readChars(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/%d/io:\n%s", pid, b)
	return 0
}

// TestStoredReadsAreSpliced: the daemon answers reads of a stored member
// by splicing the archive file into /dev/fuse, so the array's bytes never
// pass through its memory once it is verified (which reads it once, at
// its first read, here before the count starts). (A reply that does not
// fit the splice pipe is copied instead: that is what fs.MaxRead guards
// against.)
func TestStoredReadsAreSpliced(t *testing.T) {
	archive, files := bigArchive(t, 32)
	dir := mount(t, archive)
	pid := theDaemon(t, dir)
	f, err := os.Open(filepath.Join(dir, "stored.npy"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ReadAt(make([]byte, 1), 0) // verifies the member
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := readChars(t, pid)
	got, err := os.ReadFile(filepath.Join(dir, "stored", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, files["stored/raw.bin"]) {
		t.Fatal("stored/raw.bin differs from the array")
	}
	if copied := readChars(t, pid) - before; copied > int64(len(got))/16 {
		t.Errorf("the daemon read %d bytes to serve %d: reads were copied, not spliced", copied, len(got))
	}
}

// TestMountFlagOptions: the -o options that are mount flags reach the
// mount table (as root, who mounts with mount(2) itself, passes them;
// as another user, through fusermount3): read-only, nosuid and nodev by
// default, noexec and noatime when asked, and for root dev and suid lift
// their defaults (fusermount3 refuses them to users).
func TestMountFlagOptions(t *testing.T) {
	archive, _ := testArchive(t)
	for _, tc := range []struct {
		opts      string
		want, not []string
	}{
		{"", []string{"ro", "nosuid", "nodev", "relatime"}, []string{"noexec", "noatime"}},
		{"noexec,noatime", []string{"ro", "nosuid", "nodev", "noexec", "noatime"}, []string{"relatime"}},
		{"noatime,atime", []string{"ro", "relatime"}, []string{"noatime"}},
		{"dev,suid,exec", []string{"ro"}, []string{"nosuid", "nodev", "noexec"}},
	} {
		t.Run("-o "+tc.opts, func(t *testing.T) {
			if strings.Contains(tc.opts, "suid") && os.Geteuid() != 0 {
				t.Skip("dev and suid are root's")
			}
			var flags []string
			if tc.opts != "" {
				flags = []string{"-o", tc.opts}
			}
			dir := mount(t, archive, flags...)
			m, _ := mountOf(dir)
			opts := strings.Split(m.Options, ",")
			for _, o := range tc.want {
				if !slices.Contains(opts, o) {
					t.Errorf("mount options %s, without %s", m.Options, o)
				}
			}
			for _, o := range tc.not {
				if slices.Contains(opts, o) {
					t.Errorf("mount options %s, with %s", m.Options, o)
				}
			}
		})
	}
}

// publicCopies copies the archive and the binary into a new folder that
// every user can read (t.TempDir's are root's alone), removed at cleanup.
func publicCopies(t *testing.T, archive string) (dir, pubArchive, pubBin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "npzfs-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pubArchive, pubBin = filepath.Join(dir, "data.npz"), filepath.Join(dir, "npzfs")
	for _, c := range []struct {
		from, to string
		mode     os.FileMode
	}{{archive, pubArchive, 0o644}, {bin, pubBin, 0o755}} {
		b, err := os.ReadFile(c.from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.to, b, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir, pubArchive, pubBin
}

// TestAllowOtherAndAllowRoot: root mounts; user nobody reads the mount
// with -o allow_other only.
func TestAllowOtherAndAllowRoot(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	setpriv := needTool(t, "setpriv")
	archive, arrays := testArchive(t)
	pub, pubArchive, _ := publicCopies(t, archive)
	for _, c := range []struct {
		opts      []string
		nobodyOK  bool
		wantPerms string
	}{
		{nil, false, "-r--r--r--"},
		{[]string{"-o", "allow_other"}, true, "-r--r--r--"},
		{[]string{"-o", "allow_root"}, false, "-r--------"},
	} {
		t.Run(strings.Join(append([]string{"opts"}, c.opts...), " "), func(t *testing.T) {
			mnt, err := os.MkdirTemp(pub, "mnt-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(mnt, 0o755)
			clearLater(t, mnt)
			if r := npzfs(t, append(append([]string{"mount"}, c.opts...), pubArchive, mnt)...); r.code != 0 {
				t.Fatalf("mount: %s", r.stderr)
			}
			raw := filepath.Join(mnt, "images", "raw.bin")
			// Root reads first, so the kernel has the entries cached.
			b, err := os.ReadFile(raw)
			if err != nil || !bytes.Equal(b, arrays[0].raw) {
				t.Fatalf("root reads: %d bytes, %v", len(b), err)
			}
			fi, _ := os.Stat(raw)
			if fi.Mode().String() != c.wantPerms {
				t.Errorf("mode %v, want %s", fi.Mode(), c.wantPerms)
			}
			out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", raw).Output()
			if c.nobodyOK && (err != nil || !bytes.Equal(out, arrays[0].raw)) {
				t.Errorf("nobody reads: %d bytes, %v", len(out), err)
			}
			if !c.nobodyOK && err == nil {
				t.Errorf("nobody read %d bytes; want permission denied", len(out))
			}
		})
	}
}
