//go:build linux

package tree

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
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
		for _, c := range kidsOf(t, e) {
			cp := p + "/" + c.Name()
			if other, dup := inos[c.Ino()]; dup {
				t.Errorf("%s and %s share inode %d", cp, other, c.Ino())
			}
			inos[c.Ino()] = cp
			l := find(t, e, c.Name())
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
	c := fileOf(t, e)
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

func lookup(t *testing.T, root fs.Entry, path string) fs.Entry {
	t.Helper()
	e := root
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		if e = find(t, e, p); e == nil {
			return nil
		}
	}
	return e
}

// find is the child of e named name, or nil when there is none; any
// other failure fails the test.
func find(t *testing.T, e fs.Entry, name string) fs.Entry {
	t.Helper()
	c, err := e.Lookup(context.Background(), name)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("lookup %s in %s: %v", name, e.Name(), err)
	}
	return c
}

// kidsOf lists folder e, which must be listed.
func kidsOf(t *testing.T, e fs.Entry) []fs.Entry {
	t.Helper()
	kids, err := fs.Children(context.Background(), e)
	if err != nil {
		t.Fatalf("list %s: %v", e.Name(), err)
	}
	return kids
}

// fileOf is the content of file e, which must have one.
func fileOf(t *testing.T, e fs.Entry) fs.Content {
	t.Helper()
	c, err := e.File(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", e.Name(), err)
	}
	return c
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
	os.WriteFile(filepath.Join(dir, "junk.npy"), []byte("not a .npy"), 0o644)
	writeNPZ(t, filepath.Join(dir, "zipped.npy"), 0, 1, "q")                 // an archive named .npy
	os.WriteFile(filepath.Join(dir, "npyish.npz"), npyBytes(t, 1, 1), 0o644) // a .npy named .npz
	tr, err := OpenFolder(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// A listing goes by the names: it opens nothing.
	if kids := kidsOf(t, tr.Root()); len(kids) == 0 || openCount(tr) != 0 {
		t.Errorf("listing the root: %d entries, %d archives opened", len(kids), openCount(tr))
	}
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
		"/junk", "/junk.npy", "/junk.ra", "/junk/" + ErrorName, "/npyish.npz", "/npyish.npz/" + ErrorName,
		"/sub", "/sub/deeper", "/sub/deeper/b.npz", "/sub/deeper/b.npz/z", "/sub/deeper/b.npz/z.npy", "/sub/deeper/b.npz/z.ra",
		"/sub/deeper/b.npz/z/header.json", "/sub/deeper/b.npz/z/raw.bin",
		"/taken", "/taken.npy", "/taken.ra", "/zipped", "/zipped.npy", "/zipped.ra", "/zipped/" + ErrorName,
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
	for p, want := range map[string]string{
		"/junk/" + ErrorName:       `junk.npy: npy: not a .npy file: it does not start with the magic "\x93NUMPY", nor is it a zip archive (at byte 0)`,
		"/zipped/" + ErrorName:     "zipped.npy is named .npy but holds a zip archive (name it .npz)",
		"/npyish.npz/" + ErrorName: "npyish.npz is named .npz but holds a .npy file (name it .npy)",
	} {
		if b := string(read(t, got[p])); !strings.Contains(b, want) {
			t.Errorf("%s says %q, want %q", p, b, want)
		}
	}
	for _, p := range []string{"/junk.npy", "/junk.ra", "/zipped.npy"} {
		if _, err := fileOf(t, got[p]).ReadAtContext(context.Background(), make([]byte, 1), 0); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("a read of %s: %v, want its file's error", p, err)
		}
	}
	if find(t, tr.Root(), "notes.txt") != nil || find(t, tr.Root(), "nothing.npz") != nil {
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
	tr, err := OpenFolder(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	old := lookup(t, tr.Root(), "run.npz/k.npy")
	oldDir := find(t, tr.Root(), "run.npz")
	if old == nil || !bytes.Equal(read(t, old), npyBytes(t, 0, 4)) {
		t.Fatal("run.npz/k.npy")
	}
	writeNPZ(t, filepath.Join(dir, "new.npz"), 0, 1, "n")
	if find(t, tr.Root(), "new.npz") == nil || len(kidsOf(t, tr.Root())) != 2 {
		t.Error("an archive added is not seen")
	}
	os.Remove(filepath.Join(dir, "new.npz"))
	if find(t, tr.Root(), "new.npz") != nil || len(kidsOf(t, tr.Root())) != 1 {
		t.Error("an archive removed is still seen")
	}

	// Replaced: another size, another time.
	writeNPZ(t, path+".tmp", 50, 6, "k")
	os.Chtimes(path+".tmp", time.Now(), time.Now().Add(time.Hour))
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	nd := find(t, tr.Root(), "run.npz")
	if nd == nil || nd.Ino() == oldDir.Ino() {
		t.Fatalf("the replaced archive keeps its inode number %d", oldDir.Ino())
	}
	fresh := lookup(t, tr.Root(), "run.npz/k.npy")
	if fresh == nil || fresh.Ino() == old.Ino() || !bytes.Equal(read(t, fresh), npyBytes(t, 50, 6)) {
		t.Error("the new archive's k.npy")
	}
	c := fileOf(t, old)
	if _, err := c.ReadAtContext(context.Background(), make([]byte, 4), 0); !errors.Is(err, source.ErrChanged) {
		t.Errorf("a read of the old archive's file: %v, want ErrChanged", err)
	}
	// The old archive's folder, which the kernel may use for a while
	// yet, finds the new archive's files, as the path does; once the
	// file is removed, nothing.
	if k := find(t, oldDir, "k.npy"); k == nil || fresh == nil || k.Ino() != fresh.Ino() {
		t.Error("a look into the old archive's folder does not find the new archive's k.npy")
	}
	os.Remove(path)
	if find(t, oldDir, "k.npy") != nil {
		t.Error("the removed archive's folder still finds a file")
	}
}

// TestFolderKeepsFewOpen: with more archives used than MaxOpen, those
// of which no file is open are closed at once, whatever nodes of theirs
// the kernel still caches; a node of a closed archive opens it again
// when used and reads the same bytes under the same inode number; an
// archive with a file open stays open while it is.
func TestFolderKeepsFewOpen(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	for i := range n {
		writeNPZ(t, filepath.Join(dir, fmt.Sprintf("s%02d.npz", i)), i, 3, "k")
	}
	tr, err := OpenFolder(context.Background(), dir, &Options{MaxOpen: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// Opened, read and closed, as the kernel does; the nodes stay, as
	// the kernel caches them.
	var files []fs.Entry
	for i := range n {
		f := lookup(t, tr.Root(), fmt.Sprintf("s%02d.npz/k.npy", i))
		if f == nil {
			t.Fatalf("s%02d.npz/k.npy", i)
		}
		f.(fs.Opener).Opened()
		if !bytes.Equal(read(t, f), npyBytes(t, i, 3)) {
			t.Errorf("s%02d.npz/k.npy", i)
		}
		f.(fs.Opener).Closed()
		if k := openCount(tr); k > 3 {
			t.Fatalf("%d archives open after %d used, MaxOpen 3", k, i+1)
		}
		files = append(files, f)
	}
	// A node of a closed archive still reads, opening it again.
	ino := files[0].Ino()
	files[0].(fs.Opener).Opened()
	if !bytes.Equal(read(t, files[0]), npyBytes(t, 0, 3)) || lookup(t, tr.Root(), "s00.npz/k.npy").Ino() != ino {
		t.Error("s00.npz/k.npy after its archive was closed")
	}
	files[0].(fs.Opener).Closed()

	// Open files keep their archives open, and only them.
	for _, f := range files {
		f.(fs.Opener).Opened()
		read(t, f)
	}
	if k := openCount(tr); k != n {
		t.Errorf("%d archives open with a file of each of %d open", k, n)
	}
	for _, f := range files {
		f.(fs.Opener).Closed()
	}
	if k := openCount(tr); k > 3 {
		t.Errorf("%d archives open once their files were closed, MaxOpen 3", k)
	}
}

// TestClosedArchiveIsNotKept: the nodes of a closed archive that the
// kernel still caches do not keep the archive in memory.
func TestClosedArchiveIsNotKept(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		writeNPZ(t, filepath.Join(dir, fmt.Sprintf("s%d.npz", i)), i, 3, "k")
	}
	tr, err := OpenFolder(context.Background(), dir, &Options{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	f := lookup(t, tr.Root(), "s0.npz/k.npy")
	read(t, f)
	gone := make(chan struct{})
	runtime.AddCleanup(f.(*node).s.a, func(struct{}) { close(gone) }, struct{}{})
	read(t, lookup(t, tr.Root(), "s1.npz/k.npy")) // s0.npz is closed
	if k := openCount(tr); k != 1 {
		t.Fatalf("%d archives open, MaxOpen 1", k)
	}
	for range 100 {
		runtime.GC()
		select {
		case <-gone:
			runtime.KeepAlive(f)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Error("a closed archive stays in memory while a node of it is held")
}

// TestFolderConcurrentReaders: readers of many archives at once, while
// archives are closed and opened again under a small MaxOpen (-race);
// once they are done, at most MaxOpen are open.
func TestFolderConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	for i := range n {
		writeNPZ(t, filepath.Join(dir, fmt.Sprintf("s%02d.npz", i)), i, 50, "a", "b")
	}
	tr, err := OpenFolder(context.Background(), dir, &Options{MaxOpen: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 40 {
				i := (g*7 + k) % n
				f := lookup(t, tr.Root(), fmt.Sprintf("s%02d.npz/b/raw.bin", i))
				if f == nil {
					t.Errorf("s%02d.npz/b/raw.bin missing", i)
					return
				}
				o := f.(fs.Opener)
				o.Opened()
				b := read(t, f)
				o.Closed()
				if len(b) != 200 || int(b[0]) != (i+100)&0xff {
					t.Errorf("s%02d.npz/b/raw.bin: % x", i, b[:4])
				}
			}
		})
	}
	wg.Wait()
	if k := openCount(tr); k > 4 {
		t.Errorf("%d archives open after the readers, MaxOpen 4", k)
	}
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
	a, err := npz.Open(context.Background(), path, &npz.Options{Indexes: store})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Member("x.npy")
	if _, err := m.BuildIndex(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	side := npz.SidecarPath(path)
	if err := npz.WriteIndexSidecar(context.Background(), side, []*npz.Member{m}); err != nil {
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
		tr, err := OpenFolder(context.Background(), dir, &Options{Sidecars: use, Archive: npz.Options{Logf: func(f string, args ...any) {
			mu.Lock()
			log = append(log, fmt.Sprintf(f, args...))
			mu.Unlock()
		}}})
		if err != nil {
			t.Fatal(err)
		}
		e := lookup(t, tr.Root(), "d.npz/x.npy")
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

// TestFolderSymlinks: a symbolic link to a folder is followed unless
// that folder is one the link is in, or holds one, in the served tree (a
// loop, through one link or several); each such link is left out of
// listings and lookups, and logged once. Links to folders and archives
// elsewhere are followed. The whole tree is finite.
func TestFolderSymlinks(t *testing.T) {
	root := t.TempDir()
	dir, out := filepath.Join(root, "d"), filepath.Join(root, "out")
	writeNPZ(t, filepath.Join(dir, "a.npz"), 1, 3, "k")
	writeNPZ(t, filepath.Join(dir, "sub", "b.npz"), 2, 3, "k")
	writeNPZ(t, filepath.Join(dir, "p", "c.npz"), 3, 3, "k")
	writeNPZ(t, filepath.Join(dir, "q", "e.npz"), 4, 3, "k")
	writeNPZ(t, filepath.Join(out, "x.npz"), 5, 3, "k")
	for link, to := range map[string]string{
		"sub/up":   "..",            // its folder's folder
		"sub/self": ".",             // its folder
		"p/toq":    "../q",          // p/toq/top is a loop, p/toq is not
		"q/top":    "../p",          // ... and q/top/toq
		"top":      "/",             // holds the served folder
		"ext":      out,             // elsewhere: followed
		"y.npz":    out + "/x.npz",  // an archive elsewhere
		"sub/deep": "../../d/sub/.", // its folder again, by a longer way
	} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var log []string
	tr, err := OpenFolder(context.Background(), dir, &Options{Archive: npz.Options{Logf: func(f string, args ...any) {
		mu.Lock()
		log = append(log, fmt.Sprintf(f, args...))
		mu.Unlock()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var paths []string
	for range 2 { // listed twice: logged once
		paths = paths[:0]
		for p := range walk(t, tr.Root()) {
			if !strings.Contains(p, ".npz/") {
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(paths)
	want := []string{"/a.npz", "/ext", "/ext/x.npz", "/p", "/p/c.npz", "/p/toq", "/p/toq/e.npz",
		"/q", "/q/e.npz", "/q/top", "/q/top/c.npz", "/sub", "/sub/b.npz", "/y.npz"}
	if !slices.Equal(paths, want) {
		t.Errorf("served:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{"sub/up", "sub/self", "sub/deep", "p/toq/top", "q/top/toq", "top"} {
		if lookup(t, tr.Root(), p) != nil {
			t.Errorf("%s is found", p)
		}
	}
	lookup(t, tr.Root(), "sub/up") // looked up again: not logged again
	if !bytes.Equal(read(t, lookup(t, tr.Root(), "ext/x.npz/k.npy")), npyBytes(t, 5, 3)) ||
		!bytes.Equal(read(t, lookup(t, tr.Root(), "y.npz/k.npy")), npyBytes(t, 5, 3)) {
		t.Error("an archive through a link")
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(log)
	var skipped []string
	for _, l := range log {
		if i := strings.Index(l, ": not served: a symbolic link to "); i >= 0 && strings.HasSuffix(l, "(a loop)") {
			skipped = append(skipped, strings.TrimPrefix(l[:i], "npzfs: "))
		}
	}
	if want := []string{"p/toq/top", "q/top/toq", "sub/deep", "sub/self", "sub/up", "top"}; !slices.Equal(skipped, want) || len(log) != len(want) {
		t.Errorf("logged:\n%s\nwant one line for each of %v", strings.Join(log, "\n"), want)
	}
}

// TestUnreadableFolder: a folder that cannot be listed holds only
// npzfs-error.txt, which says why, as an archive that cannot be read
// does, and the log says so once.
func TestUnreadableFolder(t *testing.T) {
	dir := t.TempDir()
	writeNPZ(t, filepath.Join(dir, "a.npz"), 1, 3, "k")
	var log []string
	tr, err := OpenFolder(context.Background(), dir, &Options{Archive: npz.Options{Logf: func(f string, args ...any) {
		log = append(log, fmt.Sprintf(f, args...))
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	d := find(t, tr.Root(), "sub")
	if d == nil {
		t.Fatal("sub not found")
	}
	if e := find(t, d, ErrorName); e != nil {
		t.Errorf("a readable folder has %s", ErrorName)
	}
	// A folder that cannot be listed, whoever runs the test: one that
	// is gone and in its place a file.
	os.Remove(sub)
	os.WriteFile(sub, nil, 0o644)
	for range 2 {
		kids := kidsOf(t, d)
		if len(kids) != 1 || kids[0].Name() != ErrorName {
			t.Fatalf("an unreadable folder lists %d entries", len(kids))
		}
		if b := read(t, kids[0]); !strings.Contains(string(b), "not a directory") {
			t.Errorf("%s says %q", ErrorName, b)
		}
		if e := find(t, d, ErrorName); e == nil || e.Ino() != kids[0].Ino() {
			t.Errorf("Lookup(%s) = %v", ErrorName, e)
		}
	}
	if len(log) != 1 || !strings.Contains(log[0], "sub: cannot be read:") {
		t.Errorf("logged %q, want one line", log)
	}
}

// openCount is how many archives tr has open.
func openCount(tr *Folder) int {
	n, _ := tr.Open()
	return n
}
