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

// TestBareNPYMount: a bare .npy mounts as an archive of one array: NAME.npy
// is the file byte for byte, NAME/raw.bin its data, and numpy's memory map
// of the mounted NAME.npy equals np.load of the file.
func TestBareNPYMount(t *testing.T) {
	needNumpy(t)
	src := filepath.Join(t.TempDir(), "grid.npy")
	gen := exec.Command(python, "-c", `import numpy as np, sys
np.save(sys.argv[1], np.arange(24, dtype='>f8').reshape(4, 6).T)`, src)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the .npy: %v: %s", err, out)
	}
	file, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := mount(t, src)
	got, err := os.ReadFile(filepath.Join(dir, "grid.npy"))
	if err != nil || !bytes.Equal(got, file) {
		t.Errorf("grid.npy: %d bytes, %v; want the file's %d", len(got), err, len(file))
	}
	raw, err := os.ReadFile(filepath.Join(dir, "grid", "raw.bin"))
	if err != nil || len(raw) != 24*8 || !bytes.HasSuffix(file, raw) {
		t.Errorf("grid/raw.bin: %d bytes, %v", len(raw), err)
	}
	check := exec.Command(python, "-c", `import numpy as np, sys
a = np.load(sys.argv[1], mmap_mode='r'); b = np.load(sys.argv[2])
assert isinstance(a, np.memmap) and a.dtype == b.dtype and a.shape == b.shape and (a == b).all(), (a, b)
print('ok')`, filepath.Join(dir, "grid.npy"), src)
	if out, err := check.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("numpy memory map of the mounted .npy: %v: %s", err, out)
	}
	if r := npzfs(t, "ls", src); r.code != 0 || !strings.Contains(r.stdout, "grid.npy") || !strings.Contains(r.stdout, "(6, 4)") {
		t.Errorf("npzfs ls of the .npy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestArchiveOffsetMapsTheArchive: header.json's archive_offset lets a
// program that cannot use FUSE map a stored array straight from the
// archive file, as numpy's issue on mmap_mode for .npz suggests.
func TestArchiveOffsetMapsTheArchive(t *testing.T) {
	needNumpy(t)
	archive := filepath.Join(t.TempDir(), "s.npz")
	gen := exec.Command(python, "-c", `import numpy as np, sys
np.savez(sys.argv[1], a=np.arange(60, dtype='<i4').reshape(3, 4, 5), f=np.asfortranarray(np.ones((7, 3), '>f8')))`, archive)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the archive: %v: %s", err, out)
	}
	dir := mount(t, archive)
	check := exec.Command(python, "-c", `import numpy as np, json, sys
archive, mnt = sys.argv[1], sys.argv[2]
for key in ('a', 'f'):
    h = json.load(open(mnt + '/' + key + '/header.json'))
    m = np.memmap(archive, dtype=np.dtype(h['descr']), mode='r', offset=h['archive_offset'],
                  shape=tuple(h['shape']), order='F' if h['fortran_order'] else 'C')
    assert (m == np.load(archive)[key]).all(), key
print('ok')`, archive, dir)
	if out, err := check.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("np.memmap of the archive at archive_offset: %v: %s", err, out)
	}
}
