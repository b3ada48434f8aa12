// Package folder serves a folder of archives as one tree: every .npz file
// under it as a folder NAME.npz/ holding that archive's tree, and every
// .npy file as NAME.npy with its views beside it, sub-folders kept.
//
// Archives are opened on first use (a lookup or listing inside them, or
// for a .npy, a listing of its folder) and closed again, the least
// recently used first, when more than Options.MaxOpen are open and none
// of their files is (fs.Opener) nor any request in them under way,
// whatever nodes of theirs the kernel still caches: a node of a closed
// archive opens it again when it is used. Inode numbers are the mount's,
// handed out as folders and archives are first seen: an archive reopened
// with the same file gets the same numbers, and a file replaced under the
// mount is a new archive with new numbers, whose old nodes fail their
// reads.
//
// What the tree serves comes from a Store: a folder on local disk (Dir),
// or a remote folder (package dataset's). Folder listings and lookups ask
// the store each time the kernel asks (it caches them for
// Options.CacheTime): a local folder is read again then, so files added
// or removed appear or vanish then; a remote one answers from a listing
// it keeps for a while.
package folder

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// DefaultMaxOpen is how many archives a folder mount keeps open at most
// when none of their files is open: each open archive takes a file
// descriptor and its central directory in memory.
const DefaultMaxOpen = 128

// DefaultCacheTime is how long the kernel may cache what a folder mount
// says about its folders and archive files.
const DefaultCacheTime = time.Second

// ErrorName is the one file in the folder of an archive that cannot be
// opened: it says why.
const ErrorName = "npzfs-error.txt"

// Options tune Open. The zero value is the default.
type Options struct {
	// Archive is passed to every archive opened; its CacheBytes and
	// IndexBytes are budgets shared by all of them.
	Archive npz.Options
	// MaxOpen bounds the archives kept open when none of their files is
	// (see the package comment); 0 means DefaultMaxOpen.
	MaxOpen int
	// CacheTime is how long the kernel may cache folders and archive
	// entries; 0 means DefaultCacheTime.
	CacheTime time.Duration
	// Sidecars: an archive with an index sidecar beside it
	// (npz.SidecarPath) is opened with it.
	Sidecars bool
}

// Tree is a folder of archives served as one tree. It is safe for
// concurrent use.
type Tree struct {
	store Store
	opts  Options
	root  *dirNode

	next atomic.Uint64 // the next free inode number

	mu      sync.Mutex
	dirInos map[string]uint64 // folder path (relative) -> inode number
	slots   map[string]*slot  // file path (relative) -> the archive it holds now
	open    list.List         // of *slot with an open archive, most recently used first
	said    map[string]bool   // paths whose problem was logged
	started time.Time         // when the tree was made
}

// Open serves the folder dir on local disk (NewDir). It reads nothing
// but dir's own entry.
func Open(dir string, opts *Options) (*Tree, error) {
	d, err := NewDir(dir)
	if err != nil {
		return nil, err
	}
	return New(d, opts)
}

// New serves what store holds. It asks the store for its root's entry
// alone.
func New(store Store, opts *Options) (*Tree, error) {
	root, err := store.Stat(context.Background(), "")
	if err != nil {
		return nil, err
	}
	t := &Tree{store: store, dirInos: map[string]uint64{"": 1}, slots: map[string]*slot{}, started: time.Now()}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.MaxOpen <= 0 {
		t.opts.MaxOpen = DefaultMaxOpen
	}
	if t.opts.CacheTime <= 0 {
		t.opts.CacheTime = DefaultCacheTime
	}
	t.opts.Archive.ShareBudgets()
	t.next.Store(2)
	mtime := root.ModTime
	if mtime.IsZero() {
		mtime = time.Now()
	}
	t.root = &dirNode{t: t, ino: 1, mtime: mtime}
	return t, nil
}

// Store is what the tree serves.
func (t *Tree) Store() Store { return t.store }

// Usage returns the bytes of the archives and .npy files the tree shows,
// and how many nodes they make at least (for statfs): its folders, an
// archive's folder, and a .npy file with its views (npz.NodesPerArray),
// opening no archive. A local folder is walked whole; of another store,
// whose listings may cost requests, the root's listing is counted.
func (t *Tree) Usage() (bytes int64, nodes uint64) {
	nodes = 1
	count := func(e Entry) {
		switch kindOf(e) {
		case shownDir:
			nodes++
		case shownArchive:
			bytes += e.Size
			nodes++
		case shownNPY:
			bytes += e.Size
			nodes += uint64(npz.NodesPerArray())
		}
	}
	if w, ok := t.store.(interface{ walk(func(Entry)) }); ok {
		w.walk(count)
		return bytes, nodes
	}
	ents, _ := t.store.List(context.Background(), "")
	for _, e := range ents {
		if e.Skip == "" {
			count(e)
		}
	}
	return bytes, nodes
}

// Root is the tree's root folder, inode number 1.
func (t *Tree) Root() fs.Entry { return t.root }

// Open reports how many archives are open now.
func (t *Tree) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open.Len()
}

// Close closes every archive.
func (t *Tree) Close() error {
	t.mu.Lock()
	var open []*slot
	for e := t.open.Front(); e != nil; e = e.Next() {
		open = append(open, e.Value.(*slot))
	}
	t.mu.Unlock()
	for _, s := range open {
		s.close(true)
	}
	return nil
}

func (t *Tree) logf(format string, args ...any) {
	if t.opts.Archive.Logf != nil {
		t.opts.Archive.Logf(format, args...)
	}
}

// maxSaid bounds the paths whose problem is logged, so that a folder of
// a million bad entries does not flood the log.
const maxSaid = 10000

// skip logs, once for each path, why rel is not served.
func (t *Tree) skip(rel, why string) { t.note(rel, "not served: %s", why) }

// note logs what is wrong with rel, once for each path.
func (t *Tree) note(rel, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.said[rel] || len(t.said) > maxSaid {
		return
	}
	if t.said == nil {
		t.said = map[string]bool{}
	}
	t.said[rel] = true
	if len(t.said) > maxSaid {
		t.logf("npzfs: more paths are not served or cannot be read; they are not logged")
		return
	}
	if rel == "" {
		rel = "."
	}
	t.logf("npzfs: %s: %s", rel, fmt.Sprintf(format, args...))
}

// alloc hands out n consecutive inode numbers.
func (t *Tree) alloc(n uint64) uint64 { return t.next.Add(n) - n }

func (t *Tree) dirIno(rel string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ino, ok := t.dirInos[rel]
	if !ok {
		ino = t.alloc(1)
		t.dirInos[rel] = ino
	}
	return ino
}

// slotFor is the archive at rel as e describes it: the one seen before
// if the file is the same (size, modification time and version), else a
// new one, the old one then failing its reads.
func (t *Tree) slotFor(rel string, e Entry, bare bool) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[rel]
	if s != nil && s.e.same(e) {
		return s
	}
	if s != nil {
		s.stale.Store(true)
		t.logf("npzfs: %s changed: served anew; reads of the old one fail", rel)
		go s.close(false)
	}
	s = &slot{t: t, rel: rel, name: e.Name, bare: bare, e: e, rootIno: t.alloc(2)}
	t.slots[rel] = s
	return s
}

// trim closes the least recently used archives of which no file is open
// and no request under way while more than MaxOpen are open. Whoever
// opens an archive past MaxOpen, or leaves one idle past it, trims, so
// that closing keeps pace with opening however many open at once.
func (t *Tree) trim() {
	for {
		t.mu.Lock()
		var victim *slot
		if t.open.Len() > t.opts.MaxOpen {
			for e := t.open.Back(); e != nil; e = e.Prev() {
				if s := e.Value.(*slot); s.idle() {
					victim = s
					break
				}
			}
		}
		t.mu.Unlock()
		if victim == nil {
			return
		}
		victim.close(false)
	}
}

// overBudget reports whether more archives are open than MaxOpen.
func (t *Tree) overBudget() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open.Len() > t.opts.MaxOpen
}

// slot is one archive file of the folder, as it was when first seen.
type slot struct {
	t       *Tree
	rel     string // path in the folder
	name    string // base name
	bare    bool   // a .npy file
	e       Entry  // what the store said of it: its identity
	rootIno uint64 // the NAME.npz folder's; rootIno+1 is its error file's

	files atomic.Int64 // its files open (fs.Opener)
	busy  atomic.Int64 // lookups, listings and resolutions in it under way
	stale atomic.Bool  // the file at rel is another one now

	mu   sync.Mutex
	a    *npz.Archive
	err  error  // why it cannot be opened (this file, for good)
	base uint64 // inode number of the archive's node 2; 0 before the first open
	gen  uint64 // counts opens, so nodes know to find themselves again
	elem *list.Element
}

// archive is the slot's archive, opened if it is not, and kept open
// until done is called (which it must be, also after an error).
func (s *slot) archive() (a *npz.Archive, gen uint64, done func(), err error) {
	if s.stale.Load() {
		return nil, 0, nop, errStale
	}
	s.mu.Lock()
	a, gen, over, err := s.openLocked()
	if err == nil {
		s.busy.Add(1)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, 0, nop, err
	}
	if over {
		s.t.trim()
	}
	return a, gen, func() {
		if s.busy.Add(-1) == 0 {
			s.maybeClose()
		}
	}, nil
}

func nop() {}

// openLocked opens the archive if it is not, and reports whether more
// than MaxOpen are open now.
func (s *slot) openLocked() (*npz.Archive, uint64, bool, error) {
	t := s.t
	if s.a != nil {
		t.mu.Lock()
		t.open.MoveToFront(s.elem)
		t.mu.Unlock()
		return s.a, s.gen, false, nil
	}
	if s.err != nil {
		return nil, 0, false, s.err
	}
	a, err := s.openFile()
	if err != nil {
		switch {
		case errors.Is(err, source.ErrChanged) || errors.Is(err, os.ErrNotExist):
			// Replaced or removed since it was seen: its nodes fail.
			s.stale.Store(true)
			return nil, 0, false, errStale
		case errors.Is(err, source.ErrTransient):
			// Not for good: the next use tries again.
			t.logf("npzfs: %s: %v", s.rel, err)
			return nil, 0, false, err
		}
		s.err = err
		t.logf("npzfs: %s: %v", s.rel, err)
		return nil, 0, false, err
	}
	if s.base == 0 {
		s.base = t.alloc(max(a.MaxIno(), 2) - 1)
	}
	s.a = a
	s.gen++
	t.mu.Lock()
	s.elem = t.open.PushFront(s)
	over := t.open.Len() > t.opts.MaxOpen
	t.mu.Unlock()
	return a, s.gen, over, nil
}

func (s *slot) openFile() (*npz.Archive, error) {
	opts := s.t.opts.Archive
	opts.Sidecars = s.t.opts.Sidecars
	a, err := s.t.store.Open(context.Background(), s.rel, s.e, &opts)
	if err != nil {
		return nil, err
	}
	switch {
	case a.Bare() != s.bare && s.bare:
		err = fmt.Errorf("%s is named .npy but holds a zip archive (name it .npz)", s.name)
	case a.Bare() != s.bare:
		err = fmt.Errorf("%s is named .npz but holds a .npy file (name it .npy)", s.name)
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// mtime is the archive file's modification time, or when it was first
// seen if the store does not say.
func (s *slot) mtime() time.Time {
	if s.e.ModTime.IsZero() {
		return s.t.started
	}
	return s.e.ModTime
}

// idle reports an archive that may be closed: none of its files open
// and no request in it under way.
func (s *slot) idle() bool { return s.files.Load() == 0 && s.busy.Load() == 0 }

// close closes the archive if it is idle (or always, with force, when
// the mount ends).
func (s *slot) close(force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.a == nil || (!force && !s.idle()) {
		return
	}
	s.a.Close()
	s.a = nil
	t := s.t
	t.mu.Lock()
	t.open.Remove(s.elem)
	t.mu.Unlock()
	s.elem = nil
}

// opened and closed count the slot's files open (fs.Opener).
func (s *slot) opened() { s.files.Add(1) }

func (s *slot) closed() {
	if s.files.Add(-1) == 0 {
		s.maybeClose()
	}
}

// maybeClose closes a slot gone idle when it is stale, and trims when too
// many archives are open.
func (s *slot) maybeClose() {
	if !s.idle() {
		return
	}
	if s.stale.Load() {
		s.close(false)
	}
	if s.t.overBudget() {
		s.t.trim()
	}
}

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
// its views (NAME/, NAME.ra), each when its name is free.
func (d *dirNode) npyEntries(e Entry) []fs.Entry {
	s := d.t.slotFor(d.path(e.Name), e, true)
	a, gen, done, err := s.archive()
	defer done()
	if err != nil {
		return nil
	}
	var out []fs.Entry
	for _, c := range a.Root().Children() {
		out = append(out, wrap(s, gen, c, ""))
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
	var taken bool
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
			taken = true
		}
	}
	if taken {
		return nil
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
	if err != nil || !n.IsDir() {
		return nil
	}
	return listing{s: w.s, gen: gen, l: n.Listing(), parent: w.path}
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
