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

// raReader is a RawArray reader written from the format's description
// alone (docs/views.md): a header of 64-bit little-endian integers, then
// the data, dimensions fastest-varying first. It rebuilds numeric arrays
// with their element type and byte order; for user-defined elements it
// gives the elements' bytes.
const raReader = `
import numpy as np, struct

def read_ra(path):
    b = open(path, 'rb').read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack('<6Q', b[:48])
    assert magic == 0x7961727261776172 and b[:8] == b'rawarray', magic
    dims = struct.unpack('<%dQ' % ndims, b[48:48 + 8 * ndims])
    data = b[48 + 8 * ndims:]
    assert len(data) == size, (len(data), size)
    order = '>' if flags & 1 else '<'
    kind = {1: 'i', 2: 'u', 3: 'f', 4: 'c'}.get(eltype)
    dt = np.dtype(order + kind + str(elbyte)) if kind else np.dtype('V%d' % elbyte)
    n = 1
    for d in dims:
        n *= d
    assert n * elbyte == size, (dims, elbyte, size)
    # Column-major: the first dimension varies fastest.
    return np.ndarray(shape=dims, dtype=dt, buffer=data, order='F'), eltype, elbyte, flags
`

// TestRawArrayView: KEY.ra of every numeric kind, both byte orders, C
// and Fortran order, 0-d and empty arrays, stored and deflated, read back
// by a reader written from the format: numeric arrays come back equal to
// numpy's (the transpose for C order, with no byte moved), others as
// their elements' bytes; the .ra of arrays with no RawArray form is
// listed and fails its reads (EIO), and npzfs ls says why.
func TestRawArrayView(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	for _, save := range []string{"savez", "savez_compressed"} {
		archive := filepath.Join(dir, save+".npz")
		gen := exec.Command(python, "-c", `import numpy as np, sys
rng = np.random.default_rng(7)
arrays = {}
for t in ['i1', 'u1', 'i2', 'u2', 'i4', 'u4', 'i8', 'u8', 'f2', 'f4', 'f8', 'c8', 'c16']:
    for order in '<>':
        dt = np.dtype(t).newbyteorder(order)
        a = (rng.standard_normal((3, 4, 5)) * 100).astype(dt)
        arrays['c_%s_%s' % ('le' if order == '<' else 'be', t)] = a
        arrays['f_%s_%s' % ('le' if order == '<' else 'be', t)] = np.asfortranarray(a)
arrays['zero_d'] = np.float64(3.25)
arrays['empty'] = np.zeros((4, 0, 2), '>i2')
arrays['bools'] = np.array([[True, False, True]])
arrays['strings'] = np.array(['ab', 'cde'], 'S3')
arrays['unicode'] = np.array(['ab', 'xyz'], '>U3')
arrays['times'] = np.array(['2024-01-01', '2025-06-30'], 'M8[D]')
arrays['records'] = np.array([(1, 2.5), (3, 4.5)], [('a', '<i4'), ('b', '<f8')])
arrays['mixed'] = np.array([(1, 2.5)], [('a', '<i4'), ('b', '>f8')])
arrays['objects'] = np.array([{'x': 1}, None], dtype=object)
getattr(np, sys.argv[2])(sys.argv[1], **arrays)`, archive, save)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("writing the archive: %v: %s", err, out)
		}
		mnt := mount(t, archive)
		check := exec.Command(python, "-c", raReader+`
import sys, os, zipfile
archive, mnt = sys.argv[1], sys.argv[2]
npz = np.load(archive, allow_pickle=True)
checked = 0
for key in npz.files:
    a = npz[key]
    path = os.path.join(mnt, key + '.ra')
    if key in ('mixed', 'objects'):
        # Listed (names come from the archive's directory alone), but
        # every read fails.
        assert key + '.ra' in os.listdir(mnt), key
        try:
            open(path, 'rb').read()
            assert False, key + '.ra reads'
        except OSError as e:
            assert e.errno == 5, (key, e)
        continue
    r, eltype, elbyte, flags = read_ra(path)
    assert elbyte == a.dtype.itemsize, key
    assert flags == (1 if a.dtype.byteorder == '>' or (a.dtype.fields and a.dtype.fields['a'][0].byteorder == '>') else 0), key
    want = a if np.isfortran(a) else a.T
    assert r.shape == want.shape, (key, r.shape, want.shape)
    if a.dtype.kind in 'iufc':
        assert eltype == {'i': 1, 'u': 2, 'f': 3, 'c': 4}[a.dtype.kind], key
        assert r.dtype == a.dtype, (key, r.dtype, a.dtype)
        assert np.array_equal(r, want), key
    else:
        assert eltype == 0, (key, eltype)
        assert np.array_equal(r.view(np.uint8).reshape(-1), np.frombuffer(np.asarray(want).tobytes(order='F'), np.uint8)), key
    # No byte of data moved: the data after the header is raw.bin.
    raw = open(os.path.join(mnt, key, 'raw.bin'), 'rb').read()
    assert open(path, 'rb').read()[48 + 8 * a.ndim:] == raw, key
    checked += 1
print(checked)`, archive, mnt)
		out, err := check.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "59" {
			t.Errorf("%s: RawArray reader: %v: %s", save, err, out)
		}
		// od shows the header as the README says.
		od, err := exec.Command("od", "-A", "d", "-t", "uL", "-N", "48", filepath.Join(mnt, "c_le_f4.ra")).Output()
		if err != nil {
			t.Fatal(err)
		}
		// magic, flags, element type, element size, data size, dimensions
		want := "8746397786917265778 0 3 4 240 3"
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(od)), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				got = append(got, f[1:]...)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("od of c_le_f4.ra's header:\n%s\nwant the integers %s", od, want)
		}
		if fi, err := os.Stat(filepath.Join(mnt, "zero_d.ra")); err != nil || fi.Size() != 48+8 {
			t.Errorf("zero_d.ra: %v, %v", fi, err)
		}
		r := npzfs(t, "ls", archive)
		if !strings.Contains(r.stdout, "no .ra: its record has fields of both byte orders") || !strings.Contains(r.stdout, "no .ra: an object array") {
			t.Errorf("npzfs ls does not say why arrays have no .ra:\n%s", r.stdout)
		}
	}
}

// TestLargeRawArrayReads: KEY.ra of a 12 MiB stored array reads whole in
// reads of the largest size (its head goes into the spliced reply with
// the data's first page: a head of its own took one pipe buffer more than
// go-fuse's reply pipe holds, and the kernel got short replies).
func TestLargeRawArrayReads(t *testing.T) {
	needFuse(t)
	dir := mount(t, remoteArchive(t, t.TempDir()))
	ra, err := os.ReadFile(filepath.Join(dir, "stored.ra"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "stored", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "stored.ra"))
	if err != nil || int64(len(ra)) != fi.Size() || len(ra) != len(raw)+56 || !bytes.Equal(ra[56:], raw) {
		t.Errorf("stored.ra: read %d bytes, size %v (%v); raw.bin %d bytes", len(ra), fi.Size(), err, len(raw))
	}
}
