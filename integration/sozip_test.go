//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/testserver"
)

// sozipWriter writes, with Python's zlib and struct alone, archives as
// the SOZip spec (sozip/sozip-spec 0.5) and APPNOTE describe them: each
// array KEY.npy (its np.save bytes) deflated raw at level 6 in chunks of
// CHUNK bytes, Z_SYNC_FLUSH then Z_FULL_FLUSH after each but the last,
// followed by its hidden index, a stored entry .KEY.npy.sozip.idx with a
// local header and no central directory record: a 32-byte header
// (version 1, no skip, the chunk size, 8-byte offsets, the uncompressed
// and compressed sizes), then where each chunk but the first starts in
// the compressed stream. SPOIL changes big.npy's index: crc (a table
// byte, its CRC-32 kept), short (its last offset cut off), foreign
// (noise.npy's index), shift (every offset a byte later), inside (every
// eighth chunk, where the mount's spans of 512 KiB start, said to start
// inside the chunk before), swap (two offsets out of order), or none.
// It writes OUT and, beside it, big.npy's bytes.
const sozipWriter = `
import io, struct, sys, zlib
import numpy as np
out, chunk, spoil = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(40)
arrays = {"big": np.cumsum(rng.standard_normal(6 << 20)).astype("<f4"),
          "noise": rng.integers(0, 256, 6 << 20, dtype="u1")}

def npy(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()

def chunked(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    parts, starts, pos = [], [], 0
    for off in range(0, len(data), chunk):
        if off:
            starts.append(pos)
        b = c.compress(data[off:off + chunk])
        if off + chunk < len(data):
            b += c.flush(zlib.Z_SYNC_FLUSH) + c.flush(zlib.Z_FULL_FLUSH)
        else:
            b += c.flush(zlib.Z_FINISH)
        parts.append(b)
        pos += len(b)
    return b"".join(parts), starts

def index(size, csize, starts):
    return struct.pack("<IIIIQQ", 1, 0, chunk, 8, size, csize) + b"".join(struct.pack("<Q", s) for s in starts)

def local(name, method, crc, csize, size):
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, csize, size, len(name), 0) + name

members = {}
for key, a in arrays.items():
    data = npy(a)
    stream, starts = chunked(data)
    members[key] = (data, stream, starts, index(len(data), len(stream), starts))
data, stream, starts, idx = members["big"]
if spoil == "crc":
    idx = idx[:40] + bytes([idx[40] ^ 1]) + idx[41:]
elif spoil == "short":
    idx = idx[:-8]
elif spoil == "foreign":
    idx = members["noise"][3]
elif spoil == "shift":
    idx = index(len(data), len(stream), [s + 1 for s in starts])
elif spoil == "inside":
    s = list(starts)
    for i in range(7, len(s), 8):
        s[i] = (s[i - 1] + s[i]) // 2
    idx = index(len(data), len(stream), s)
elif spoil == "swap":
    s = list(starts)
    s[3], s[4] = s[4], s[3]
    idx = index(len(data), len(stream), s)
spoiled_crc = zlib.crc32(index(len(data), len(stream), starts)) if spoil == "crc" else zlib.crc32(idx)
members["big"] = (data, stream, starts, idx, spoiled_crc)
members["noise"] += (zlib.crc32(members["noise"][3]),)

f, directory = open(out, "wb"), b""
for key, (data, stream, starts, idx, icrc) in members.items():
    name, at = key.encode() + b".npy", f.tell()
    crc = zlib.crc32(data)
    f.write(local(name, 8, crc, len(stream), len(data)) + stream)
    f.write(local(b"." + name + b".sozip.idx", 0, icrc, len(idx), len(idx)) + idx)
    directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc,
                             len(stream), len(data), len(name), 0, 0, 0, 0, 0, at) + name
at = f.tell()
f.write(directory + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 2, 2, len(directory), at, 0))
f.close()
open(out + ".big.npy", "wb").write(members["big"][0])
`

// writeSOZip writes an archive with sozipWriter, chunks of chunk bytes,
// big.npy's index spoiled as spoil says, and returns big.npy's bytes;
// np.load and zipfile's testzip read the archive as any other.
func writeSOZip(t *testing.T, out string, chunk int, spoil string) []byte {
	t.Helper()
	if b, err := exec.Command(python, "-c", sozipWriter, out, strconv.Itoa(chunk), spoil).CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v: %s", out, err, b)
	}
	check := `import sys, zipfile, numpy as np
z = zipfile.ZipFile(sys.argv[1])
assert z.namelist() == ["big.npy", "noise.npy"] and z.testzip() is None
assert (np.load(sys.argv[1])["big"] == np.load(sys.argv[1] + ".big.npy")).all()`
	if b, err := exec.Command(python, "-c", check, out).CombinedOutput(); err != nil {
		t.Fatalf("np.load of %s: %v: %s", out, err, b)
	}
	big, err := os.ReadFile(out + ".big.npy")
	if err != nil {
		t.Fatal(err)
	}
	return big
}

// readMounted reads n bytes of file at off, and checks them against want.
func readMounted(t *testing.T, what, file string, want []byte, off, n int64) {
	t.Helper()
	b := make([]byte, n)
	if k, err := readAt(file, b, off); err != nil || !bytes.Equal(b[:k], want[off:off+n]) {
		t.Fatalf("%s: %d bytes at %d: %d, %v, right bytes %v", what, n, off, k, err, bytes.Equal(b[:k], want[off:off+n]))
	}
}

// TestSOZipFromAnotherWriter: an archive whose members carry SOZip
// indexes written by another writer (Python's zlib, from the spec) is
// listed with them (npzfs ls, and --json), and npzfs index builds and
// saves nothing for them, sidecar included; mounted with an empty index
// folder and --verify=lazy (a member of 24 MiB is otherwise verified
// before it is served, by a pass over its chunks), it reads 64 KiB at
// 90% of the member right at once: the daemon reads a chunk's compressed
// bytes and the index, not the member (its read bytes, from /proc), and
// writes no index; the whole member then reads right. Mounted as by
// default, the same read is right too, once the member is verified.
func TestSOZipFromAnotherWriter(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "sozip.npz")
	big := writeSOZip(t, archive, 64<<10, "none")
	idx := t.TempDir()
	if r := npzfs(t, "ls", archive); r.code != 0 || !strings.Contains(r.stdout, "SOZip index: 385 chunks of 64K\n") {
		t.Errorf("npzfs ls: exit %d, %q", r.code, r.stdout)
	}
	if r := npzfs(t, "ls", "--json", archive); r.code != 0 || !strings.Contains(r.stdout, `"chunk_size": 65536,`) {
		t.Errorf("npzfs ls --json: exit %d, %q", r.code, r.stdout)
	}
	side := filepath.Join(dir, "sozip.npzidx")
	r := npzfs(t, "index", "--index-dir", idx, "--sidecar-file", side, archive)
	if r.code != 0 || !strings.Contains(r.stdout, "0 built, 2 with a SOZip index;") {
		t.Errorf("npzfs index: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(side); err == nil || len(indexFiles(t, idx)) > 0 {
		t.Errorf("npzfs index wrote a sidecar (%v) or indexes (%q)", err, indexFiles(t, idx))
	}
	needFuse(t)
	mnt := mount(t, archive, "--index-dir", idx, "--verify", "lazy")
	file := filepath.Join(mnt, "big.npy")
	pid := theDaemon(t, mnt)
	before := readChars(t, pid)
	off := int64(len(big)) * 9 / 10
	readMounted(t, "at 90%", file, big, off, 64<<10)
	n := readChars(t, pid) - before
	if n > int64(len(big))/20 {
		t.Errorf("a read of 64 KiB at 90%% had the daemon read %d bytes, of a member of %d", n, len(big))
	}
	t.Logf("a read of 64 KiB at 90%% had the daemon read %d bytes", n)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("whole read: %v, right bytes %v", err, bytes.Equal(got, big))
	}
	clear(t, mnt)
	mnt = mount(t, archive, "--index-dir", idx)
	readMounted(t, "at 90%, verified first", filepath.Join(mnt, "big.npy"), big, off, 64<<10)
	clear(t, mnt)
	if files := indexFiles(t, idx); len(files) > 0 {
		t.Errorf("index folder holds %q", files)
	}
}

// TestSOZipSpoiled: an index that is damaged, cut short, another
// member's, or not ascending is not used, and one that lies (offsets a
// byte off, one inside a chunk) is dropped at the first chunk that is
// not what it says: every read still gives the member's bytes (its
// stream is sound), and the log says the index is not used.
func TestSOZipSpoiled(t *testing.T) {
	needFuse(t)
	needNumpy(t)
	dir := t.TempDir()
	for _, spoil := range []string{"crc", "short", "foreign", "shift", "inside", "swap"} {
		t.Run(spoil, func(t *testing.T) {
			archive := filepath.Join(dir, spoil+".npz")
			big := writeSOZip(t, archive, 64<<10, spoil)
			log := filepath.Join(t.TempDir(), "npzfs.log")
			mnt := mount(t, archive, "--index-dir", t.TempDir(), "--log", log)
			file := filepath.Join(mnt, "big.npy")
			for _, f := range []int64{90, 50, 99} {
				readMounted(t, "at "+strconv.FormatInt(f, 10)+"%", file, big, int64(len(big))*f/100, 64<<10)
			}
			if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, big) {
				t.Errorf("whole read: %v, right bytes %v", err, bytes.Equal(got, big))
			}
			clear(t, mnt)
			if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte(`"big.npy": its SOZip index is not used`)) {
				t.Errorf("the log does not say the index is not used:\n%s", b)
			}
		})
	}
}

// TestSOZipRemote: a remote archive's member with a SOZip index is read
// deep at once: its first read past its first span makes three requests
// (its local header, its index, the chunk: noise.npy, after it, keeps
// the index out of the tail the mount fetched), a read elsewhere in it
// one.
func TestSOZipRemote(t *testing.T) {
	needFuse(t)
	needNumpy(t)
	www := t.TempDir()
	big := writeSOZip(t, filepath.Join(www, "sozip.npz"), 256<<10, "none")
	ng := testserver.StartNginx(t, www)
	mnt := mount(t, ng.URL+"/sozip.npz")
	requests := func() int {
		if r := ng.Requests(); len(r) > 1 || r[0] != "" {
			return len(r)
		}
		return 0
	}
	file := filepath.Join(mnt, "big.npy")
	n := requests()
	readMounted(t, "at 30%", file, big, int64(len(big))*3/10, 4096)
	if got := requests() - n; got != 3 {
		t.Errorf("the first read at 30%% made %d requests: %q", got, ng.Requests()[n:])
	}
	n = requests()
	readMounted(t, "at 60%", file, big, int64(len(big))*6/10, 4096)
	if got := requests() - n; got != 1 {
		t.Errorf("a read at 60%% made %d requests: %q", got, ng.Requests()[n:])
	}
}
