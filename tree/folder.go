//go:build linux

package tree

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
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

// Options tune a folder's tree. The zero value is the default.
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

// Folder is a folder of archives served as one tree: every .npz file
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
// What the tree serves comes from a folder.Store: a folder on local disk
// (folder.Dir), or a remote folder. Folder listings and lookups ask the
// store each time the kernel asks (it caches them for
// Options.CacheTime): a local folder is read again then, so files added
// or removed appear or vanish then; a remote one answers from a listing
// it keeps for a while. It is safe for concurrent use.
type Folder struct {
	store folder.Store
	opts  Options
	root  *dirNode

	next atomic.Uint64 // the next free inode number

	mu      sync.Mutex
	dirInos map[string]uint64    // folder path (relative) -> inode number
	slots   map[string]*slot     // file path (relative) -> the archive it holds now
	open    list.List            // of *slot with an open archive, most recently used first
	said    map[string]bool      // paths whose problem was logged
	failing map[string]time.Time // paths whose failure that may pass was logged, when
	started time.Time            // when the tree was made
	// closedVerify is what the archives closed so far verified.
	closedVerify npz.VerifyStats
	now          func() time.Time // the clock retries are spaced by (tests set it)
}

// OpenFolder serves the folder dir on local disk (folder.NewDir). It
// reads nothing but dir's own entry.
func OpenFolder(ctx context.Context, dir string, opts *Options) (*Folder, error) {
	d, err := folder.NewDir(dir)
	if err != nil {
		return nil, err
	}
	return NewFolder(ctx, d, opts)
}

// NewFolder serves what store holds. It asks the store for its root's
// entry alone.
func NewFolder(ctx context.Context, store folder.Store, opts *Options) (*Folder, error) {
	root, err := store.Stat(ctx, "")
	if err != nil {
		return nil, err
	}
	t := &Folder{store: store, dirInos: map[string]uint64{"": 1}, slots: map[string]*slot{}, started: time.Now(), now: time.Now}
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
func (t *Folder) Store() folder.Store { return t.store }

// Usage returns the bytes of the archives and .npy files the tree shows,
// and how many nodes they make at least (for statfs): its folders, an
// archive's folder, and a .npy file with its views (npz.NodesPerArray),
// opening no archive. A local folder is walked whole; of another store,
// whose listings may cost requests, the root's listing is counted.
func (t *Folder) Usage(ctx context.Context) (bytes int64, nodes uint64) {
	nodes = 1
	count := func(e folder.Entry) {
		switch e.Shown() {
		case folder.ShownFolder:
			nodes++
		case folder.ShownArchive:
			bytes += e.Size
			nodes++
		case folder.ShownNPY:
			bytes += e.Size
			nodes += uint64(npz.NodesPerArray())
		}
	}
	if w, ok := t.store.(interface{ Walk(func(folder.Entry)) }); ok {
		w.Walk(count)
		return bytes, nodes
	}
	ents, _ := t.store.List(ctx, "")
	for _, e := range ents {
		if e.Skip == "" {
			count(e)
		}
	}
	return bytes, nodes
}

// Root is the tree's root folder, inode number 1.
func (t *Folder) Root() fs.Entry { return t.root }

// Open reports how many archives are open now, and how many of them
// are idle (no file of theirs open, no request in them under way: see
// trim, which keeps these within MaxOpen but for the moments between a
// file's release and its trim).
func (t *Folder) Open() (open, idle int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for e := t.open.Front(); e != nil; e = e.Next() {
		if e.Value.(*slot).idle() {
			idle++
		}
	}
	return t.open.Len(), idle
}

// VerifyStats is what the folder's archives verified, open and closed
// alike, and their failing members, each named with its archive's path.
func (t *Folder) VerifyStats() npz.VerifyStats {
	t.mu.Lock()
	vs := t.closedVerify
	vs.Failing = slices.Clone(vs.Failing)
	var open []*slot
	for e := t.open.Front(); e != nil; e = e.Next() {
		open = append(open, e.Value.(*slot))
	}
	t.mu.Unlock()
	for _, s := range open {
		s.mu.Lock()
		if s.a != nil {
			vs.Add(s.verifyStats())
		}
		s.mu.Unlock()
	}
	return vs
}

// Close closes every archive.
func (t *Folder) Close() error {
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

func (t *Folder) logf(format string, args ...any) {
	if t.opts.Archive.Logf != nil {
		t.opts.Archive.Logf(format, args...)
	}
}

// maxSaid bounds the paths whose problem is logged, so that a folder of
// a million bad entries does not flood the log.
const maxSaid = 10000

// skip logs, once for each path, why rel is not served.
func (t *Folder) skip(rel, why string) { t.note(rel, "not served: %s", why) }

// note logs what is wrong with rel, once for each path.
func (t *Folder) note(rel, format string, args ...any) {
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

// failedEvery is how often a failure that may pass (a listing or a
// look-up that failed) is logged for one path while it goes on.
const failedEvery = 10 * time.Second

// failed logs a failure to list or look into rel that may pass, at most
// once each failedEvery for each path: the failure is answered EIO,
// which the log is to explain, however many requests meet it.
func (t *Folder) failed(rel string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the caller gave up: nothing is wrong with rel
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if at, ok := t.failing[rel]; ok && now.Sub(at) < failedEvery {
		return
	}
	if t.failing == nil || len(t.failing) > maxSaid {
		t.failing = map[string]time.Time{}
	}
	t.failing[rel] = now
	if rel == "" {
		rel = "."
	}
	t.logf("npzfs: %s: %v (answered EIO; asked again at the next look)", rel, err)
}

// alloc hands out n consecutive inode numbers.
func (t *Folder) alloc(n uint64) uint64 { return t.next.Add(n) - n }

func (t *Folder) dirIno(rel string) uint64 {
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
// if the file is the same (size, modification time and version) and was
// not found to be another since (stale), else a new one, the old one
// then failing its reads.
func (t *Folder) slotFor(rel string, e folder.Entry, bare bool) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[rel]
	if s != nil && s.e.Same(e) && !s.stale.Load() {
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

// slotNow is the slot of the file at s's path as the store says it is
// now: s itself, or a new one for a file replaced since; a path that
// no longer holds a file shown as s is, is not there.
func (t *Folder) slotNow(ctx context.Context, s *slot) (*slot, error) {
	e, err := t.store.Stat(ctx, s.rel)
	if err != nil {
		return nil, err
	}
	want := folder.ShownArchive
	if s.bare {
		want = folder.ShownNPY
	}
	if e.Shown() != want {
		return nil, fmt.Errorf("%s: %w", s.rel, iofs.ErrNotExist)
	}
	return t.slotFor(s.rel, e, s.bare), nil
}

// trim closes the least recently used archives of which no file is open
// and no request under way while more than MaxOpen are open. Whoever
// opens an archive past MaxOpen, or leaves one idle past it, trims, so
// that closing keeps pace with opening however many open at once.
func (t *Folder) trim() {
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
