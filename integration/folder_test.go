package integration

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case strings.HasSuffix(path, ".npy"):
			want, _ := os.ReadFile(path)
			got, err := os.ReadFile(filepath.Join(mnt, rel))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, %v; want %d", rel, len(got), err, len(want))
			}
			files++
		case strings.HasSuffix(path, ".npz") && filepath.Base(path) != "broken.npz":
			zr, err := zip.OpenReader(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				rc, _ := f.Open()
				want, _ := io.ReadAll(rc)
				rc.Close()
				got, err := os.ReadFile(filepath.Join(mnt, rel, f.Name))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s/%s: %d bytes, %v; want %d", rel, f.Name, len(got), err, len(want))
				}
				files++
			}
			zr.Close()
		}
		return nil
	})
	return files
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
	eventually(t, "big.npz is the new archive", func() bool {
		b := make([]byte, 4)
		f, err := os.Open(filepath.Join(mnt, "big.npz", "x", "raw.bin"))
		if err != nil {
			return false
		}
		defer f.Close()
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
	mnt := mount(t, src, "--max-open", strconv.Itoa(maxOpen))
	pids := daemons(mnt)
	if len(pids) != 1 {
		t.Fatalf("daemons %v", pids)
	}
	// The daemon's descriptors of archives (others are its own: /dev/fuse,
	// pipes for splicing, the log).
	fds := func() int {
		dir := fmt.Sprintf("/proc/%d/fd", pids[0])
		ents, _ := os.ReadDir(dir)
		k := 0
		for _, e := range ents {
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, src) {
				k++
			}
		}
		return k
	}
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
