//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shardFolder writes a folder of archives as a training set comes: shards
// stored and compressed, some in sub-folders, bare .npy files, a broken
// archive and a file that is neither.
func shardFolder(t *testing.T, n int) string {
	t.Helper()
	needNumpy(t)
	dir := t.TempDir()
	gen := exec.Command(python, "-c", `import numpy as np, os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    sub = os.path.join(d, 'part%d' % (i % 3)) if i % 2 else d
    os.makedirs(sub, exist_ok=True)
    save = np.savez_compressed if i % 4 == 1 else np.savez
    save(os.path.join(sub, 'shard%04d.npz' % i), x=np.arange(i, i + 1000, dtype='<f4').reshape(10, 100), y=np.full(7, i, '>i8'))
np.save(os.path.join(d, 'part1', 'grid.npy'), np.arange(24.0).reshape(4, 6))
open(os.path.join(d, 'broken.npz'), 'wb').write(b'PK\x03\x04 cut short')
open(os.path.join(d, 'README.txt'), 'w').write('not an array')
`, dir, strconv.Itoa(n))
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the shards: %v: %s", err, out)
	}
	return dir
}

// checkSame compares every .npz member and .npy file under src with the
// files the mount on mnt serves for them.
func checkSame(t *testing.T, src, mnt string) (files int) {
	t.Helper()
	files, diffs := differences(src, mnt)
	for _, d := range diffs {
		t.Error(d)
	}
	return files
}

// differences compares every .npz member and .npy file under src with
// the files the mount on mnt serves for them, and says how each that is
// not the same differs.
func differences(src, mnt string) (files int, diffs []string) {
	same := func(rel string, want []byte) {
		files++
		got, err := os.ReadFile(filepath.Join(mnt, rel))
		if err != nil || !bytes.Equal(got, want) {
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes, %v; want %d", rel, len(got), err, len(want)))
		}
	}
	filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case strings.HasSuffix(path, ".npy"):
			want, _ := os.ReadFile(path)
			same(rel, want)
		case strings.HasSuffix(path, ".npz") && filepath.Base(path) != "broken.npz":
			zr, err := zip.OpenReader(path)
			if err != nil {
				return err
			}
			defer zr.Close()
			for _, f := range zr.File {
				rc, _ := f.Open()
				want, _ := io.ReadAll(rc)
				rc.Close()
				same(filepath.Join(rel, f.Name), want)
			}
		}
		return nil
	})
	return files, diffs
}

// TestFolderMount: a folder of shards mounts as one tree: every archive a
// folder NAME.npz/ with its arrays and views, every .npy with its views,
// sub-folders kept, other files left out, a broken archive a folder that
// says why; numpy maps arrays from it; sixteen readers across archives
// read the right bytes at once.
func TestFolderMount(t *testing.T) {
	src := shardFolder(t, 24)
	mnt := mount(t, src)
	if n := checkSame(t, src, mnt); n != 24*2+1 {
		t.Errorf("compared %d files, want %d", n, 24*2+1)
	}
	top, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range top {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, "broken.npz part0 part1 part2 shard0000.npz shard0002.npz") || strings.Contains(got, "README") {
		t.Errorf("top of the mount: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "broken.npz", "npzfs-error.txt")); err != nil || !strings.Contains(string(b), "central directory") {
		t.Errorf("broken.npz/npzfs-error.txt: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(mnt, "broken.npz")); len(ents) != 1 {
		t.Errorf("broken.npz holds %d files, want the error file alone", len(ents))
	}
	for _, p := range []string{"part1/grid", "part1/grid.ra", "part1/grid/raw.bin", "part1/shard0001.npz/x/header.json", "part1/shard0001.npz/y.ra"} {
		if _, err := os.Stat(filepath.Join(mnt, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	check := exec.Command(python, "-c", `import numpy as np, sys
m = sys.argv[1]
a = np.load(m + '/part1/shard0001.npz/x.npy', mmap_mode='r')
assert isinstance(a, np.memmap) and a.shape == (10, 100) and a[9, 99] == 1000, a
g = np.load(m + '/part1/grid.npy', mmap_mode='r')
assert g[3, 5] == 23.0
print('ok')`, mnt)
	if out, err := check.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("numpy on the folder mount: %v: %s", err, out)
	}

	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 12 {
				i := (g*5 + k) % 24
				dir := mnt
				if i%2 == 1 {
					dir = filepath.Join(mnt, "part"+strconv.Itoa(i%3))
				}
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("shard%04d.npz", i), "y", "raw.bin"))
				if err != nil || len(b) != 56 || b[7] != byte(i) {
					t.Errorf("reader %d: shard%04d.npz/y/raw.bin: % x, %v", g, i, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// eventually polls cond until it holds, for what the kernel caches for
// a second (the folder mount's cache time); the limit is far above it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Errorf("never: %s", what)
}

// TestFolderMountChanges: archives added, removed and replaced while the
// folder is mounted appear, vanish and change; a file of the replaced
// archive that was open fails its reads (EIO), never mixing old and new.
func TestFolderMountChanges(t *testing.T) {
	src := shardFolder(t, 4)
	big := exec.Command(python, "-c", `import numpy as np, sys
np.savez(sys.argv[1], x=np.arange(1 << 21, dtype='<f4'))`, filepath.Join(src, "big.npz"))
	if out, err := big.CombinedOutput(); err != nil {
		t.Fatalf("writing big.npz: %v: %s", err, out)
	}
	mnt := mount(t, src)
	if _, err := os.Stat(filepath.Join(mnt, "shard0000.npz", "y.npy")); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(filepath.Join(mnt, "big.npz", "x", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}

	gen := exec.Command(python, "-c", `import numpy as np, os, sys
d = sys.argv[1]
np.savez(os.path.join(d, 'added.npz'), z=np.arange(5))
np.savez(os.path.join(d, 'new.tmp.npz'), x=np.ones((10, 100), '<f4') * 7, y=np.zeros(3))
os.rename(os.path.join(d, 'new.tmp.npz'), os.path.join(d, 'shard0000.npz'))
np.savez(os.path.join(d, 'big.tmp.npz'), x=np.ones(1 << 21, '<f4'))
os.rename(os.path.join(d, 'big.tmp.npz'), os.path.join(d, 'big.npz'))
os.remove(os.path.join(d, 'shard0002.npz'))`, src)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("changing the folder: %v: %s", err, out)
	}
	eventually(t, "added.npz appears", func() bool {
		_, err := os.Stat(filepath.Join(mnt, "added.npz", "z.npy"))
		return err == nil
	})
	eventually(t, "shard0002.npz vanishes", func() bool {
		_, err := os.Stat(filepath.Join(mnt, "shard0002.npz"))
		return errors.Is(err, os.ErrNotExist)
	})
	eventually(t, "shard0000.npz is the new archive", func() bool {
		fi, err := os.Stat(filepath.Join(mnt, "shard0000.npz", "y", "raw.bin"))
		return err == nil && fi.Size() == 24
	})
	oldInfo, err := old.Stat()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "big.npz is the new archive", func() bool {
		b := make([]byte, 4)
		f, err := os.Open(filepath.Join(mnt, "big.npz", "x", "raw.bin"))
		if err != nil {
			return false
		}
		defer f.Close()
		// While the kernel still has the old big.npz cached, the path
		// leads to the old file: reading it would put the old bytes
		// checked below into the page cache.
		if fi, err := f.Stat(); err != nil || os.SameFile(fi, oldInfo) {
			return false
		}
		_, err = f.ReadAt(b, 6<<20)
		return err == nil && bytes.Equal(b, []byte{0, 0, 0x80, 0x3f})
	})
	// The replaced archive's file, open all along: what the page cache
	// holds of it may still be read, but nothing more is read from the
	// old archive.
	if _, err := old.ReadAt(make([]byte, 4096), 6<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("reading on in the replaced archive's open file: %v, want EIO", err)
	}
	b, err := os.ReadFile(filepath.Join(mnt, "shard0000.npz", "x", "raw.bin"))
	if err != nil || len(b) != 4000 || !bytes.Equal(b[:4], []byte{0, 0, 0xe0, 0x40}) {
		t.Errorf("the new shard0000.npz/x/raw.bin: % x, %v", b[:min(8, len(b))], err)
	}
	checkSame(t, src, mnt)
}

// TestFolderMountBudget: a folder of 10,000 archives mounts as fast as
// it lists (nothing is opened), and after one array of every archive was
// read, the daemon keeps at most --max-open of them open (with a few
// descriptors of its own) and its memory stays within what the README
// gives for a folder mount.
func TestFolderMountBudget(t *testing.T) {
	needNumpy(t)
	if testing.Short() {
		t.Skip("-short: skipping the 10,000-archive folder")
	}
	const n = 10000
	src := t.TempDir()
	gen := exec.Command(python, "-c", `import numpy as np, os, sys, io
d, n = sys.argv[1], int(sys.argv[2])
buf = io.BytesIO()
for i in range(n):
    sub = os.path.join(d, 'g%02d' % (i % 100))
    os.makedirs(sub, exist_ok=True)
    np.savez(os.path.join(sub, 's%05d.npz' % i), a=np.full(16, i, '<i4'))
`, src, strconv.Itoa(n))
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the archives: %v: %s", err, out)
	}
	const maxOpen = 64
	logFile := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mount(t, src, "--max-open", strconv.Itoa(maxOpen), "--log", logFile)
	defer func() {
		if t.Failed() { // what the daemon said of it
			b, _ := os.ReadFile(logFile)
			t.Logf("the daemon's log:\n%s", b)
		}
	}()
	pids := daemons(mnt)
	if len(pids) != 1 {
		t.Fatalf("daemons %v", pids)
	}
	fds := func() int { return filesUnder(pids[0], src) }
	if k := fds(); k != 0 {
		t.Errorf("%d archives open at mount, want none", k)
	}
	for i := range n {
		p := filepath.Join(mnt, fmt.Sprintf("g%02d", i%100), fmt.Sprintf("s%05d.npz", i), "a", "raw.bin")
		b, err := os.ReadFile(p)
		if err != nil || len(b) != 64 || int(b[0])|int(b[1])<<8 != i {
			t.Fatalf("%s: % x, %v", p, b, err)
		}
	}
	eventually(t, fmt.Sprintf("at most %d archives open", maxOpen), func() bool {
		return fds() <= maxOpen
	})
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pids[0]))
	var rssKB int
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			rssKB, _ = strconv.Atoi(f[1])
		}
	}
	t.Logf("%d archives read: %d open, resident %d MiB", n, fds(), rssKB>>10)
	if rssKB == 0 || rssKB > 200<<10 {
		t.Errorf("daemon resident memory %d KiB, want at most 200 MiB", rssKB)
	}
}

// filesUnder counts the files under dir that process pid has open: a
// daemon's descriptors of archives (others are its own: /dev/fuse, pipes
// for splicing, the log).
func filesUnder(pid int, dir string) int {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(fdDir)
	k := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			k++
		}
	}
	return k
}

// TestFolderMaxOpenUnderConcurrency: 16 readers walking 2,500 archives
// at once under --max-open 8: the daemon keeps no more archives open
// than --max-open besides those with a file open or a request under way
// (status's archives_idle, sampled throughout, at most --max-open and
// the requests that may have just left an archive idle before trimming:
// one a reader, and the kernel's background releases, 12 at once), and
// once the readers are done, --max-open in all, whatever the kernel
// still caches of the others. How many archives are open during the
// walk is not bounded by the daemon: a file the kernel has closed stays
// open to it until its release comes, and the kernel queues releases
// behind reads as the machine's load has it. (Before, with the archives
// the kernel held nodes of kept open: 1,660 during the walk, and never
// back to 8.)
func TestFolderMaxOpenUnderConcurrency(t *testing.T) {
	const n, groups, readers, maxOpen = 2500, 50, 16, 8
	src := t.TempDir()
	for i := range n {
		sub := filepath.Join(src, fmt.Sprintf("g%02d", i%groups))
		os.MkdirAll(sub, 0o755)
		raw := bytes.Repeat(binary.LittleEndian.AppendUint32(nil, uint32(i)), 16)
		writeZip(t, filepath.Join(sub, fmt.Sprintf("s%04d.npz", i)), []member{newArray(t, "a.npy", "<i4", []int64{16}, raw, false).member})
	}
	mnt := mount(t, src, "--max-open", strconv.Itoa(maxOpen))
	pid := theDaemon(t, mnt)

	// The sampler reports a status it could not read as a failure of its
	// own: it cannot end the test from its goroutine.
	type peaks struct {
		open, idle int
		failed     string
	}
	stop := make(chan struct{})
	peak := make(chan peaks)
	go func() {
		var most peaks
		for {
			select {
			case <-stop:
				peak <- most
				return
			default:
			}
			out, err := exec.Command(bin, "status", "--json", mnt).Output()
			var doc struct{ Mounts []statusOf }
			if err == nil {
				err = json.Unmarshal(out, &doc)
			}
			if err != nil || len(doc.Mounts) != 1 {
				most.failed = fmt.Sprintf("npzfs status --json %s: %v, %q", mnt, err, out)
				continue
			}
			most.open, most.idle = max(most.open, doc.Mounts[0].Archives), max(most.idle, doc.Mounts[0].Idle)
		}
	}()
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for k := range n {
				i := (k*7 + r*(n/readers)) % n
				p := filepath.Join(mnt, fmt.Sprintf("g%02d", i%groups), fmt.Sprintf("s%04d.npz", i), "a", "raw.bin")
				b, err := os.ReadFile(p)
				if err != nil || len(b) != 64 || int(b[0])|int(b[1])<<8 != i {
					t.Errorf("reader %d: %s: % x, %v", r, p, b[:min(len(b), 4)], err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	most := <-peak
	t.Logf("at most %d archives open during the walk, %d of them idle", most.open, most.idle)
	if most.failed != "" {
		t.Error(most.failed)
	}
	if bound := maxOpen + readers + 12; most.idle > bound || most.open == 0 {
		t.Errorf("%d idle archives open during the walk (%d in all), want at most %d", most.idle, most.open, bound)
	}
	eventually(t, fmt.Sprintf("at most %d archives open once the readers are done", maxOpen), func() bool {
		return filesUnder(pid, src) <= maxOpen
	})
	// With no file open and no request under way, every archive left
	// open is idle, and status says so.
	eventually(t, "status to count every archive left open idle", func() bool {
		st := status(t, mnt)
		return st.Archives > 0 && st.Idle == st.Archives
	})
}

// TestFolderSymlinks: symbolic links in a served folder make no tree
// without end and never lead the daemon into a mount of npzfs, its own
// least: a link to a folder it is in (sub/up -> ..), to the mount point,
// to a file in the mount, to a folder holding the served one (/), are
// left out and logged once each; a link elsewhere is followed. The daemon
// never opens a file of its own mount, so it exits once the mount is
// detached (fusermount3 -u -z), as with no link.
func TestFolderSymlinks(t *testing.T) {
	fusermount := needTool(t, "fusermount3")
	src, out := t.TempDir(), t.TempDir()
	arr := func(v int) []member {
		return []member{newArray(t, "k.npy", "<i4", []int64{4}, bytes.Repeat([]byte{byte(v), 0, 0, 0}, 4), false).member}
	}
	writeZip(t, filepath.Join(src, "a.npz"), arr(1))
	os.Mkdir(filepath.Join(src, "sub"), 0o755)
	writeZip(t, filepath.Join(src, "sub", "b.npz"), arr(2))
	writeZip(t, filepath.Join(out, "c.npz"), arr(3))
	logFile := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mount(t, src, "--log", logFile)
	pid := theDaemon(t, mnt)
	for link, to := range map[string]string{
		"sub/up":  "..",
		"top":     "/",
		"ext":     out,
		"own":     mnt,
		"own.npy": filepath.Join(mnt, "a.npz", "k.npy"),
		"ownsub":  filepath.Join(mnt, "sub"),
	} {
		if err := os.Symlink(to, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for range 2 { // walked twice: logged once
		paths = paths[:0]
		err := filepath.WalkDir(mnt, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if len(paths) > 1000 {
				return errors.New("a tree without end")
			}
			if rel, _ := filepath.Rel(mnt, p); !strings.Contains(rel, ".npz/") {
				paths = append(paths, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking the mount: %v", err)
		}
	}
	want := []string{".", "a.npz", "ext", "ext/c.npz", "sub", "sub/b.npz"}
	if !slices.Equal(paths, want) {
		t.Errorf("served: %q, want %q", paths, want)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "ext", "c.npz", "k.npy")); err != nil || b[len(b)-1] != 0 || b[len(b)-4] != 3 {
		t.Errorf("ext/c.npz/k.npy: % x, %v", b, err)
	}
	if k := filesUnder(pid, mnt); k != 0 {
		t.Errorf("the daemon has %d files of its own mount open", k)
	}
	log, _ := os.ReadFile(logFile)
	for _, p := range []string{"sub/up", "top", "own", "own.npy", "ownsub"} {
		if n := strings.Count(string(log), "npzfs: "+p+": not served: "); n != 1 {
			t.Errorf("%s: logged %d times, want once:\n%s", p, n, log)
		}
	}
	checkLogLines(t, log)
	if out, err := exec.Command(fusermount, "-u", "-z", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u -z: %v: %s", err, out)
	}
	if !waitGone(pid) {
		t.Errorf("daemon %d still running after its mount was detached", pid)
	}
}

// TestFolderUnreadableSubfolder: a sub-folder the daemon cannot read (a
// daemon without root's power to read any folder, and a folder of
// another user's, mode 0700) holds only npzfs-error.txt, which says why,
// as an archive that cannot be read does; the log says so once.
func TestFolderUnreadableSubfolder(t *testing.T) {
	via := withoutDAC(t)
	src := t.TempDir()
	locked := filepath.Join(src, "locked")
	os.Mkdir(locked, 0o700)
	writeZip(t, filepath.Join(locked, "x.npz"), []member{newArray(t, "k.npy", "<i4", []int64{4}, make([]byte, 16), false).member})
	writeZip(t, filepath.Join(src, "a.npz"), []member{newArray(t, "k.npy", "<i4", []int64{4}, make([]byte, 16), false).member})
	if err := os.Chown(locked, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mountVia(t, via, src, "--log", logFile)
	for range 2 {
		ents, err := os.ReadDir(filepath.Join(mnt, "locked"))
		if err != nil || len(ents) != 1 || ents[0].Name() != "npzfs-error.txt" {
			t.Fatalf("locked/ lists %v, %v; want npzfs-error.txt alone", ents, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(mnt, "locked", "npzfs-error.txt"))
	if err != nil || !strings.Contains(string(b), "permission denied") {
		t.Errorf("locked/npzfs-error.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "a.npz", "k.npy")); err != nil {
		t.Errorf("the readable part: %v", err)
	}
	log, _ := os.ReadFile(logFile)
	if n := strings.Count(string(log), "npzfs: locked: cannot be read: "); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, log)
	}
}

// listed reports whether a listing of dir (readdir, not a lookup) holds
// name.
func listed(t *testing.T, dir, name string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("listing %s: %v", dir, err)
		return false
	}
	for _, e := range ents {
		if e.Name() == name {
			return true
		}
	}
	return false
}

// TestFolderMountListingsChange: files added to or removed from a
// mounted folder, at its top and in a sub-folder, appear in and vanish
// from its listings (readdir, not stat, which a kept listing would not
// answer) once the cache time has passed, however often it was listed
// before; and a file of a replaced archive open in this process reads
// its old bytes or EIO, never the new ones, while another process opens
// and reads the new archive whole.
func TestFolderMountListingsChange(t *testing.T) {
	src := shardFolder(t, 4)
	mnt := mount(t, src)
	for range 3 {
		if !listed(t, mnt, "shard0000.npz") || !listed(t, filepath.Join(mnt, "part1"), "shard0001.npz") {
			t.Fatal("the shards are not listed")
		}
	}
	old, err := os.Open(filepath.Join(mnt, "shard0000.npz", "x", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.ReadAt(make([]byte, 4), 0); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(python, "-c", `import numpy as np, os, sys
d = sys.argv[1]
np.savez(os.path.join(d, 'new3.npz'), z=np.arange(5))
np.savez(os.path.join(d, 'part1', 'new4.npz'), z=np.arange(6))
os.remove(os.path.join(d, 'shard0002.npz'))
os.remove(os.path.join(d, 'part1', 'shard0001.npz'))
np.savez(os.path.join(d, 'tmp.npz'), x=np.full((10, 100), 9, '<f4'), y=np.zeros(3))
os.rename(os.path.join(d, 'tmp.npz'), os.path.join(d, 'shard0000.npz'))`, src)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("changing the folder: %v: %s", err, out)
	}
	eventually(t, "new3.npz is listed", func() bool { return listed(t, mnt, "new3.npz") })
	eventually(t, "part1/new4.npz is listed", func() bool { return listed(t, filepath.Join(mnt, "part1"), "new4.npz") })
	eventually(t, "shard0002.npz is no longer listed", func() bool { return !listed(t, mnt, "shard0002.npz") })
	eventually(t, "part1/shard0001.npz is no longer listed", func() bool {
		return !listed(t, filepath.Join(mnt, "part1"), "shard0001.npz")
	})
	// Another process reads the new shard0000.npz whole while this one
	// still holds the old one's file open.
	eventually(t, "another process reads the new shard0000.npz", func() bool {
		out, err := exec.Command(python, "-c", `import numpy as np, sys
a = np.load(sys.argv[1])
print(int(a.sum()))`, filepath.Join(mnt, "shard0000.npz", "x.npy")).Output()
		return err == nil && strings.TrimSpace(string(out)) == "9000"
	})
	// The old file's bytes, from the page cache, or EIO; never the new.
	b := make([]byte, 4)
	if _, err := old.ReadAt(b, 2000); err == nil && !bytes.Equal(b, []byte{0, 0, 0xfa, 0x43}) || err != nil && !errors.Is(err, syscall.EIO) {
		t.Errorf("reading on in the replaced archive's open file: % x, %v; want the old bytes or EIO", b, err)
	}
	checkSame(t, src, mnt)
}
