package folder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// shownKind is what a folder shows for an entry on disk.
type shownKind int

const (
	hidden shownKind = iota
	shownDir
	shownArchive
	shownNPY
)

func kindOf(e Entry) shownKind {
	switch {
	case e.Skip != "":
		return hidden
	case e.Dir:
		return shownDir
	case strings.HasSuffix(e.Name, ".npz"):
		return shownArchive
	case strings.HasSuffix(e.Name, ".npy") && e.Name != ".npy":
		return shownNPY
	}
	return hidden
}

// dirNode is a folder of the store.
type dirNode struct {
	t     *Tree
	rel   string
	name  string
	ino   uint64
	mtime time.Time // when it was found
}

func (d *dirNode) Name() string             { return d.name }
func (d *dirNode) Ino() uint64              { return d.ino }
func (d *dirNode) IsDir() bool              { return true }
func (d *dirNode) File() fs.Content         { return nil }
func (d *dirNode) CacheTime() time.Duration { return d.t.opts.CacheTime }

// ModTime is the folder's as the store says it now (the root's too,
// which is made at mount), or when it was found if it does not say.
func (d *dirNode) ModTime() time.Time {
	if e, err := d.t.store.Stat(context.Background(), d.rel); err == nil && !e.ModTime.IsZero() {
		return e.ModTime
	}
	return d.mtime
}

// path is the path of name in the folder.
func (d *dirNode) path(name string) string {
	if d.rel == "" {
		return name
	}
	return d.rel + "/" + name
}

// stat asks the store for name in the folder, and reports whether it is
// served; one not served is logged once.
func (d *dirNode) stat(name string) (Entry, bool) {
	rel := d.path(name)
	e, err := d.t.store.Stat(context.Background(), rel)
	if err != nil {
		return e, false
	}
	if e.Skip != "" {
		d.t.skip(rel, e.Skip)
		return e, false
	}
	return e, true
}

// entry is the node for e, found in the folder.
func (d *dirNode) entry(e Entry) fs.Entry {
	rel := d.path(e.Name)
	switch kindOf(e) {
	case shownDir:
		mtime := e.ModTime
		if mtime.IsZero() {
			mtime = time.Now()
		}
		return &dirNode{t: d.t, rel: rel, name: e.Name, ino: d.t.dirIno(rel), mtime: mtime}
	case shownArchive:
		return &archNode{s: d.t.slotFor(rel, e, false)}
	}
	return nil
}

// npyEntries are the nodes a .npy file makes in its folder: NAME.npy and
// its views (NAME/, NAME.ra), each when its name is free. They go by the
// name (npz.BareNodes), as an archive's do: the file is opened when one
// of them is used, and one that cannot be served then fails their reads
// and says why in NAME/npzfs-error.txt, as an archive that cannot be
// read does in its folder.
func (d *dirNode) npyEntries(e Entry) []fs.Entry {
	s := d.t.slotFor(d.path(e.Name), e, true)
	nodes, err := s.bareNodes()
	if err != nil {
		return nil
	}
	out := make([]fs.Entry, len(nodes))
	for i, c := range nodes {
		// Generation 0 and no archive node: found in the archive when
		// it is opened.
		out[i] = &node{s: s, path: c.Name, name: c.Name, ino: s.base + c.Ino - 2, dir: c.Dir}
	}
	return out
}

// unreadable is the error file of a folder that cannot be read, which
// is logged once; nil when it can be, or is gone (it vanishes from its
// folder as any file removed does).
func (d *dirNode) unreadable(err error) fs.Entry {
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	d.t.note(d.rel, "cannot be read: %v", err)
	return &errFile{ino: d.t.dirIno(d.rel + "\x00" + ErrorName), mtime: d.mtime, err: err}
}

func (d *dirNode) Lookup(name string) fs.Entry {
	if name == ErrorName {
		if _, err := d.t.store.List(context.Background(), d.rel); err != nil {
			if e := d.unreadable(err); e != nil {
				return e
			}
		}
	}
	if e, ok := d.stat(name); ok {
		switch kindOf(e) {
		case shownDir, shownArchive:
			return d.entry(e)
		case shownNPY:
			for _, c := range d.npyEntries(e) {
				if c.Name() == name {
					return c
				}
			}
			return nil
		}
	}
	// A view of KEY.npy: KEY/ or KEY.ra.
	key := name
	for _, suf := range npz.BesideSuffixes() {
		if k, ok := strings.CutSuffix(name, suf); ok {
			key = k
		}
	}
	npy, ok := d.stat(key + ".npy")
	if !ok || kindOf(npy) != shownNPY {
		return nil
	}
	for _, e := range d.npyEntries(npy) {
		if e.Name() == name {
			return e
		}
	}
	return nil
}

func (d *dirNode) List() fs.Listing {
	ents, err := d.t.store.List(context.Background(), d.rel)
	if err != nil {
		if e := d.unreadable(err); e != nil {
			return fs.Entries{e}
		}
		return nil
	}
	var out []fs.Entry
	shown := map[string]bool{}
	var npys []Entry
	for _, e := range ents {
		if e.Skip != "" {
			d.t.skip(d.path(e.Name), e.Skip)
			continue
		}
		switch kindOf(e) {
		case shownDir, shownArchive:
			out = append(out, d.entry(e))
			shown[e.Name] = true
		case shownNPY:
			npys = append(npys, e)
			shown[e.Name] = true
		}
	}
	for _, npy := range npys {
		for _, e := range d.npyEntries(npy) {
			if e.Name() == npy.Name || !shown[e.Name()] {
				out = append(out, e)
				shown[e.Name()] = true
			}
		}
	}
	slices.SortFunc(out, func(x, y fs.Entry) int { return strings.Compare(x.Name(), y.Name()) })
	return fs.Entries(out)
}

// archNode is the folder NAME.npz/ of an archive file.
type archNode struct{ s *slot }

func (n *archNode) Name() string             { return n.s.name }
func (n *archNode) Ino() uint64              { return n.s.rootIno }
func (n *archNode) IsDir() bool              { return true }
func (n *archNode) ModTime() time.Time       { return n.s.mtime() }
func (n *archNode) File() fs.Content         { return nil }
func (n *archNode) CacheTime() time.Duration { return n.s.t.opts.CacheTime }

func (n *archNode) Lookup(name string) fs.Entry {
	a, gen, done, err := n.s.archive()
	defer done()
	if err != nil {
		if name == ErrorName && !errors.Is(err, source.ErrChanged) {
			return &errFile{ino: n.s.rootIno + 1, mtime: n.s.mtime(), err: err}
		}
		return nil
	}
	if c := a.Root().Lookup(name); c != nil {
		return wrap(n.s, gen, c, "")
	}
	return nil
}

func (n *archNode) List() fs.Listing {
	a, gen, done, err := n.s.archive()
	defer done()
	if err != nil {
		if errors.Is(err, source.ErrChanged) {
			return nil
		}
		return fs.Entries{&errFile{ino: n.s.rootIno + 1, mtime: n.s.mtime(), err: err}}
	}
	return listing{s: n.s, gen: gen, l: a.Root().Listing()}
}

// listing is the listing of a folder of an archive: its nodes are
// wrapped as they are listed, not when the folder is opened.
type listing struct {
	s      *slot
	gen    uint64
	l      npz.Listing
	parent string // the folder's path in the archive
}

func (l listing) Len() int { return l.l.Len() }

func (l listing) At(i int) fs.Entry {
	if c := l.l.At(i); c != nil {
		return wrap(l.s, l.gen, c, l.parent)
	}
	return nil
}

func (l listing) Prepare(from, to int) { l.l.Prepare(from, to) }

// node is a node of an archive's tree, under the mount's inode numbers.
// It keeps its path in the archive, so that it finds itself again when
// the archive was closed and opened since, and only a weak pointer to
// the archive's node: the kernel may cache nodes of archives long closed,
// which must not keep those archives in memory.
type node struct {
	s    *slot
	path string // in the archive's tree
	name string
	ino  uint64
	dir  bool

	mu   sync.Mutex
	gen  uint64
	n    weak.Pointer[npz.Node]
	size int64 // the file's, as last found
}

func wrap(s *slot, gen uint64, c *npz.Node, parent string) *node {
	p := c.Name()
	if parent != "" {
		p = parent + "/" + p
	}
	return &node{s: s, path: p, name: c.Name(), ino: s.base + c.Ino() - 2, dir: c.IsDir(), gen: gen, n: weak.Make(c)}
}

// resolve finds the node in the archive as it is open now, which stays
// open until done is called (which it must be, also after an error).
func (w *node) resolve() (n *npz.Node, gen uint64, done func(), err error) {
	a, gen, done, err := w.s.archive()
	if err != nil {
		return nil, 0, done, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == gen {
		if n := w.n.Value(); n != nil {
			return n, gen, done, nil
		}
	}
	n = a.Root()
	for _, part := range strings.Split(w.path, "/") {
		if n = n.Lookup(part); n == nil {
			return nil, 0, done, fmt.Errorf("%s: %q is gone from the archive: %w", w.s.rel, w.path, source.ErrChanged)
		}
	}
	w.n, w.gen = weak.Make(n), gen
	return n, gen, done, nil
}

func (w *node) Name() string { return w.name }
func (w *node) Ino() uint64  { return w.ino }
func (w *node) IsDir() bool  { return w.dir }
func (w *node) Opened()      { w.s.opened() }
func (w *node) Closed()      { w.s.closed() }

func (w *node) ModTime() time.Time {
	n, _, done, err := w.resolve()
	defer done()
	if err == nil {
		return n.ModTime()
	}
	return w.s.mtime()
}

func (w *node) DiskUsage() int64 {
	n, _, done, err := w.resolve()
	defer done()
	if err == nil {
		return n.DiskUsage()
	}
	return 0
}

func (w *node) Lookup(name string) fs.Entry {
	n, gen, done, err := w.resolve()
	defer done()
	if err != nil {
		if name == ErrorName {
			return w.errFile(err)
		}
		return nil
	}
	if c := n.Lookup(name); c != nil {
		return wrap(w.s, gen, c, w.path)
	}
	return nil
}

func (w *node) List() fs.Listing {
	n, gen, done, err := w.resolve()
	defer done()
	if err != nil {
		if e := w.errFile(err); e != nil {
			return fs.Entries{e}
		}
		return nil
	}
	if !n.IsDir() {
		return nil
	}
	return listing{s: w.s, gen: gen, l: n.Listing(), parent: w.path}
}

// errFile is the error file of the views folder NAME/ of a file NAME.npy
// that cannot be served, which says why; nil for every other node, and
// for a file replaced or removed since (its nodes are gone, not broken).
func (w *node) errFile(err error) fs.Entry {
	if !w.s.bare || !w.dir || strings.Contains(w.path, "/") || errors.Is(err, source.ErrChanged) {
		return nil
	}
	return &errFile{ino: w.s.rootIno + 1, mtime: w.s.mtime(), err: err}
}

func (w *node) File() fs.Content {
	if w.dir {
		return nil
	}
	// Read by the kernel while the file is open (Opened): the archive
	// stays open after done.
	n, _, done, err := w.resolve()
	defer done()
	if err != nil {
		// Its size stays what the kernel was told: content that is
		// shorter would read as the end of the file, not as an error.
		w.mu.Lock()
		defer w.mu.Unlock()
		return failed{size: w.size, err: err}
	}
	f := n.File()
	if f == nil {
		return failed{err: errors.New("not a file")}
	}
	w.mu.Lock()
	w.size = f.Size()
	w.mu.Unlock()
	return f
}

// failed is the content of a file whose archive is gone: every read fails.
type failed struct {
	size int64
	err  error
}

func (f failed) Size() int64 { return f.size }
func (f failed) ReadAtContext(context.Context, []byte, int64) (int, error) {
	return 0, f.err
}
func (f failed) Extent() (uintptr, int64, bool, error) { return 0, 0, false, f.err }

// errFile is the one file of an archive folder whose archive cannot be
// opened, or of a folder that cannot be read: why, in a line.
type errFile struct {
	ino   uint64
	mtime time.Time
	err   error
}

func (e *errFile) Name() string           { return ErrorName }
func (e *errFile) Ino() uint64            { return e.ino }
func (e *errFile) IsDir() bool            { return false }
func (e *errFile) ModTime() time.Time     { return e.mtime }
func (e *errFile) Lookup(string) fs.Entry { return nil }
func (e *errFile) List() fs.Listing       { return nil }
func (e *errFile) File() fs.Content       { return textContent(e.err.Error() + "\n") }

type textContent string

func (c textContent) Size() int64 { return int64(len(c)) }
func (c textContent) ReadAtContext(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(c)) {
		return 0, io.EOF
	}
	n := copy(p, c[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (c textContent) Extent() (uintptr, int64, bool, error) { return 0, 0, false, nil }
