package folder

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

func (m *memStore) entry(rel string) (Entry, bool) {
	if b, ok := m.files[rel]; ok {
		return Entry{Name: path.Base(rel), Size: int64(len(b)), Version: m.version[rel]}, true
	}
	for p := range m.files {
		if strings.HasPrefix(p, rel+"/") {
			return Entry{Name: path.Base(rel), Dir: true}, true
		}
	}
	return Entry{}, false
}

func (m *memStore) List(_ context.Context, rel string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []Entry
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

func (m *memStore) Stat(_ context.Context, rel string) (Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rel == "" {
		return Entry{Dir: true}, nil
	}
	if e, ok := m.entry(rel); ok {
		return e, nil
	}
	return Entry{}, fmt.Errorf("%s: %w", rel, iofs.ErrNotExist)
}

func (m *memStore) Open(_ context.Context, rel string, e Entry, opts *npz.Options) (*npz.Archive, error) {
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
	return npz.New(bytes.NewReader(b), int64(len(b)), e.Name, opts)
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
// tried again at the next look, not kept; Usage counts the root's
// listing.
func TestTreeOverAStore(t *testing.T) {
	st := &memStore{files: map[string][]byte{}, version: map[string]string{}}
	st.put("a.npz", zipOf(t, 1, 10), `"v1"`)
	st.put("sub/b.npz", zipOf(t, 2, 10), `"v1"`)
	st.put("grid.npy", npyBytes(t, 3, 6), `"v1"`)
	st.put("notes.txt", []byte("hello"), `"v1"`)
	tr, err := New(st, nil)
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
	if bytes, nodes := tr.Usage(); bytes != int64(len(st.files["a.npz"])+len(st.files["grid.npy"])) || nodes < 3 {
		t.Errorf("Usage: %d bytes, %d nodes", bytes, nodes)
	}

	old := lookup(tr.Root(), "a.npz/x/raw.bin")
	if got := read(t, old); !bytes.Equal(got, npyBytes(t, 1, 10)[128:]) {
		t.Fatalf("a.npz/x/raw.bin: % x", got)
	}
	st.put("a.npz", zipOf(t, 100, 10), `"v2"`) // same size, another version
	fresh := lookup(tr.Root(), "a.npz/x/raw.bin")
	if fresh == nil || fresh.Ino() == old.Ino() {
		t.Fatalf("the replaced archive's file: %v (old inode %d)", fresh, old.Ino())
	}
	if got := read(t, fresh); !bytes.Equal(got, npyBytes(t, 100, 10)[128:]) {
		t.Errorf("the new archive reads % x", got)
	}
	if _, err := old.File().ReadAtContext(context.Background(), make([]byte, 4), 0); !errors.Is(err, source.ErrChanged) {
		t.Errorf("the old archive's file: %v, want ErrChanged", err)
	}

	st.put("c.npz", zipOf(t, 5, 10), `"v1"`)
	st.mu.Lock()
	st.fail = source.Transient(errors.New("503"))
	st.mu.Unlock()
	if e := lookup(tr.Root(), "c.npz/x.npy"); e != nil {
		t.Error("c.npz served while it cannot be opened")
	}
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	if e := lookup(tr.Root(), "c.npz/x.npy"); e == nil {
		t.Error("c.npz not served once it can be opened: the failure was kept")
	}
}
