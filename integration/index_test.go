//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/internal/testserver"
)

// indexFiles lists the saved indexes under an --index-dir folder.
func indexFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// blockFiles are the stored members' block CRC-32s saved in the index
// folder dir.
func blockFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "v1", "*", "*.crc"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// deepRead reads 4 KiB near the end of a mounted file and compares.
func deepRead(t *testing.T, what, path string, want []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := int64(len(want)) - 10000
	p := make([]byte, 4096)
	if _, err := f.ReadAt(p, off); err != nil || !bytes.Equal(p, want[off:off+4096]) {
		t.Errorf("%s: deep read of %s: %v, or wrong bytes", what, path, err)
	}
}

// TestSavedIndexes: a deflated member read whole leaves its index in
// --index-dir when the mount ends; a later mount reads deep at once from
// it and every byte is right; a damaged index is said in the log, not
// used, and never yields a wrong byte; --no-index writes nothing.
func TestSavedIndexes(t *testing.T) {
	archive, files := bigArchive(t, 16)
	idx := t.TempDir()
	log := filepath.Join(t.TempDir(), "npzfs.log")

	dir := mount(t, archive, "--index-dir", idx)
	if got, err := os.ReadFile(filepath.Join(dir, "deflated.npy")); err != nil || !bytes.Equal(got, files["deflated.npy"]) {
		t.Fatalf("first read: %v", err)
	}
	clear(t, dir) // the daemon saves the index before it exits
	saved := indexFiles(t, idx)
	if len(saved) != 1 {
		t.Fatalf("%d saved indexes after reading the deflated member, want 1", len(saved))
	}

	dir = mount(t, archive, "--index-dir", idx, "--log", log)
	deepRead(t, "saved index", filepath.Join(dir, "deflated", "raw.bin"), files["deflated/raw.bin"])
	sameFiles(t, dir, files)
	clear(t, dir)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("saved index")) {
		t.Errorf("a good index was refused: %s", b)
	}

	good, _ := os.ReadFile(saved[0])
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		func(b []byte) []byte { return b[:len(b)-7] },
	} {
		os.WriteFile(saved[0], damage(bytes.Clone(good)), 0o600)
		os.Remove(log)
		dir = mount(t, archive, "--index-dir", idx, "--log", log)
		deepRead(t, "damaged index", filepath.Join(dir, "deflated.npy"), files["deflated.npy"])
		sameFiles(t, dir, files)
		clear(t, dir)
		if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte("saved index")) {
			t.Errorf("a damaged index was not reported: %s", b)
		}
		if b, _ := os.ReadFile(saved[0]); !bytes.Equal(b, good) {
			t.Error("the damaged index was not rebuilt and saved again after a full read")
		}
	}

	// By default, in $XDG_CACHE_HOME/npzfs/index (the suite sets it).
	def := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "npzfs", "index")
	before := len(indexFiles(t, def))
	own, _ := bigArchive(t, 17) // an archive no other test indexes
	dir = mount(t, own)
	if _, err := os.ReadFile(filepath.Join(dir, "deflated.npy")); err != nil {
		t.Fatal(err)
	}
	clear(t, dir)
	if after := len(indexFiles(t, def)); after != before+1 {
		t.Errorf("%d indexes in the default folder %s after a full read, had %d", after, def, before)
	}

	// An index folder that cannot be made does not stop the mount.
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	os.Remove(log)
	dir = mount(t, archive, "--index-dir", filepath.Join(notDir, "index"), "--log", log)
	sameFiles(t, dir, files)
	clear(t, dir)
	if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte("indexes of deflated members are not kept")) {
		t.Errorf("an unusable index folder was not said: %s", b)
	}

	none := t.TempDir()
	dir = mount(t, archive, "--no-index", "--index-dir", none)
	sameFiles(t, dir, files)
	clear(t, dir)
	if entries, _ := os.ReadDir(none); len(entries) != 0 {
		t.Errorf("--no-index wrote %d entries in the index folder", len(entries))
	}
}

// sameFiles compares files of a mount with what they should hold.
func sameFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or wrong bytes", name, err)
		}
	}
}

// indexedLine is npzfs index's summary (dataset.IndexReport.Summary):
// members indexed, of how many, built, split, already saved, failed, not
// saved, stored skipped, and the index folder.
var indexedLine = regexp.MustCompile(`^indexed (\d+) of (\d+) (?:deflated )?members? (?:of \d+ archives )?\(.*\)(?: in [\d.]+ s, \d+ MB/s)?: (\d+) built(?: \((\d+) split among (\d+) threads\))?(?:, (\d+) already saved)?(?:, (\d+) failed)?(?:, (\d+) not saved)?(?:, \d+ stored skipped)?; indexes in (.*)\n$`)

// Submatches of indexedLine.
const (
	ixIndexed = 1 + iota
	ixOf
	ixBuilt
	ixSplit
	ixThreads
	ixLoaded
	ixFailed
	ixUnsaved
	ixDir
)

// TestIndexCommand: npzfs index builds what a mount then uses, names a
// member it cannot read and exits 1, and refuses keys it cannot index.
func TestIndexCommand(t *testing.T) {
	archive, files := bigArchive(t, 16)
	idx := t.TempDir()
	r := npzfs(t, "index", archive, "--index-dir", idx)
	m := indexedLine.FindStringSubmatch(r.stdout)
	// The deflated member's index, and the stored member's block
	// CRC-32s (16 MiB: verified, and saved).
	if r.code != 0 || m == nil || m[ixIndexed] != "2" || m[ixOf] != "2" || m[ixBuilt] != "2" || m[ixDir] != filepath.Join(idx, "v1") || r.stderr != "" {
		t.Fatalf("npzfs index: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n, crcs := len(indexFiles(t, idx)), len(blockFiles(t, idx)); n != 1 || crcs != 1 {
		t.Fatalf("%d indexes and %d block CRC-32 files saved", n, crcs)
	}
	// Again: the saved index is loaded and checked, and stays.
	r = npzfs(t, "index", archive, "--index-dir", idx, "deflated")
	if m := indexedLine.FindStringSubmatch(r.stdout); r.code != 0 || m == nil || m[ixBuilt] != "0" || m[ixLoaded] != "1" || strings.Contains(r.stdout, "MB/s") {
		t.Errorf("second npzfs index: exit %d, %q %q; want no rate (nothing was inflated)", r.code, r.stdout, r.stderr)
	}
	dir := mount(t, archive, "--index-dir", idx)
	deepRead(t, "after npzfs index", filepath.Join(dir, "deflated", "raw.bin"), files["deflated/raw.bin"])
	clear(t, dir)

	// A stored member of 16 MiB has its block CRC-32s saved already.
	if r := npzfs(t, "index", archive, "--index-dir", idx, "stored"); r.code != 0 || !strings.Contains(r.stdout, "indexed 1 of 1 member (") || !strings.Contains(r.stdout, "1 already saved") {
		t.Errorf("npzfs index stored: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if r := npzfs(t, "index", archive, "--index-dir", idx, "nothere"); r.code != 1 || !strings.Contains(r.stderr, `no member "nothere"`) {
		t.Errorf("npzfs index nothere: exit %d, %q", r.code, r.stderr)
	}

	// --sidecar: the indexes beside the archive, which a mount with an
	// empty index folder finds.
	side := strings.TrimSuffix(archive, ".npz") + ".npzidx"
	r = npzfs(t, "index", "--sidecar", archive, "--index-dir", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stdout, "; sidecar "+side) {
		t.Errorf("npzfs index --sidecar: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	log := filepath.Join(t.TempDir(), "npzfs.log")
	empty := t.TempDir()
	dir = mount(t, archive, "--index-dir", empty, "--log", log)
	deepRead(t, "with the sidecar", filepath.Join(dir, "deflated", "raw.bin"), files["deflated/raw.bin"])
	clear(t, dir)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("not used")) {
		t.Errorf("the sidecar was refused: %s", b)
	}
	if n := len(indexFiles(t, empty)); n != 0 {
		t.Errorf("a deep read with the sidecar saved %d indexes", n)
	}

	// A deflated member whose stream is damaged: named, exit 1, no index.
	data := hostile.NPY("<f4", []int64{1 << 20}, hostile.Bytes(4<<20, 3))
	z := hostile.Zip([]hostile.Member{{Name: "bad.npy", Data: data, Deflate: true}})
	z[len(z)/2] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.npz")
	os.WriteFile(bad, z, 0o644)
	idx2 := t.TempDir()
	r = npzfs(t, "index", bad, "--index-dir", idx2)
	if m := indexedLine.FindStringSubmatch(r.stdout); r.code != 1 || m == nil || m[ixIndexed] != "0" || m[ixFailed] != "1" || !strings.Contains(r.stderr, "bad.npy") {
		t.Errorf("npzfs index of a damaged member: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if n := len(indexFiles(t, idx2)); n != 0 {
		t.Errorf("%d indexes saved for a damaged member", n)
	}
}

// noiseArchive writes dir/noise.npz, one deflated member noise.npy of
// 12 MiB of float32 noise (about 11 MiB deflated: npzfs index splits
// it), and returns its path and the array's bytes.
func noiseArchive(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	return noiseArchiveOf(t, dir, 17)
}

// noiseArchiveOf is noiseArchive with the noise of another seed.
func noiseArchiveOf(t *testing.T, dir string, seed uint64) (string, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	raw := make([]byte, 12<<20)
	for i := 0; i < len(raw); i += 4 {
		binary.LittleEndian.PutUint32(raw[i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	archive := filepath.Join(dir, "noise.npz")
	z := hostile.Zip([]hostile.Member{{Name: "noise.npy", Data: hostile.NPY("<f4", []int64{int64(len(raw) / 4)}, raw), Deflate: true}})
	if err := os.WriteFile(archive, z, 0o444); err != nil {
		t.Fatal(err)
	}
	return archive, raw
}

// TestIndexCommandSplits: npzfs index shares the first pass through a
// large member among --workers threads and says so; a mount then reads
// every byte of the member right through the index it saved. With
// --workers 1 the member is indexed from its start.
func TestIndexCommandSplits(t *testing.T) {
	archive, raw := noiseArchive(t, t.TempDir())
	for _, tc := range []struct{ workers, split string }{{"2", "1"}, {"1", ""}} {
		idx := t.TempDir()
		r := npzfs(t, "index", "--workers", tc.workers, archive, "--index-dir", idx)
		m := indexedLine.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil || m[ixIndexed] != "1" || m[ixSplit] != tc.split {
			t.Fatalf("npzfs index --workers %s: exit %d, stdout %q, stderr %q", tc.workers, r.code, r.stdout, r.stderr)
		}
		dir := mount(t, archive, "--index-dir", idx)
		got, err := os.ReadFile(filepath.Join(dir, "noise", "raw.bin"))
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("--workers %s: reading the member whole: %v, or wrong bytes", tc.workers, err)
		}
		clear(t, dir)
	}
	if r := npzfs(t, "index", "--workers", "0", archive); r.code != 2 || !strings.Contains(r.stderr, "--workers 0") {
		t.Errorf("--workers 0: exit %d, %q", r.code, r.stderr)
	}
}

// TestDeepFirstRead: on a fresh mount without indexes, a first read at
// the end of a large deflated member (which the daemon's other cores
// help to reach) and then the whole member read right.
func TestDeepFirstRead(t *testing.T) {
	archive, raw := noiseArchive(t, t.TempDir())
	dir := mount(t, archive, "--no-index")
	path := filepath.Join(dir, "noise", "raw.bin")
	deepRead(t, "first", path, raw)
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, raw) {
		t.Errorf("reading the member whole after: %v, or wrong bytes", err)
	}
	clear(t, dir)
}

// TestIndexCommandFolder: npzfs index of a folder indexes the deflated
// members of every archive under it (sub-folders too), names an archive
// it cannot open and exits 1, and a mount of the folder reads deep in
// each member at once from the indexes saved.
func TestIndexCommandFolder(t *testing.T) {
	www := t.TempDir()
	big, files := bigArchive(t, 4)
	b, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(www, "sub"), 0o755)
	os.WriteFile(filepath.Join(www, "one.npz"), b, 0o644)
	os.WriteFile(filepath.Join(www, "sub", "bad.npz"), []byte("not a zip file at all"), 0o644)
	_, raw := noiseArchive(t, filepath.Join(www, "sub"))
	idx := t.TempDir()
	r := npzfs(t, "index", www, "--index-dir", idx)
	if r.code != 1 || !strings.HasPrefix(r.stdout, "indexed 2 of 2 deflated members of 3 archives (") ||
		!strings.Contains(r.stderr, "npzfs index: sub/bad.npz: ") {
		t.Fatalf("npzfs index FOLDER: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := len(indexFiles(t, idx)); n != 2 {
		t.Fatalf("%d indexes saved", n)
	}
	if r := npzfs(t, "index", www, "deflated", "--index-dir", idx); r.code != 2 || !strings.Contains(r.stderr, "not of a folder") {
		t.Errorf("npzfs index FOLDER KEY: exit %d, %q", r.code, r.stderr)
	}
	// The mount uses them: a member it indexed itself as far as the deep
	// read would have its index saved again (a new file renamed into
	// place) when the mount ends.
	before := map[string]os.FileInfo{}
	for _, f := range indexFiles(t, idx) {
		before[f], _ = os.Stat(f)
	}
	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, www, "--index-dir", idx, "--log", log)
	deepRead(t, "one.npz", filepath.Join(dir, "one.npz", "deflated", "raw.bin"), files["deflated/raw.bin"])
	deepRead(t, "sub/noise.npz", filepath.Join(dir, "sub", "noise.npz", "noise", "raw.bin"), raw)
	clear(t, dir)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("not used")) {
		t.Errorf("an index was refused: %s", b)
	}
	for _, f := range indexFiles(t, idx) {
		if fi, _ := os.Stat(f); before[f] == nil || !os.SameFile(fi, before[f]) {
			t.Errorf("%s was written again by the mount: its member was indexed anew", f)
		}
	}
}

// TestMountIndexInBackground: mount --index indexes the deflated member
// once the mount is live, saves its index and says so in the log; reads
// meanwhile and after are right.
func TestMountIndexInBackground(t *testing.T) {
	archive, files := bigArchive(t, 18)
	idx := t.TempDir()
	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, archive, "--index", "--index-dir", idx, "--log", log)
	deepRead(t, "while indexing", filepath.Join(dir, "deflated", "raw.bin"), files["deflated/raw.bin"])
	eventually(t, "the background indexing is logged", func() bool {
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte("background indexing: indexed 2 of 2 members (")) && bytes.Contains(b, []byte(": 2 built"))
	})
	sameFiles(t, dir, files)
	clear(t, dir)
	if n := len(indexFiles(t, idx)); n != 1 {
		t.Errorf("%d indexes saved by mount --index, want 1", n)
	}
}

// TestIndexCommandCannotSave: npzfs index into a full index folder says
// which indexes it could not save, counts them in its summary and exits
// 1; a mount --index into it logs them as not saved.
func TestIndexCommandCannotSave(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	archive, files := bigArchive(t, 16)
	idx := t.TempDir()
	if err := syscall.Mount("none", idx, "tmpfs", 0, "size=256k"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	defer syscall.Unmount(idx, 0)
	if err := os.MkdirAll(filepath.Join(idx, "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Fill it: nothing more can be written.
	fill, err := os.Create(filepath.Join(idx, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err = fill.Write(make([]byte, 4096)); err == nil; _, err = fill.Write(make([]byte, 4096)) {
	}
	fill.Close()

	r := npzfs(t, "index", archive, "--index-dir", idx)
	m := indexedLine.FindStringSubmatch(r.stdout)
	if r.code != 1 || m == nil || m[ixBuilt] != "2" || m[ixUnsaved] != "2" || !strings.Contains(r.stderr, "cannot save its index") {
		t.Errorf("npzfs index into a full folder: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, archive, "--index", "--index-dir", idx, "--log", log)
	eventually(t, "the background indexing is logged", func() bool {
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte("background indexing: indexed 2 of 2 members ("))
	})
	sameFiles(t, dir, files)
	clear(t, dir)
	if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte(", 2 not saved")) || !bytes.Contains(b, []byte("cannot save its index")) {
		t.Errorf("mount --index into a full folder did not say what it could not save:\n%s", b)
	}
}

// storedDeflateArchive writes dir/a.npz, one member a.npy of 32 MiB
// deflated at level 0 (stored blocks: only the member's CRC-32, checked
// at its end, covers its bytes), and returns its path and the member.
func storedDeflateArchive(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	data := hostile.NPY("<f4", []int64{8 << 20}, hostile.Bytes(32<<20, 25))
	var comp bytes.Buffer
	w, err := flate.NewWriter(&comp, flate.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	z := hostile.Zip([]hostile.Member{{Name: "a.npy", Raw: comp.Bytes(), Header: &zip.FileHeader{
		Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(data),
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: uint64(len(data)),
	}}})
	archive := filepath.Join(dir, "a.npz")
	if err := os.WriteFile(archive, z, 0o644); err != nil {
		t.Fatal(err)
	}
	return archive, data
}

// TestDamagedArchiveWithIndex: an archive changed in place (a byte
// flipped, its time kept) whose member's saved index still matches it:
// a read of the damaged span fails with EIO, as does every later one,
// never the flipped byte; bytes before are served; the log says where
// the archive is damaged; the index is kept.
func TestDamagedArchiveWithIndex(t *testing.T) {
	orig, data := storedDeflateArchive(t, t.TempDir())
	idx := t.TempDir()
	if r := npzfs(t, "index", orig, "--index-dir", idx); r.code != 0 {
		t.Fatalf("npzfs index: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	saved := indexFiles(t, idx)
	if len(saved) != 1 {
		t.Fatalf("%d indexes saved", len(saved))
	}
	good, _ := os.ReadFile(saved[0])
	z, _ := os.ReadFile(orig)
	z[16<<20+12345] ^= 0x40
	archive := filepath.Join(t.TempDir(), "a.npz")
	os.WriteFile(archive, z, 0o644)
	fi, _ := os.Stat(orig)
	os.Chtimes(archive, fi.ModTime(), fi.ModTime())

	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, archive, "--index-dir", idx, "--log", log)
	f, err := os.Open(filepath.Join(dir, "a.npy"))
	if err != nil {
		t.Fatal(err)
	}
	for i, off := range []int64{16 << 20, 16 << 20, 20 << 20} {
		p := make([]byte, 1<<20)
		n, err := f.ReadAt(p, off)
		if !errors.Is(err, syscall.EIO) || !bytes.Equal(p[:n], data[off:off+int64(n)]) {
			t.Errorf("read %d, at %d: %d bytes, %v; want EIO and never the flipped byte", i, off, n, err)
		}
	}
	p := make([]byte, 1<<20)
	if _, err := f.ReadAt(p, 15<<20); err != nil || !bytes.Equal(p, data[15<<20:16<<20]) {
		t.Errorf("read before the damage: %v, or wrong bytes", err)
	}
	f.Close()
	clear(t, dir)
	if b, _ := os.ReadFile(log); !regexp.MustCompile(`"a.npy": the archive is damaged: bytes \d+ to \d+ of the member \(from archive byte \d+\)`).Match(b) ||
		bytes.Contains(b, []byte("not used")) {
		t.Errorf("log: %s", b)
	}
	if b, err := os.ReadFile(saved[0]); err != nil || !bytes.Equal(b, good) {
		t.Errorf("the index was not kept: %v", err)
	}
}

// unindexedNote is what npzfs mount says of bigZerosArchive's member
// while it has no saved index.
const unindexedNote = "note: a deflated member of 0.3 GiB has no saved index"

// bigZerosArchive writes dir/zeros.npz, whose one deflated member is
// 320 MiB of zeros (some 320 KiB deflated), and returns its path.
func bigZerosArchive(t *testing.T, dir string) string {
	t.Helper()
	data := hostile.NPY("<i8", []int64{40 << 20}, make([]byte, 320<<20))
	archive := filepath.Join(dir, "zeros.npz")
	if err := os.WriteFile(archive, hostile.Zip([]hostile.Member{{Name: "zeros.npy", Data: data, Deflate: true}}), 0o644); err != nil {
		t.Fatal(err)
	}
	return archive
}

// TestMountNotesUnindexedMember: npzfs mount of an archive with a
// deflated member over 256 MiB and no saved index says so once, with
// what to do; once npzfs index has run, or with --index or --no-index,
// it does not.
func TestMountNotesUnindexedMember(t *testing.T) {
	needFuse(t)
	archive := bigZerosArchive(t, t.TempDir())
	idx := t.TempDir()
	var suggested []string // the npzfs index command the note gives
	for _, tc := range []struct {
		flags []string
		note  bool
	}{
		{[]string{"--index-dir", idx}, true},
		{[]string{"--index-dir", idx, "--index"}, false},
		{[]string{"--no-index"}, false},
	} {
		dir := t.TempDir()
		r := npzfs(t, append(append([]string{"mount"}, tc.flags...), archive, dir)...)
		if r.code != 0 || strings.Contains(r.stderr, unindexedNote) != tc.note || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("mount %v: exit %d, stderr %q; want the note: %v", tc.flags, r.code, r.stderr, tc.note)
		}
		if tc.note {
			_, cmd, _ := strings.Cut(r.stderr, "run once: ")
			cmd, _, _ = strings.Cut(cmd, " (or mount")
			if want := "npzfs index --index-dir " + idx + " " + archive; cmd != want {
				t.Errorf("the note says to run %q, want %q", cmd, want)
			}
			suggested = strings.Fields(cmd)
		}
		clear(t, dir)
	}
	// What the note says to run indexes where the mount looks.
	if len(suggested) < 2 {
		t.Fatal("no command suggested")
	}
	if r := npzfs(t, suggested[1:]...); r.code != 0 {
		t.Fatalf("%v: exit %d, %q", suggested, r.code, r.stderr)
	}
	dir := t.TempDir()
	if r := npzfs(t, "mount", "--index-dir", idx, archive, dir); r.code != 0 || strings.Contains(r.stderr, "note:") {
		t.Errorf("mount once indexed: exit %d, stderr %q", r.code, r.stderr)
	}
	clear(t, dir)
}

// TestRemoteMountNotesUnindexedMember: so does npzfs mount of a remote
// archive, which looks for its sidecar to tell; with a sidecar beside
// it, it does not, and the mount reads deep into the member with it.
func TestRemoteMountNotesUnindexedMember(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	bigZerosArchive(t, www)
	ng := testserver.StartNginx(t, www)
	url := ng.URL + "/zeros.npz"
	dir, idx := t.TempDir(), t.TempDir()
	r := npzfs(t, "mount", "--index-dir", idx, url, dir)
	if r.code != 0 || !strings.Contains(r.stderr, unindexedNote) || !strings.Contains(r.stderr, "npzfs index --index-dir "+idx+" "+url+" ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("mount with no sidecar: exit %d, stderr %q; want the note", r.code, r.stderr)
	}
	clear(t, dir)
	if r := npzfs(t, "index", "--index-dir", t.TempDir(), "--sidecar-file", filepath.Join(www, "zeros.npzidx"), url); r.code != 0 {
		t.Fatalf("npzfs index --sidecar-file: exit %d, %q", r.code, r.stderr)
	}
	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir = t.TempDir()
	if r := npzfs(t, "mount", "--index-dir", t.TempDir(), "--log", log, url, dir); r.code != 0 || r.stderr != "" {
		t.Errorf("mount with a sidecar: exit %d, stderr %q", r.code, r.stderr)
	}
	p := make([]byte, 4096)
	f, err := os.Open(filepath.Join(dir, "zeros", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(p, 300<<20); err != nil || !bytes.Equal(p, make([]byte, 4096)) {
		t.Errorf("4 KiB at 300 MiB: %v, or not zeros", err)
	}
	f.Close()
	if st := status(t, dir); st.Indexes == nil || st.Indexes.Loaded != 1 {
		t.Errorf("the sidecar's index was not loaded: %+v", st.Indexes)
	}
	clear(t, dir)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("not used")) {
		t.Errorf("the log: %s", b)
	}
}
