//go:build linux

package tree

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// memStore is a Store of files in memory, each with a version, as a
// remote folder's objects have ETags; a test may make opens fail for now.
type memStore struct {
	mu      sync.Mutex
	files   map[string][]byte
	version map[string]string
	opens   int
	fail    error // returned by Open while set
}

func (m *memStore) entry(rel string) (folder.Entry, bool) {
	if b, ok := m.files[rel]; ok {
		return folder.Entry{Name: path.Base(rel), Size: int64(len(b)), Version: m.version[rel]}, true
	}
	for p := range m.files {
		if strings.HasPrefix(p, rel+"/") {
			return folder.Entry{Name: path.Base(rel), Dir: true}, true
		}
	}
	return folder.Entry{}, false
}

func (m *memStore) List(_ context.Context, rel string) ([]folder.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []folder.Entry
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	for p := range m.files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		if !seen[name] {
			seen[name] = true
			e, _ := m.entry(prefix + name)
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memStore) Stat(_ context.Context, rel string) (folder.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rel == "" {
		return folder.Entry{Dir: true}, nil
	}
	if e, ok := m.entry(rel); ok {
		return e, nil
	}
	return folder.Entry{}, fmt.Errorf("%s: %w", rel, iofs.ErrNotExist)
}

func (m *memStore) Open(_ context.Context, rel string, e folder.Entry, opts *npz.Options) (*npz.Archive, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opens++
	if m.fail != nil {
		return nil, m.fail
	}
	b, ok := m.files[rel]
	if !ok || m.version[rel] != e.Version {
		return nil, fmt.Errorf("%s: %w", rel, source.ErrChanged)
	}
	return npz.New(context.Background(), bytes.NewReader(b), int64(len(b)), e.Name, opts)
}

func (m *memStore) put(rel string, b []byte, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[rel], m.version[rel] = b, version
}

// zipOf is an archive of one stored array x of n values from v.
func zipOf(t *testing.T, v, n int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "x.npy", Method: zip.Store})
	w.Write(npyBytes(t, v, n))
	zw.Close()
	return buf.Bytes()
}

// TestTreeOverAStore: a Tree serves any Store as it serves a local
// folder: archives as folders, .npy files with their views, sub-folders;
// an archive replaced by one of another version (the same size and no
// time, as an object's new ETag) is served anew under new inode numbers,
// its old files failing; an open that fails for now (ErrTransient) is
// a failure that may pass (EIO), tried again after a wait, not kept;
// Usage counts the root's listing.
func TestTreeOverAStore(t *testing.T) {
	st := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	st.put("a.npz", zipOf(t, 1, 10), `"v1"`)
	st.put("sub/b.npz", zipOf(t, 2, 10), `"v1"`)
	st.put("grid.npy", npyBytes(t, 3, 6), `"v1"`)
	st.put("notes.txt", []byte("hello"), `"v1"`)
	tr, err := NewFolder(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	all := walk(t, tr.Root())
	for _, p := range []string{"/a.npz/x.npy", "/a.npz/x/raw.bin", "/sub/b.npz/x.npy", "/grid.npy", "/grid/raw.bin", "/grid.ra"} {
		if all[p] == nil {
			t.Errorf("%s not served", p)
		}
	}
	if all["/notes.txt"] != nil {
		t.Error("notes.txt served")
	}
	if bytes, nodes := tr.Usage(context.Background()); bytes != int64(len(st.files["a.npz"])+len(st.files["grid.npy"])) || nodes < 3 {
		t.Errorf("Usage: %d bytes, %d nodes", bytes, nodes)
	}

	old := lookup(t, tr.Root(), "a.npz/x/raw.bin")
	oldX := lookup(t, tr.Root(), "a.npz/x")
	if got := read(t, old); !bytes.Equal(got, npyBytes(t, 1, 10)[128:]) {
		t.Fatalf("a.npz/x/raw.bin: % x", got)
	}
	st.put("a.npz", zipOf(t, 100, 10), `"v2"`) // same size, another version
	fresh := lookup(t, tr.Root(), "a.npz/x/raw.bin")
	if fresh == nil || fresh.Ino() == old.Ino() {
		t.Fatalf("the replaced archive's file: %v (old inode %d)", fresh, old.Ino())
	}
	if got := read(t, fresh); !bytes.Equal(got, npyBytes(t, 100, 10)[128:]) {
		t.Errorf("the new archive reads % x", got)
	}
	if _, err := fileOf(t, old).ReadAtContext(context.Background(), make([]byte, 4), 0); !errors.Is(err, source.ErrChanged) {
		t.Errorf("the old archive's file: %v, want ErrChanged", err)
	}
	// A folder of the old archive, which the kernel may still use, finds
	// the new archive's files.
	if c := find(t, oldX, "raw.bin"); c == nil || c.Ino() != fresh.Ino() {
		t.Errorf("raw.bin in the old archive's x/: %v, want the new archive's (inode %d)", c, fresh.Ino())
	}

	// An open that fails for now is EIO, not absence, and is tried
	// again at a use once a wait has passed (doubling while it fails),
	// not at every use; then it is served.
	clock := time.Now()
	tr.now = func() time.Time { return clock }
	st.put("c.npz", zipOf(t, 5, 10), `"v1"`)
	st.setFail(source.Transient(errors.New("503")))
	opens := st.opened()
	for i, wait := range []time.Duration{0, firstRetryWait / 2, firstRetryWait, 2 * firstRetryWait} {
		clock = clock.Add(wait)
		c := find(t, tr.Root(), "c.npz")
		if _, err := c.Lookup(context.Background(), "x.npy"); err == nil || errors.Is(err, iofs.ErrNotExist) || !passing(err) {
			t.Errorf("look %d into c.npz while it cannot be opened: %v, want a failure that may pass", i, err)
		}
	}
	if n := st.opened() - opens; n != 3 {
		t.Errorf("%d opens in 3.5 s of failures, want 3 (at once, after 1 s, after 2 s more; the wait is now 4 s)", n)
	}
	st.setFail(nil)
	if _, err := find(t, tr.Root(), "c.npz").Lookup(context.Background(), "x.npy"); err == nil {
		t.Error("c.npz asked again before its wait passed")
	}
	clock = clock.Add(maxRetryWait)
	if e := lookup(t, tr.Root(), "c.npz/x.npy"); e == nil {
		t.Error("c.npz not served once it can be opened: the failure was kept")
	}
}

func (m *memStore) setFail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

func (m *memStore) opened() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opens
}

// TestGivingUp: a look into an archive that its caller gives up on (the
// kernel interrupting the request, as it does when a signal reaches the
// reader) ends with the caller's error, keeps nothing, and the next look
// opens the archive.
func TestGivingUp(t *testing.T) {
	st := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	st.put("a.npz", zipOf(t, 1, 10), `"v1"`)
	tr, err := NewFolder(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	a := find(t, tr.Root(), "a.npz")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Lookup(ctx, "x.npy"); !errors.Is(err, context.Canceled) {
		t.Errorf("a look given up on: %v, want context.Canceled", err)
	}
	if find(t, a, "x.npy") == nil {
		t.Error("x.npy not found after a look was given up on")
	}
}

// failingStore is a memStore whose listings and lookups fail for now,
// as a remote folder's do while its server answers 503.
type failingStore struct {
	*memStore
	err error
}

func (f *failingStore) List(ctx context.Context, rel string) ([]folder.Entry, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.memStore.List(ctx, rel)
}

func (f *failingStore) Stat(ctx context.Context, rel string) (folder.Entry, error) {
	if f.err != nil && rel != "" {
		return folder.Entry{}, f.err
	}
	return f.memStore.Stat(ctx, rel)
}

// TestStoreFailuresAreNotAbsence: while the store cannot list or look up
// (a failure that may pass), a lookup and a listing fail (EIO) rather
// than find nothing, and nothing of it is kept: once the store answers,
// everything is there.
func TestStoreFailuresAreNotAbsence(t *testing.T) {
	m := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	m.put("shards/a.npz", zipOf(t, 1, 10), `"v1"`)
	st := &failingStore{memStore: m}
	tr, err := NewFolder(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	shards := find(t, tr.Root(), "shards")
	st.err = source.Transient(errors.New("503 Slow Down"))
	if _, err := shards.Lookup(context.Background(), "a.npz"); err == nil || errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("lookup while the store fails: %v, want a failure, not absence", err)
	}
	if l, err := shards.List(context.Background()); err == nil {
		t.Errorf("listing while the store fails: %d entries, no error", l.Len())
	}
	st.err = nil
	if kids := kidsOf(t, shards); len(kids) != 1 || kids[0].Name() != "a.npz" {
		t.Errorf("listing once the store answers: %v", kids)
	}
	if lookup(t, tr.Root(), "shards/a.npz/x.npy") == nil {
		t.Error("shards/a.npz/x.npy not found once the store answers")
	}
}

// laggingStore is a memStore whose listings say what its files were
// when lag was set, as a remote folder's kept listing does of objects
// replaced since; its opens see the files as they are.
type laggingStore struct {
	*memStore
	mu  sync.Mutex
	lag map[string]folder.Entry
}

func (l *laggingStore) Stat(ctx context.Context, rel string) (folder.Entry, error) {
	l.mu.Lock()
	e, ok := l.lag[rel]
	l.mu.Unlock()
	if ok {
		return e, nil
	}
	return l.memStore.Stat(ctx, rel)
}

func (l *laggingStore) setLag(rel string, e *folder.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e == nil {
		delete(l.lag, rel)
	} else {
		l.lag[rel] = *e
	}
}

// TestReplacedWhileListed: an archive found at its open to be another
// than its folder's listing says (replaced since it was listed) is not
// absent: a look into it fails for now (EIO) while the listing says the
// old file, opening the file again at each look, and once the listing
// says the new one, the look, into the folder of the archive as first
// found too, finds the new archive's files.
func TestReplacedWhileListed(t *testing.T) {
	m := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	m.put("a.npz", zipOf(t, 1, 10), `"v1"`)
	st := &laggingStore{memStore: m, lag: map[string]folder.Entry{}}
	tr, err := NewFolder(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	old, _ := m.Stat(context.Background(), "a.npz")
	st.setLag("a.npz", &old)
	m.put("a.npz", zipOf(t, 2, 10), `"v2"`)
	a := find(t, tr.Root(), "a.npz")
	for i := range 2 {
		opens := m.opened()
		if _, err := a.Lookup(context.Background(), "x.npy"); err == nil || errors.Is(err, iofs.ErrNotExist) || !passing(err) {
			t.Errorf("look %d while the listing says the old file: %v, want a failure that may pass", i, err)
		}
		if n := m.opened() - opens; n < 1 || n > maxFollow {
			t.Errorf("look %d opened the file %d times, want 1 to %d", i, n, maxFollow)
		}
	}
	st.setLag("a.npz", nil)
	x := find(t, a, "x.npy")
	if x == nil || !bytes.Equal(read(t, x), npyBytes(t, 2, 10)) {
		t.Fatal("x.npy of the new archive not found once the listing says it")
	}
	if y := lookup(t, tr.Root(), "a.npz/x.npy"); y.Ino() != x.Ino() {
		t.Errorf("a.npz/x.npy found anew has inode %d, through the folder first found %d", y.Ino(), x.Ino())
	}
}

// TestLookupInAnEndedRequest: a look into a views folder whose npy
// header is not read yet, made by a request that has ended (the kernel
// interrupted it: Go's runtime signals its threads), fails with the
// request's error, which the caller makes again, not "not there", which
// it would take for an answer; a later look finds the file.
func TestLookupInAnEndedRequest(t *testing.T) {
	m := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	m.put("a.npz", zipOf(t, 1, 10), `"v1"`)
	tr, err := NewFolder(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	x := lookup(t, tr.Root(), "a.npz/x")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Lookup(ended, "raw.bin"); !errors.Is(err, context.Canceled) {
		t.Errorf("a look in an ended request: %v, want its context's error", err)
	}
	if find(t, x, "raw.bin") == nil {
		t.Error("raw.bin not found once a request is not ended")
	}
}
