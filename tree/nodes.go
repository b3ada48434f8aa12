//go:build linux

package tree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"weak"

	"github.com/npzfs/npzfs/folder"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// passing reports an error that may pass (a network failing for now, or
// the request having given up): it is answered EIO and kept by nothing,
// so the next request asks again.
func passing(err error) bool {
	return errors.Is(err, source.ErrTransient) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// absent reports an error that says a file or folder is not there.
func absent(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// dirNode is a folder of the store.
type dirNode struct {
	t     *Folder
	rel   string
	name  string
	ino   uint64
	mtime time.Time // when it was found
}

func (d *dirNode) Name() string             { return d.name }
func (d *dirNode) Ino() uint64              { return d.ino }
func (d *dirNode) IsDir() bool              { return true }
func (d *dirNode) CacheTime() time.Duration { return d.t.opts.CacheTime }

func (d *dirNode) File(context.Context) (npzfs.Content, error) { return nil, syscall.EISDIR }

// Attr gives the folder's modification time as the store says it now
// (the root's too, which is made at mount), or when it was found if it
// does not say or cannot be asked now: a time is not worth an error. A
// folder the store no longer has is gone.
func (d *dirNode) Attr(ctx context.Context) (npzfs.Attr, error) {
	e, err := d.t.store.Stat(ctx, d.rel)
	switch {
	case absent(err):
		return npzfs.Attr{}, err
	case err == nil && !e.ModTime.IsZero():
		return npzfs.Attr{ModTime: e.ModTime}, nil
	}
	return npzfs.Attr{ModTime: d.mtime}, nil
}

// path is the path of name in the folder.
func (d *dirNode) path(name string) string {
	if d.rel == "" {
		return name
	}
	return d.rel + "/" + name
}

// stat asks the store for name in the folder: an entry served, or an
// error, wrapping fs.ErrNotExist for one that is not there or not
// served (logged once).
func (d *dirNode) stat(ctx context.Context, name string) (folder.Entry, error) {
	rel := d.path(name)
	e, err := d.t.store.Stat(ctx, rel)
	if err != nil {
		if !absent(err) {
			d.t.failed(rel, err)
		}
		return e, err
	}
	if e.Skip != "" {
		d.t.skip(rel, e.Skip)
		return e, fs.ErrNotExist
	}
	return e, nil
}

// entry is the node for e, found in the folder.
func (d *dirNode) entry(e folder.Entry) npzfs.Entry {
	rel := d.path(e.Name)
	switch e.Shown() {
	case folder.ShownFolder:
		mtime := e.ModTime
		if mtime.IsZero() {
			mtime = time.Now()
		}
		return &dirNode{t: d.t, rel: rel, name: e.Name, ino: d.t.dirIno(rel), mtime: mtime}
	case folder.ShownArchive:
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
func (d *dirNode) npyEntries(e folder.Entry) []npzfs.Entry {
	s := d.t.slotFor(d.path(e.Name), e, true)
	nodes, err := s.bareNodes()
	if err != nil {
		return nil
	}
	out := make([]npzfs.Entry, len(nodes))
	for i, c := range nodes {
		// Generation 0 and no archive node: found in the archive when
		// it is opened.
		out[i] = &node{s: s, path: c.Name, name: c.Name, ino: s.base + c.Ino - 2, dir: c.Dir}
	}
	return out
}

// unreadable is the error file of a folder that cannot be read for good
// (a folder it may not enter), which is logged once.
func (d *dirNode) unreadable(err error) npzfs.Entry {
	d.t.note(d.rel, "cannot be read: %v", err)
	return &errFile{ino: d.t.dirIno(d.rel + "\x00" + ErrorName), mtime: d.mtime, err: err}
}

// list is the store's listing of the folder: an error that may pass
// or that says the folder is gone is the caller's; any other makes the
// folder hold its error file alone.
func (d *dirNode) list(ctx context.Context) ([]folder.Entry, npzfs.Entry, error) {
	ents, err := d.t.store.List(ctx, d.rel)
	switch {
	case err == nil:
		return ents, nil, nil
	case absent(err):
		return nil, nil, err
	case passing(err):
		d.t.failed(d.rel, err)
		return nil, nil, err
	}
	return nil, d.unreadable(err), nil
}

func (d *dirNode) Lookup(ctx context.Context, name string) (npzfs.Entry, error) {
	if name == ErrorName {
		_, ef, err := d.list(ctx)
		if err != nil || ef != nil {
			return ef, err
		}
	}
	e, err := d.stat(ctx, name)
	if err == nil {
		switch e.Shown() {
		case folder.ShownFolder, folder.ShownArchive:
			return d.entry(e), nil
		case folder.ShownNPY:
			return findNamed(d.npyEntries(e), name)
		}
		return nil, fs.ErrNotExist
	}
	if !absent(err) {
		return nil, err
	}
	// A view of KEY.npy: KEY/ or KEY.ra.
	key := name
	for _, suf := range npz.BesideSuffixes() {
		if k, ok := strings.CutSuffix(name, suf); ok {
			key = k
		}
	}
	if key+".npy" == name {
		return nil, err
	}
	npy, err := d.stat(ctx, key+".npy")
	if err != nil {
		return nil, err
	}
	if npy.Shown() != folder.ShownNPY {
		return nil, fs.ErrNotExist
	}
	return findNamed(d.npyEntries(npy), name)
}

// findNamed is the entry of es named name.
func findNamed(es []npzfs.Entry, name string) (npzfs.Entry, error) {
	for _, e := range es {
		if e.Name() == name {
			return e, nil
		}
	}
	return nil, fs.ErrNotExist
}

func (d *dirNode) List(ctx context.Context) (npzfs.Listing, error) {
	ents, ef, err := d.list(ctx)
	switch {
	case err != nil:
		return nil, err
	case ef != nil:
		return npzfs.Entries{ef}, nil
	}
	var out []npzfs.Entry
	shown := map[string]bool{}
	var npys []folder.Entry
	for _, e := range ents {
		if e.Skip != "" {
			d.t.skip(d.path(e.Name), e.Skip)
			continue
		}
		switch e.Shown() {
		case folder.ShownFolder, folder.ShownArchive:
			out = append(out, d.entry(e))
			shown[e.Name] = true
		case folder.ShownNPY:
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
	slices.SortFunc(out, func(x, y npzfs.Entry) int { return strings.Compare(x.Name(), y.Name()) })
	return npzfs.Entries(out), nil
}

// archNode is the folder NAME.npz/ of an archive file.
type archNode struct{ s *slot }

func (n *archNode) Name() string             { return n.s.name }
func (n *archNode) Ino() uint64              { return n.s.rootIno }
func (n *archNode) IsDir() bool              { return true }
func (n *archNode) CacheTime() time.Duration { return n.s.t.opts.CacheTime }

func (n *archNode) Attr(context.Context) (npzfs.Attr, error) {
	return npzfs.Attr{ModTime: n.s.mtime()}, nil
}

func (n *archNode) File(context.Context) (npzfs.Content, error) { return nil, syscall.EISDIR }

// broken is the archive folder's error file when its archive cannot be
// opened for good, else the error to answer with: fs.ErrNotExist for an
// archive replaced or removed since (its nodes are gone, not broken),
// and the error itself for one that may pass.
func (n *archNode) broken(err error) (npzfs.Entry, error) {
	switch {
	case errors.Is(err, source.ErrChanged):
		return nil, fmt.Errorf("%s: %w", n.s.rel, fs.ErrNotExist)
	case passing(err):
		return nil, err
	}
	return &errFile{ino: n.s.rootIno + 1, mtime: n.s.mtime(), err: err}, nil
}

// Lookup and List follow the archive's path (slot.follow): in an
// archive replaced since, they find what the one there now holds.
func (n *archNode) Lookup(ctx context.Context, name string) (npzfs.Entry, error) {
	s, a, gen, done, err := n.s.follow(ctx)
	defer done()
	if err != nil {
		ef, err := n.broken(err)
		if ef != nil && name != ErrorName {
			return nil, fs.ErrNotExist
		}
		return ef, err
	}
	if c := a.Root().Lookup(ctx, name); c != nil {
		return wrap(s, gen, c, ""), nil
	}
	return nil, notFound(ctx, a.Root())
}

func (n *archNode) List(ctx context.Context) (npzfs.Listing, error) {
	s, a, gen, done, err := n.s.follow(ctx)
	defer done()
	if err != nil {
		ef, err := n.broken(err)
		if ef != nil {
			return npzfs.Entries{ef}, nil
		}
		return nil, err
	}
	return listing{s: s, gen: gen, l: a.Root().Listing(ctx)}, nil
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

func (l listing) At(i int) npzfs.Entry {
	if c := l.l.At(i); c != nil {
		return wrap(l.s, l.gen, c, l.parent)
	}
	return nil
}

func (l listing) Prepare(ctx context.Context, from, to int) { l.l.Prepare(ctx, from, to) }
func (l listing) Prepared(i int) bool                       { return l.l.Prepared(i) }

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
func (w *node) resolve(ctx context.Context) (n *npz.Node, gen uint64, done func(), err error) {
	a, gen, done, err := w.s.archive(ctx)
	if err != nil {
		return nil, 0, done, err
	}
	n, err = w.in(ctx, a, gen)
	return n, gen, done, err
}

// in is the node in a, the slot's archive as open now (generation gen).
func (w *node) in(ctx context.Context, a *npz.Archive, gen uint64) (*npz.Node, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == gen {
		if n := w.n.Value(); n != nil {
			return n, nil
		}
	}
	n, err := nodeAt(ctx, a, w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %q is gone from the archive: %w", w.s.rel, w.path, source.ErrChanged)
	} else if err != nil {
		return nil, err
	}
	w.n, w.gen = weak.Make(n), gen
	return n, nil
}

// nodeAt is the node at path in a's tree; or, where there is none, why
// (notFound).
func nodeAt(ctx context.Context, a *npz.Archive, path string) (*npz.Node, error) {
	n := a.Root()
	for _, part := range strings.Split(path, "/") {
		c := n.Lookup(ctx, part)
		if c == nil {
			return nil, notFound(ctx, n)
		}
		n = c
	}
	return n, nil
}

// notFound is why a lookup in the folder n found nothing: the request
// ended (its context's error: EINTR, the call made again), or n's
// contents cannot be known for now (a views folder whose npy header
// could not be read: EIO, nothing cached), or the name is not there.
func notFound(ctx context.Context, n *npz.Node) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.Unsettled() {
		return errUnsettled
	}
	return fs.ErrNotExist
}

// resolveFollowing is resolve for a lookup or listing in the node, a
// folder: in an archive replaced since, it finds the node's path in the
// archive there now (slot.follow), whose slot it returns; a path the
// new archive does not have is not there.
func (w *node) resolveFollowing(ctx context.Context) (s *slot, n *npz.Node, gen uint64, done func(), err error) {
	s, a, gen, done, err := w.s.follow(ctx)
	switch {
	case err != nil:
		return nil, nil, 0, done, err
	case s == w.s:
		n, err = w.in(ctx, a, gen)
		return s, n, gen, done, err
	}
	if n, err = nodeAt(ctx, a, w.path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, 0, done, fmt.Errorf("%s: %q is not in the archive there now: %w", s.rel, w.path, fs.ErrNotExist)
	} else if err != nil {
		return nil, nil, 0, done, err
	}
	return s, n, gen, done, nil
}

func (w *node) Name() string { return w.name }
func (w *node) Ino() uint64  { return w.ino }
func (w *node) IsDir() bool  { return w.dir }
func (w *node) Opened()      { w.s.opened() }
func (w *node) Closed()      { w.s.closed() }

// Attr is the node's as the archive gives it; a node whose archive is
// gone (replaced, removed) keeps the size the kernel was told, and reads
// fail; one whose archive cannot be opened now says why.
func (w *node) Attr(ctx context.Context) (npzfs.Attr, error) {
	n, _, done, err := w.resolve(ctx)
	defer done()
	switch {
	case err == nil:
	case errors.Is(err, source.ErrChanged):
		w.mu.Lock()
		defer w.mu.Unlock()
		return npzfs.Attr{Size: w.size, ModTime: w.s.mtime()}, nil
	case passing(err):
		return npzfs.Attr{}, err
	default:
		return npzfs.Attr{Size: w.size, ModTime: w.s.mtime()}, nil
	}
	a := npzfs.Attr{ModTime: n.ModTime(), DiskUsage: n.DiskUsage()}
	if f := n.File(ctx); f != nil {
		a.Size = f.Size()
		w.mu.Lock()
		w.size = a.Size
		w.mu.Unlock()
	}
	return a, nil
}

func (w *node) Lookup(ctx context.Context, name string) (npzfs.Entry, error) {
	s, n, gen, done, err := w.resolveFollowing(ctx)
	defer done()
	if err != nil {
		if name == ErrorName {
			if ef := w.errFile(err); ef != nil {
				return ef, nil
			}
		}
		if passing(err) {
			return nil, err
		}
		return nil, fs.ErrNotExist
	}
	if c := n.Lookup(ctx, name); c != nil {
		return wrap(s, gen, c, w.path), nil
	}
	return nil, notFound(ctx, n)
}

func (w *node) List(ctx context.Context) (npzfs.Listing, error) {
	if !w.dir {
		return nil, syscall.ENOTDIR
	}
	s, n, gen, done, err := w.resolveFollowing(ctx)
	defer done()
	if err != nil {
		if e := w.errFile(err); e != nil {
			return npzfs.Entries{e}, nil
		}
		if passing(err) {
			return nil, err
		}
		return npzfs.Entries{}, nil
	}
	return listing{s: s, gen: gen, l: n.Listing(ctx), parent: w.path}, nil
}

// errFile is the error file of the views folder NAME/ of a file NAME.npy
// that cannot be served, which says why; nil for every other node, for
// a failure that may pass, and for a file replaced or removed since (its
// nodes are gone, not broken).
func (w *node) errFile(err error) npzfs.Entry {
	if !w.s.bare || !w.dir || strings.Contains(w.path, "/") || errors.Is(err, source.ErrChanged) || passing(err) {
		return nil
	}
	return &errFile{ino: w.s.rootIno + 1, mtime: w.s.mtime(), err: err}
}

// File is the node's content. A node whose archive is gone or broken
// keeps the size the kernel was told, with reads that fail: content that
// is shorter would read as the end of the file, not as an error.
func (w *node) File(ctx context.Context) (npzfs.Content, error) {
	if w.dir {
		return nil, syscall.EISDIR
	}
	// Read by the kernel while the file is open (Opened): the archive
	// stays open after done.
	n, _, done, err := w.resolve(ctx)
	defer done()
	if err != nil {
		if passing(err) {
			return nil, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return failed{size: w.size, err: err}, nil
	}
	f := n.File(ctx)
	if f == nil {
		return nil, syscall.EISDIR
	}
	w.mu.Lock()
	w.size = f.Size()
	w.mu.Unlock()
	return f, nil
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
func (f failed) Extent(context.Context) (uintptr, int64, bool, error) { return 0, 0, false, f.err }

// errFile is the one file of an archive folder whose archive cannot be
// opened, or of a folder that cannot be read: why, in a line.
type errFile struct {
	ino   uint64
	mtime time.Time
	err   error
}

func (e *errFile) Name() string { return ErrorName }
func (e *errFile) Ino() uint64  { return e.ino }
func (e *errFile) IsDir() bool  { return false }
func (e *errFile) Attr(context.Context) (npzfs.Attr, error) {
	size := int64(len(e.text()))
	return npzfs.Attr{Size: size, ModTime: e.mtime, DiskUsage: size}, nil
}
func (e *errFile) Lookup(context.Context, string) (npzfs.Entry, error) { return nil, syscall.ENOTDIR }
func (e *errFile) List(context.Context) (npzfs.Listing, error)         { return nil, syscall.ENOTDIR }
func (e *errFile) File(context.Context) (npzfs.Content, error)         { return e.text(), nil }
func (e *errFile) text() textContent                                   { return textContent(e.err.Error() + "\n") }

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
func (c textContent) Extent(context.Context) (uintptr, int64, bool, error) { return 0, 0, false, nil }
