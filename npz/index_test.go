package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/source"
)

// indexedArchive is an archive of two deflated members of a few MiB,
// numpy-like data that compresses a little, and their data. It is made
// once per test binary (under the race detector, deflating it takes most
// of a minute); each caller gets its own copy of the archive's bytes,
// and must not change the members' data.
func indexedArchive(t *testing.T) (zipBytes []byte, members map[string][]byte) {
	t.Helper()
	indexed.once.Do(func() {
		indexed.members = map[string][]byte{}
		var ents []zent
		for i, name := range []string{"a.npy", "b.npy"} {
			data := make([]byte, 6<<20)
			x := uint32(i + 1)
			for j := range data {
				x = x*1664525 + 1013904223
				data[j] = byte(x>>24) & 0x3f // 6 bits of noise: deflates to 3/4
			}
			indexed.members[name] = data
			ents = append(ents, zent{name: name, data: data, method: 8})
		}
		indexed.zip = makeZip(t, ents)
	})
	if indexed.zip == nil {
		t.Fatal("the indexed archive could not be made")
	}
	return bytes.Clone(indexed.zip), indexed.members
}

var indexed struct {
	once    sync.Once
	zip     []byte
	members map[string][]byte
}

// logLinesOf collects what an archive logs.
type logLinesOf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLinesOf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *logLinesOf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// mountWithIndexes opens the archive with an index store on dir and
// returns it with the count of archive bytes read and its log.
func mountWithIndexes(t *testing.T, b []byte, dir string) (*Archive, *IndexStore, *countingReader, *logLinesOf) {
	t.Helper()
	s, err := OpenIndexStore(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: bytes.NewReader(b)}
	var log logLinesOf
	// Lazy: these tests follow an index as reads grow it, which
	// verification would build whole at the first read.
	a, err := NewReader(context.Background(), cr, int64(len(b)), &Options{Indexes: s, Logf: log.logf, Verify: VerifyLazy})
	if err != nil {
		t.Fatal(err)
	}
	return a, s, cr, &log
}

func readMember(t *testing.T, a *Archive, name string, off, n int64) []byte {
	t.Helper()
	p := make([]byte, n)
	k, err := a.Member(name).File().ReadAt(p, off)
	if int64(k) != n || (err != nil && err != io.EOF) {
		t.Fatalf("%s: %d bytes at %d: %d, %v", name, n, off, k, err)
	}
	return p
}

// deepReadCost reads 4 KiB near the end of member name, whose bytes are
// data, checks them, and returns how many bytes of the archive (read
// through cr) that took.
func deepReadCost(t *testing.T, a *Archive, cr *countingReader, name string, data []byte) int64 {
	t.Helper()
	before := cr.bytes.Load()
	off := int64(len(data)) - 5000
	if got := readMember(t, a, name, off, 4096); !bytes.Equal(got, data[off:off+4096]) {
		t.Fatalf("%s: deep read: wrong bytes", name)
	}
	return cr.bytes.Load() - before
}

func TestSavedIndexesServeALaterArchive(t *testing.T) {
	b, members := indexedArchive(t)
	dir := t.TempDir()

	// First: read a.npy whole, which indexes it and saves the index.
	a, s, _, _ := mountWithIndexes(t, b, dir)
	if got := readMember(t, a, "a.npy", 0, int64(len(members["a.npy"]))); !bytes.Equal(got, members["a.npy"]) {
		t.Fatal("a.npy read wrong")
	}
	a.Close()
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Fatalf("%d index files after reading one member whole", len(files))
	}

	// A fresh archive on a copy of the bytes: a deep read of a.npy reads
	// a span's worth of the archive, not all before it.
	a, s, cr, _ := mountWithIndexes(t, bytes.Clone(b), dir)
	defer s.Close()
	defer a.Close()
	// 6 MiB deflate to about 4.5: inflating from the start would read
	// all of it; the index's key reads 128 KiB, the span about 1.
	if read := deepReadCost(t, a, cr, "a.npy", members["a.npy"]); read > 2<<20 {
		t.Errorf("a deep read with a saved index read %d bytes of the archive", read)
	}
	// b.npy has no saved index: it is indexed from its start.
	if got := readMember(t, a, "b.npy", 3<<20, 4096); !bytes.Equal(got, members["b.npy"][3<<20:3<<20+4096]) {
		t.Fatal("b.npy read wrong")
	}
}

func TestDamagedSavedIndexIsRebuilt(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	file, good := savedIndexOf(t, b, "a.npy", dir)
	for _, damage := range []struct {
		name string
		f    func([]byte) []byte
	}{
		{"truncated", func(x []byte) []byte { return x[:len(x)/2] }},
		{"flipped", func(x []byte) []byte { x[len(x)/3] ^= 4; return x }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		os.WriteFile(file, damage.f(bytes.Clone(good)), 0o600)
		a, s, _, log := mountWithIndexes(t, b, dir)
		off := int64(len(data)) - 5000
		if got := readMember(t, a, "a.npy", off, 4096); !bytes.Equal(got, data[off:off+4096]) {
			t.Fatalf("%s: wrong bytes", damage.name)
		}
		if !strings.Contains(log.String(), "saved index") {
			t.Errorf("%s: not logged: %q", damage.name, log.String())
		}
		// Read whole again: the index is saved anew, whole.
		readMember(t, a, "a.npy", 0, int64(len(data)))
		a.Close()
		s.Close()
		if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, good) {
			t.Errorf("%s: index not saved again (%v)", damage.name, err)
		}
	}
}

func TestBuildIndex(t *testing.T) {
	b, members := indexedArchive(t)
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	m := a.Member("b.npy")
	if m.Indexed() != 0 {
		t.Fatalf("Indexed = %d before any read", m.Indexed())
	}
	res, err := m.BuildIndex(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Loaded || !res.Saved || res.SaveErr != nil {
		t.Errorf("first BuildIndex: %+v, want built and saved", res)
	}
	if st := s.Stats(); st != (IndexStoreStats{Saved: 1}) {
		t.Errorf("store stats after the first BuildIndex: %+v", st)
	}
	if m.Indexed() != m.Size() {
		t.Fatalf("Indexed = %d after BuildIndex, size %d", m.Indexed(), m.Size())
	}
	a.Close()
	s.Close()
	if files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx")); len(files) != 1 {
		t.Fatalf("%d index files after BuildIndex", len(files))
	}
	// A later archive loads it: BuildIndex returns at once, and reads
	// are right.
	a, s, cr, _ := mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	before := cr.bytes.Load()
	res, err = a.Member("b.npy").BuildIndex(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Loaded || res.Saved || res.Split {
		t.Errorf("BuildIndex with a saved index: %+v, want loaded only", res)
	}
	if st := s.Stats(); st != (IndexStoreStats{Loaded: 1}) {
		t.Errorf("store stats after loading: %+v", st)
	}
	if read := cr.bytes.Load() - before; read > 1<<20 {
		t.Errorf("BuildIndex with a saved index read %d bytes of the archive", read)
	}
	data := members["b.npy"]
	if got := readMember(t, a, "b.npy", 5<<20, 4096); !bytes.Equal(got, data[5<<20:5<<20+4096]) {
		t.Fatal("wrong bytes")
	}
}

// TestPartialIndexSavedAtClose: a member read part way has its index
// saved when the archive closes; a later archive reads within that part
// at once, and past it from its frontier, not from the start.
func TestPartialIndexSavedAtClose(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	readMember(t, a, "a.npy", 4<<20, 4096) // indexes the first 4 MiB
	a.Close()
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Fatalf("%d index files after a partial read", len(files))
	}

	a, s, cr, log := mountWithIndexes(t, b, dir)
	before := cr.bytes.Load()
	if got := readMember(t, a, "a.npy", 3<<20, 4096); !bytes.Equal(got, data[3<<20:3<<20+4096]) {
		t.Fatal("wrong bytes within the saved part")
	}
	within := cr.bytes.Load() - before
	off := int64(len(data)) - 5000
	if got := readMember(t, a, "a.npy", off, 4096); !bytes.Equal(got, data[off:off+4096]) {
		t.Fatal("wrong bytes past the saved part")
	}
	past := cr.bytes.Load() - before - within
	// 6 MiB deflate to 4.5: from the start, the deep read would read
	// them all; from the frontier at 4 MiB, about a third.
	if within > 1<<20 || past > 5<<19 {
		t.Errorf("read %d bytes of the archive within the saved part, %d past it", within, past)
	}
	if log.String() != "" {
		t.Errorf("logged: %s", log.String())
	}
	// Read whole: the complete index replaces the partial one.
	readMember(t, a, "a.npy", 0, int64(len(data)))
	a.Close()
	s.Close()
	if b, _ := os.ReadFile(files[0]); len(b) < 16 || b[12] != 0 {
		t.Error("the complete index did not replace the partial one")
	}
}

// TestPartialIndexSavedWhileOpen: while the archive is open, a growing
// index is saved every partialEvery bytes, so that a daemon that dies
// keeps what it indexed.
func TestPartialIndexSavedWhileOpen(t *testing.T) {
	defer func(v int64) { partialEvery = v }(partialEvery)
	partialEvery = 1 << 20
	b, _ := indexedArchive(t)
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	readMember(t, a, "a.npy", 4<<20, 4096)
	s.saves.Wait() // no read is under way: nothing starts a save meanwhile
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Fatalf("%d index files while the archive is open", len(files))
	}
	idx, _ := os.ReadFile(files[0])
	if len(idx) < 48 || idx[12] != 1 {
		t.Fatal("not a partial index")
	}
	// It reaches at least 3 MiB: saved at the last MiB boundary passed.
	n := int(binary.LittleEndian.Uint32(idx[36:]))
	if last := int64(binary.LittleEndian.Uint64(idx[48+(n-1)*56:])); last < 3<<20 {
		t.Errorf("the partial index saved reaches %d bytes", last)
	}
}

// TestTwoArchivesShareAnIndexFolder: two archives of the same bytes, each
// with its own store on one folder (two mounts), index the same members at
// once; what the folder holds after is whole and serves a third.
func TestTwoArchivesShareAnIndexFolder(t *testing.T) {
	defer func(v int64) { partialEvery = v }(partialEvery)
	partialEvery = 1 << 20 // partial saves racing with complete ones too
	b, members := indexedArchive(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	var closers []func()
	for range 2 {
		a, s, _, _ := mountWithIndexes(t, bytes.Clone(b), dir)
		closers = append(closers, func() { a.Close(); s.Close() })
		for _, name := range []string{"a.npy", "b.npy"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := members[name]
				p := make([]byte, len(data))
				if n, err := a.Member(name).File().ReadAt(p, 0); n != len(p) || !bytes.Equal(p, data) {
					t.Errorf("%s: %d bytes, %v", name, n, err)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range closers {
		c() // the stores' Close waits for their saves
	}
	a, s, cr, log := mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	for _, name := range []string{"a.npy", "b.npy"} {
		data := members[name]
		off := int64(len(data)) - 5000
		if got := readMember(t, a, name, off, 4096); !bytes.Equal(got, data[off:off+4096]) {
			t.Fatalf("%s: wrong bytes", name)
		}
	}
	if read := cr.bytes.Load(); read > 4<<20 || log.String() != "" {
		t.Errorf("deep reads of both members read %d bytes of the archive; log %q", read, log.String())
	}
}

// TestBuildIndexSaveFails: an index that cannot be written is reported
// by BuildIndex, not taken for saved.
func TestBuildIndexSaveFails(t *testing.T) {
	b, _ := indexedArchive(t)
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	// The store's folder is a file now: nothing can be written under it
	// (even by root, whom permissions do not stop).
	v1 := filepath.Join(dir, "v1")
	if err := os.RemoveAll(v1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v1, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := a.Member("b.npy").BuildIndex(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Saved || res.SaveErr == nil {
		t.Errorf("BuildIndex into an unwritable store: %+v, want a save error", res)
	}
}

// faultyReader is an archive's bytes that fail reads while err is set:
// as a fetch that failed (source.ErrTransient) or an archive that
// changed (source.ErrChanged) would.
type faultyReader struct {
	r   io.ReaderAt
	err atomic.Pointer[error]
}

func (f *faultyReader) ReadAt(p []byte, off int64) (int, error) {
	if e := f.err.Load(); e != nil {
		return 0, *e
	}
	return f.r.ReadAt(p, off)
}

func (f *faultyReader) fail(err error) { f.err.Store(&err) }

// savedIndexOf reads member name of b whole with a store on dir, which
// saves its index, and returns the index file and its bytes.
func savedIndexOf(t *testing.T, b []byte, name, dir string) (string, []byte) {
	t.Helper()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	readMember(t, a, name, 0, a.Member(name).Size())
	a.Close()
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Fatalf("%d index files", len(files))
	}
	idx, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return files[0], idx
}

// TestDamagedArchiveKeepsItsIndex: an archive whose deflated member no
// longer inflates to what its saved index records (a byte changed in
// place) fails reads of the damaged span and every later one, serves the
// bytes before it, says so in the log (member, offsets), and keeps the
// index.
func TestDamagedArchiveKeepsItsIndex(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	file, idx := savedIndexOf(t, b, "a.npy", dir)

	// A byte in the middle of a.npy's compressed data (its index key,
	// made from its ends, stays).
	a, s, _, _ := mountWithIndexes(t, b, dir)
	m := a.Member("a.npy")
	at := m.locate(context.Background()).dataOff + m.CompressedSize()/2
	a.Close()
	s.Close()
	damaged := bytes.Clone(b)
	damaged[at] ^= 0x10

	a, s, _, log := mountWithIndexes(t, damaged, dir)
	// A whole read stops at the damaged span, a span or more into the
	// member, after the right bytes.
	whole := make([]byte, len(data))
	n, err := a.Member("a.npy").File().ReadAt(whole, 0)
	if !errors.Is(err, inflate.ErrDamaged) || n < 1<<20 || n > len(data)*3/4 || !bytes.Equal(whole[:n], data[:n]) {
		t.Fatalf("whole read of the damaged member: %d bytes, %v", n, err)
	}
	if got := readMember(t, a, "a.npy", int64(n)-4096, 4096); !bytes.Equal(got, data[n-4096:n]) {
		t.Fatal("a read before the damage: wrong bytes")
	}
	p := make([]byte, 4096)
	for _, off := range []int64{int64(len(data)) - 5000, int64(n)} {
		if k, err := a.Member("a.npy").File().ReadAt(p, off); k != 0 || !errors.Is(err, inflate.ErrDamaged) {
			t.Fatalf("read at %d past the damage: %d, %v", off, k, err)
		}
	}
	a.Close()
	s.Close()
	if l := log.String(); strings.Count(l, "the archive is damaged") != 1 || !strings.Contains(l, `"a.npy"`) ||
		!regexp.MustCompile(`bytes \d+ to \d+ of the member \(from archive byte \d+\)`).MatchString(l) || strings.Contains(l, "not used") {
		t.Errorf("log: %q", l)
	}
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, idx) {
		t.Errorf("the index of a damaged archive was not kept (%v)", err)
	}
}

// TestSourceErrorKeepsTheIndex: reads that fail reading the archive (a
// fetch that failed) with a saved index loaded fail with that error and
// leave the index alone, in memory and in the store; once the source
// mends, a deep read reads one span's worth, not the member from its
// start.
func TestSourceErrorKeepsTheIndex(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	file, idx := savedIndexOf(t, b, "a.npy", dir)
	s, err := OpenIndexStore(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fr := &faultyReader{r: bytes.NewReader(b)}
	cr := &countingReader{r: fr}
	var log logLinesOf
	a, err := NewReader(context.Background(), cr, int64(len(b)), &Options{Indexes: s, Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	readMember(t, a, "a.npy", 1<<20, 4096) // loads the index
	fr.fail(fmt.Errorf("connection refused: %w", source.ErrTransient))
	for _, off := range []int64{int64(len(data)) - 5000, 3 << 20} {
		if _, err := a.Member("a.npy").File().ReadAt(make([]byte, 4096), off); !errors.Is(err, source.ErrTransient) {
			t.Fatalf("read at %d while the source fails: %v", off, err)
		}
	}
	fr.err.Store(nil)
	if read := deepReadCost(t, a, cr, "a.npy", data); read > 2<<20 {
		t.Errorf("a deep read after the source mended read %d bytes of the archive", read)
	}
	if l := log.String(); !strings.Contains(l, "connection refused") || strings.Contains(l, "saved index") {
		t.Errorf("log: %q", l)
	}
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, idx) {
		t.Errorf("the index was not kept (%v)", err)
	}
}

// TestChangedArchiveForgetsItsIndexes: once an archive is found changed
// (source.ErrChanged: a replaced remote object), the indexes of its old
// content that it loaded or saved are removed from the store, and no
// index is saved after, at close either.
func TestChangedArchiveForgetsItsIndexes(t *testing.T) {
	b, members := indexedArchive(t)
	dir := t.TempDir()
	file, _ := savedIndexOf(t, b, "a.npy", dir)
	s, err := OpenIndexStore(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	fr := &faultyReader{r: bytes.NewReader(b)}
	a, err := NewReader(context.Background(), fr, int64(len(b)), &Options{Indexes: s})
	if err != nil {
		t.Fatal(err)
	}
	readMember(t, a, "a.npy", 1<<20, 4096)                     // loads a.npy's index
	readMember(t, a, "b.npy", 0, 5<<20)                        // indexes b.npy part way
	readMember(t, a, "b.npy", 0, int64(len(members["b.npy"]))) // and whole: saved
	s.saves.Wait()
	if files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx")); len(files) != 2 {
		t.Fatalf("%d index files before the change", len(files))
	}
	fr.fail(fmt.Errorf("HTTP 412: %w", source.ErrChanged))
	if _, err := a.Member("a.npy").File().ReadAt(make([]byte, 10), 5<<20); !errors.Is(err, source.ErrChanged) {
		t.Fatalf("read after the change: %v", err)
	}
	a.Close()
	s.Close()
	if files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx")); len(files) != 0 {
		t.Errorf("index files of the old content left: %v (a.npy's was %s)", files, file)
	}
}

// TestHasSavedIndex: a member has a saved index once one is in the store
// or the sidecar, and not before.
func TestHasSavedIndex(t *testing.T) {
	b, _ := indexedArchive(t)
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	m := a.Member("b.npy")
	if m.HasSavedIndex(context.Background()) {
		t.Fatal("a saved index before any was built")
	}
	if _, err := m.BuildIndex(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	a.Close()
	s.Close()
	a, s, _, _ = mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	if !a.Member("b.npy").HasSavedIndex(context.Background()) || a.Member("a.npy").HasSavedIndex(context.Background()) {
		t.Errorf("HasSavedIndex: b.npy %v (indexed), a.npy %v (not)", a.Member("b.npy").HasSavedIndex(context.Background()), a.Member("a.npy").HasSavedIndex(context.Background()))
	}

	// A sidecar Options.SidecarFinder finds (a remote archive's) is looked
	// for by HasSavedIndex, once, and the index looked for in it: the
	// first entry's from its local header, the other's by the directory.
	for _, tc := range []struct {
		name string
		side []byte
		want bool
	}{
		{"none", nil, false},
		{"the archive's", sidecarOf(t, b), true},
		{"another archive's", foreignSidecar(t), false},
	} {
		var finds atomic.Int64
		a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{SidecarFinder: finderFunc(func(int64) (*IndexSidecar, error) {
			finds.Add(1)
			if tc.side == nil {
				return nil, nil
			}
			return NewIndexSidecar(bytes.NewReader(tc.side), int64(len(tc.side)), "https://host/x.npzidx"), nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a.npy", "b.npy"} {
			if got := a.Member(name).HasSavedIndex(context.Background()); got != tc.want {
				t.Errorf("sidecar %s: %s: HasSavedIndex %v, want %v", tc.name, name, got, tc.want)
			}
		}
		if finds.Load() != 1 {
			t.Errorf("sidecar %s: looked for %d times, want once", tc.name, finds.Load())
		}
		a.Close()
	}
}

// TestGrownPartialIndexSavedAtClose: a partial index loaded and grown is
// saved again as the archive closes; its loaded windows are written from
// the index file after the archive closed, so the file stays open until
// the save is done, and a third archive reads within the larger part at
// once, the saved index whole.
func TestGrownPartialIndexSavedAtClose(t *testing.T) {
	b, members := indexedArchive(t)
	data := members["a.npy"]
	dir := t.TempDir()
	a, s, _, _ := mountWithIndexes(t, b, dir)
	readMember(t, a, "a.npy", 2<<20, 4096)
	a.Close()
	s.Close()

	a, s, _, log := mountWithIndexes(t, b, dir)
	readMember(t, a, "a.npy", 5<<20, 4096) // past the saved part
	a.Close()
	s.Close()
	if log.String() != "" {
		t.Errorf("logged: %s", log.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Fatalf("%d index files", len(files))
	}
	idx, _ := os.ReadFile(files[0])
	n := int(binary.LittleEndian.Uint32(idx[36:]))
	if len(idx) < 48+56*n || idx[12] != 1 {
		t.Fatal("not a partial index")
	}
	if last := int64(binary.LittleEndian.Uint64(idx[48+(n-1)*56:])); last < 5<<20 {
		t.Fatalf("the partial index saved reaches %d bytes, want the grown part", last)
	}

	a, s, cr, log := mountWithIndexes(t, b, dir)
	defer s.Close()
	defer a.Close()
	readAtOnce(t, a, cr, log, data, 4<<20+12345, 1<<20)
}

// readAtOnce reads 4 KiB of a.npy at off, which a loaded index covers:
// the right bytes, at most limit bytes of the archive read, nothing
// logged.
func readAtOnce(t *testing.T, a *Archive, cr *countingReader, log *logLinesOf, data []byte, off, limit int64) {
	t.Helper()
	if got := readMember(t, a, "a.npy", off, 4096); !bytes.Equal(got, data[off:off+4096]) {
		t.Fatalf("wrong bytes at %d", off)
	}
	if read := cr.bytes.Load(); read > limit {
		t.Errorf("a read at %d with a saved index read %d bytes of the archive", off, read)
	}
	if log.String() != "" {
		t.Errorf("logged: %s", log.String())
	}
}

// TestSmallMembersHaveNoIndex: a deflated member of at most
// minIndexSpans spans is inflated from its start rather than indexed:
// read whole, it saves no index (an archive of many small arrays would
// write a file for each), nor does BuildIndex make one, nor is one looked
// for; a member one byte larger has its index saved.
func TestSmallMembersHaveNoIndex(t *testing.T) {
	const span = 4096
	limit := minIndexSpans * span
	members := map[string][]byte{"small.npy": make([]byte, limit), "large.npy": make([]byte, limit+1)}
	var ents []zent
	for _, name := range []string{"small.npy", "large.npy"} {
		for i := range members[name] {
			members[name][i] = byte(i*i>>5) & 0x3f
		}
		ents = append(ents, zent{name: name, data: members[name], method: 8})
	}
	b := makeZip(t, ents)
	dir := t.TempDir()
	s, err := OpenIndexStore(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{Indexes: s, SpanSize: span})
	if err != nil {
		t.Fatal(err)
	}
	small, large := a.Member("small.npy"), a.Member("large.npy")
	if small.NeedsIndex() || !large.NeedsIndex() {
		t.Fatalf("NeedsIndex: small %v, large %v; want false, true", small.NeedsIndex(), large.NeedsIndex())
	}
	for name, data := range members {
		if got := readMember(t, a, name, 0, int64(len(data))); !bytes.Equal(got, data) {
			t.Fatalf("%s read wrong", name)
		}
	}
	if res, err := small.BuildIndex(context.Background(), 1); err != nil || res != (IndexResult{}) {
		t.Errorf("BuildIndex of the small member: %+v, %v; want nothing done", res, err)
	}
	if small.HasSavedIndex(context.Background()) {
		t.Error("the small member has a saved index")
	}
	a.Close()
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.idx"))
	if len(files) != 1 {
		t.Errorf("%d index files after reading both members whole, want 1 (the large one's)", len(files))
	}
}

// finderFunc is a SidecarFinder of a function.
type finderFunc func(head int64) (*IndexSidecar, error)

func (f finderFunc) FindSidecar(_ context.Context, head int64) (*IndexSidecar, error) { return f(head) }
