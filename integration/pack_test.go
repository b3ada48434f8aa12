//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
)

// onlyIn checks that dir holds exactly names: nothing a run of pack left.
func onlyIn(t *testing.T, dir string, names ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestPackHostile: npzfs pack of every hostile archive either fails, in
// one line on stderr and exit 1, leaving no OUT and nothing else; or
// writes an OUT whose every member reads whole with its CRC-32 right.
// One that cannot be opened, or with a file whose reads fail, fails.
func TestPackHostile(t *testing.T) {
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.npz"), filepath.Join(dir, "out.npz")
			if err := os.WriteFile(in, c.Archive, 0o644); err != nil {
				t.Fatal(err)
			}
			r := npzfs(t, "pack", "--chunk", "4096", in, out)
			if r.code != 0 {
				if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "npzfs pack: ") || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line", r.code, r.stdout, r.stderr)
				}
				onlyIn(t, dir, "in.npz")
				return
			}
			if c.Refused || len(c.Bad) > 0 {
				t.Errorf("packed, though refused (%v) or with files that cannot be read (%q)", c.Refused, c.Bad)
			}
			if strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
			onlyIn(t, dir, "in.npz", "out.npz")
			if v := npzfs(t, "ls", "--verify", out); v.code != 0 {
				t.Errorf("ls --verify of what pack wrote: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPackNumpy: archives numpy writes, packed by npzfs pack in every
// mode, with zip64 records everywhere (the hidden --zip64) and without,
// are read by np.load as they were and pass zipfile's testzip; and a
// packed archive's stored arrays, mounted, have a header.json whose
// archive_offset np.memmap maps on a page boundary.
func TestPackNumpy(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	gen := exec.Command(python, "-c", `import numpy as np, sys, os
d = sys.argv[1]
a = dict(f=np.sin(np.arange(300000.0)), i=np.arange(5000, dtype='>i4').reshape(50, 100).T,
         s=np.float32(1.5), e=np.zeros((0, 4), 'u1'), r=np.zeros(3, [('a', '<i2'), ('b', 'S3')]),
         o=np.array([1, 'x', None], dtype=object), n=np.random.default_rng(1).standard_normal(20000))
np.savez(os.path.join(d, 'savez.npz'), **a)
np.savez_compressed(os.path.join(d, 'compressed.npz'), **a)`, dir)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the archives: %v: %s", err, out)
	}
	var packed [][2]string
	for _, in := range []string{"savez.npz", "compressed.npz"} {
		for _, mode := range []string{"keep", "none", "deflate", "auto"} {
			for _, zip64 := range []bool{false, true} {
				out := filepath.Join(dir, strings.TrimSuffix(in, ".npz")+"-"+mode+map[bool]string{true: "-zip64"}[zip64]+".npz")
				args := []string{"pack", "--compress", mode, "--chunk", "65536"}
				if zip64 {
					args = append(args, "--zip64")
				}
				if r := npzfs(t, append(args, filepath.Join(dir, in), out)...); r.code != 0 {
					t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
				}
				packed = append(packed, [2]string{filepath.Join(dir, in), out})
			}
		}
	}
	pairs, _ := json.Marshal(packed)
	check := exec.Command(python, "-c", `import json, sys, zipfile, numpy as np
for src, dst in json.loads(sys.argv[1]):
    assert zipfile.ZipFile(dst).testzip() is None, dst
    zip64 = b'PK\x06\x06' in open(dst, 'rb').read()
    assert zip64 == dst.endswith('-zip64.npz'), dst
    a, b = np.load(src, allow_pickle=True), np.load(dst, allow_pickle=True)
    assert a.files == b.files, dst
    for k in a.files:
        x, y = a[k], b[k]
        assert x.dtype == y.dtype and x.shape == y.shape and np.isfortran(x) == np.isfortran(y), (dst, k)
        assert repr(x.tolist()) == repr(y.tolist()), (dst, k)`, string(pairs))
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("np.load of the packed archives: %v: %s", err, out)
	}

	needFuse(t)
	archive := filepath.Join(dir, "compressed-none.npz")
	mnt := mount(t, archive)
	aligned := exec.Command(python, "-c", `import numpy as np, json, sys
archive, mnt = sys.argv[1], sys.argv[2]
for key in ('f', 'i', 'n'):
    h = json.load(open(mnt + '/' + key + '/header.json'))
    assert h['archive_offset'] % 4096 == 0, (key, h['archive_offset'])
    m = np.memmap(archive, dtype=np.dtype(h['descr']), mode='r', offset=h['archive_offset'],
                  shape=tuple(h['shape']), order='F' if h['fortran_order'] else 'C')
    assert m.ctypes.data % 4096 == 0, key
    assert (m == np.load(archive)[key]).all(), key`, archive, mnt)
	if out, err := aligned.CombinedOutput(); err != nil {
		t.Errorf("np.memmap of the packed archive: %v: %s", err, out)
	}
	clear(t, mnt)
}
