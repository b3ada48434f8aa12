package folder

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// npyBytes is a .npy file of n little-endian int32 values starting at v.
func npyBytes(t *testing.T, v, n int) []byte {
	t.Helper()
	h, err := npy.EncodeHeader("<i4", false, []int64{int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.NewBuffer(h)
	for i := range n {
		x := uint32(v + i)
		b.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
	}
	return b.Bytes()
}

// writeNPZ writes an archive of arrays named by keys, each of n values
// from v, stored.
func writeNPZ(t *testing.T, path string, v, n int, keys ...string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, k := range keys {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: k + ".npy", Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(npyBytes(t, v+100*i, n))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// walk lists every path of the tree, checking that each listed name is
// found by Lookup with the same inode number, and that inode numbers are
// unique.
func walk(t *testing.T, root fs.Entry) map[string]fs.Entry {
	t.Helper()
	out := map[string]fs.Entry{}
	inos := map[uint64]string{}
	var rec func(e fs.Entry, p string)
	rec = func(e fs.Entry, p string) {
		for _, c := range fs.Children(e) {
			cp := p + "/" + c.Name()
			if other, dup := inos[c.Ino()]; dup {
				t.Errorf("%s and %s share inode %d", cp, other, c.Ino())
			}
			inos[c.Ino()] = cp
			l := e.Lookup(c.Name())
			if l == nil || l.Ino() != c.Ino() || l.IsDir() != c.IsDir() {
				t.Errorf("%s is listed but Lookup gives %v", cp, l)
			}
			out[cp] = c
			if c.IsDir() {
				rec(c, cp)
			}
		}
	}
	rec(root, "")
	return out
}

func read(t *testing.T, e fs.Entry) []byte {
	t.Helper()
	c := e.File()
	if c == nil {
		t.Fatalf("%s has no content", e.Name())
	}
	b := make([]byte, c.Size())
	n, err := c.ReadAtContext(context.Background(), b, 0)
	if n != len(b) || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("%s: read %d of %d: %v", e.Name(), n, len(b), err)
	}
	return b
}

func lookup(root fs.Entry, path string) fs.Entry {
	e := root
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		if e = e.Lookup(p); e == nil {
			return nil
		}
	}
	return e
}

// TestFolderTree: archives, bare .npy files and sub-folders, a broken
// archive holding why, other files left out, views of a .npy whose name a
// folder takes left out; listings and lookups agree; inode numbers are
// unique; bytes are the files'.
func TestFolderTree(t *testing.T) {
	dir := t.TempDir()
	writeNPZ(t, filepath.Join(dir, "a.npz"), 0, 5, "x", "y")
	writeNPZ(t, filepath.Join(dir, "sub", "deeper", "b.npz"), 7, 3, "z")
	os.WriteFile(filepath.Join(dir, "grid.npy"), npyBytes(t, 40, 6), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.npz"), []byte("not a zip"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644)
	os.WriteFile(filepath.Join(dir, "taken.npy"), npyBytes(t, 1, 1), 0o644)
	os.Mkdir(filepath.Join(dir, "taken"), 0o755) // a folder takes the views' name
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	got := walk(t, tr.Root())
	var names []string
	for p := range got {
		names = append(names, p)
	}
	slices.Sort(names)
	want := []string{
		"/a.npz", "/a.npz/x", "/a.npz/x.npy", "/a.npz/x.ra", "/a.npz/x/header.json", "/a.npz/x/raw.bin",
		"/a.npz/y", "/a.npz/y.npy", "/a.npz/y.ra", "/a.npz/y/header.json", "/a.npz/y/raw.bin",
		"/bad.npz", "/bad.npz/" + ErrorName,
		"/grid", "/grid.npy", "/grid.ra", "/grid/header.json", "/grid/raw.bin",
		"/sub", "/sub/deeper", "/sub/deeper/b.npz", "/sub/deeper/b.npz/z", "/sub/deeper/b.npz/z.npy", "/sub/deeper/b.npz/z.ra",
		"/sub/deeper/b.npz/z/header.json", "/sub/deeper/b.npz/z/raw.bin",
		"/taken", "/taken.npy", "/taken.ra",
	}
	if !slices.Equal(names, want) {
		t.Errorf("tree:\n%q\nwant:\n%q", names, want)
	}
	if b := read(t, got["/a.npz/y.npy"]); !bytes.Equal(b, npyBytes(t, 100, 5)) {
		t.Errorf("a.npz/y.npy: % x", b)
	}
	if b := read(t, got["/grid.npy"]); !bytes.Equal(b, npyBytes(t, 40, 6)) {
		t.Errorf("grid.npy: % x", b)
	}
	if b := read(t, got["/sub/deeper/b.npz/z/raw.bin"]); len(b) != 12 || b[0] != 7 || b[8] != 9 {
		t.Errorf("b.npz/z/raw.bin: % x", b)
	}
	if b := string(read(t, got["/bad.npz/"+ErrorName])); !strings.Contains(b, "end of central directory") {
		t.Errorf("bad.npz's error file says %q", b)
	}
	if tr.Root().Lookup("notes.txt") != nil || tr.Root().Lookup("nothing.npz") != nil {
		t.Error("a name that is not served is found")
	}
	if got["/a.npz"].Ino() == 1 || tr.Root().Ino() != 1 {
		t.Error("the root is not inode 1")
	}
}

// TestFolderChanges: files added and removed appear and vanish at the
// next lookup or listing; an archive replaced is a new archive (new inode
// numbers) and its old nodes fail their reads with ErrChanged, never
// giving the new bytes under the old names.
func TestFolderChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.npz")
	writeNPZ(t, path, 0, 4, "k")
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	old := lookup(tr.Root(), "run.npz/k.npy")
	oldDir := tr.Root().Lookup("run.npz")
	if old == nil || !bytes.Equal(read(t, old), npyBytes(t, 0, 4)) {
		t.Fatal("run.npz/k.npy")
	}
	writeNPZ(t, filepath.Join(dir, "new.npz"), 0, 1, "n")
	if tr.Root().Lookup("new.npz") == nil || len(fs.Children(tr.Root())) != 2 {
		t.Error("an archive added is not seen")
	}
	os.Remove(filepath.Join(dir, "new.npz"))
	if tr.Root().Lookup("new.npz") != nil || len(fs.Children(tr.Root())) != 1 {
		t.Error("an archive removed is still seen")
	}

	// Replaced: another size, another time.
	writeNPZ(t, path+".tmp", 50, 6, "k")
	os.Chtimes(path+".tmp", time.Now(), time.Now().Add(time.Hour))
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	nd := tr.Root().Lookup("run.npz")
	if nd == nil || nd.Ino() == oldDir.Ino() {
		t.Fatalf("the replaced archive keeps its inode number %d", oldDir.Ino())
	}
	fresh := lookup(tr.Root(), "run.npz/k.npy")
	if fresh == nil || fresh.Ino() == old.Ino() || !bytes.Equal(read(t, fresh), npyBytes(t, 50, 6)) {
		t.Error("the new archive's k.npy")
	}
	c := old.File()
	if _, err := c.ReadAtContext(context.Background(), make([]byte, 4), 0); !errors.Is(err, source.ErrChanged) {
		t.Errorf("a read of the old archive's file: %v, want ErrChanged", err)
	}
	if oldDir.Lookup("k.npy") != nil {
		t.Error("the old archive's folder still finds its files")
	}
}

// TestFolderKeepsFewOpen: with more archives in use than MaxOpen, those
// the kernel holds nothing of are closed, and the kernel is asked to let
// go of the others; a node of a closed archive opens it again when used
// and reads the same bytes under the same inode number.
func TestFolderKeepsFewOpen(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	for i := range n {
		writeNPZ(t, filepath.Join(dir, fmt.Sprintf("s%02d.npz", i)), i, 3, "k")
	}
	tr, err := Open(dir, &Options{MaxOpen: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var mu sync.Mutex
	var asked []string
	tr.SetInvalidate(func(parent uint64, name string) error {
		mu.Lock()
		asked = append(asked, name)
		mu.Unlock()
		return nil
	})
	// Unheld: read and let go, as the kernel does after a FORGET.
	var files []fs.Entry
	for i := range n {
		f := lookup(tr.Root(), fmt.Sprintf("s%02d.npz/k.npy", i))
		if f == nil {
			t.Fatalf("s%02d.npz/k.npy", i)
		}
		f.(fs.Holder).Hold()
		if !bytes.Equal(read(t, f), npyBytes(t, i, 3)) {
			t.Errorf("s%02d.npz/k.npy", i)
		}
		f.(fs.Holder).Release()
		files = append(files, f)
	}
	waitFor(t, func() bool { return tr.Open() <= 3 }, "archives closed down to MaxOpen")
	// A node of a closed archive still reads, opening it again.
	ino := files[0].Ino()
	files[0].(fs.Holder).Hold()
	if !bytes.Equal(read(t, files[0]), npyBytes(t, 0, 3)) || lookup(tr.Root(), "s00.npz/k.npy").Ino() != ino {
		t.Error("s00.npz/k.npy after its archive was closed")
	}
	files[0].(fs.Holder).Release()

	// Held: none can be closed, so the kernel is asked to let go.
	for _, f := range files {
		f.(fs.Holder).Hold()
		read(t, f)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(asked) > 0 }, "the kernel asked to let go")
	if tr.Open() <= 3 {
		t.Errorf("%d archives open with %d held", tr.Open(), n)
	}
	for _, f := range files {
		f.(fs.Holder).Release()
	}
	waitFor(t, func() bool { return tr.Open() <= 3 }, "archives closed once let go")
}

// waitFor polls cond (the tree closes archives in the background).
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// TestFolderConcurrentReaders: readers of many archives at once, while
// archives are closed and opened again under a small MaxOpen (-race).
func TestFolderConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	for i := range n {
		writeNPZ(t, filepath.Join(dir, fmt.Sprintf("s%02d.npz", i)), i, 50, "a", "b")
	}
	tr, err := Open(dir, &Options{MaxOpen: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 40 {
				i := (g*7 + k) % n
				f := lookup(tr.Root(), fmt.Sprintf("s%02d.npz/b/raw.bin", i))
				if f == nil {
					t.Errorf("s%02d.npz/b/raw.bin missing", i)
					return
				}
				h := f.(fs.Holder)
				h.Hold()
				b := read(t, f)
				h.Release()
				if len(b) != 200 || int(b[0]) != (i+100)&0xff {
					t.Errorf("s%02d.npz/b/raw.bin: % x", i, b[:4])
				}
			}
		})
	}
	wg.Wait()
}

// TestFolderUsesSidecars: with Sidecars, an archive of the folder is
// opened with the index sidecar beside it (here a damaged one, which the
// log then names); without, the sidecar is not looked at.
func TestFolderUsesSidecars(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.npz")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "x.npy", Method: zip.Deflate})
	data := npyBytes(t, 7, 1<<20)
	w.Write(data)
	zw.Close()
	os.WriteFile(path, buf.Bytes(), 0o644)

	store, err := npz.OpenIndexStore(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	a, err := npz.Open(path, &npz.Options{Indexes: store})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Member("x.npy")
	if _, err := m.BuildIndex(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	side := npz.SidecarPath(path)
	if err := npz.WriteIndexSidecar(side, []*npz.Member{m}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	store.Close()
	sb, _ := os.ReadFile(side)
	i := bytes.Index(sb, []byte("NPZFSIDX"))
	sb[i+48+9] ^= 0x20 // damage its table
	os.WriteFile(side, sb, 0o644)

	for _, use := range []bool{true, false} {
		var mu sync.Mutex
		var log []string
		tr, err := Open(dir, &Options{Sidecars: use, Archive: npz.Options{Logf: func(f string, args ...any) {
			mu.Lock()
			log = append(log, fmt.Sprintf(f, args...))
			mu.Unlock()
		}}})
		if err != nil {
			t.Fatal(err)
		}
		e := lookup(tr.Root(), "d.npz/x.npy")
		if e == nil {
			t.Fatal("d.npz/x.npy not found")
		}
		if got := read(t, e); !bytes.Equal(got, data) {
			t.Fatal("wrong bytes")
		}
		tr.Close()
		said := strings.Contains(strings.Join(log, "\n"), "d.npzidx not used")
		if said != use {
			t.Errorf("Sidecars %v: the damaged sidecar said %v: %q", use, said, log)
		}
	}
}
