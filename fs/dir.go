//go:build linux

package fs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirHandle is the listing of one opened folder of a tree that changes,
// taken at opendir. Offsets are positions in it (1 past ".", 2 past "..",
// then 3+i past position i), so readdir needs no cursor and
// seekdir/telldir just work.
type dirHandle struct {
	kids Listing
	dots [2]uint64 // inode numbers of "." and ".."
}

// dirHandles holds the open folder handles by handle number.
type dirHandles struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*dirHandle
}

func (t *dirHandles) add(d *dirHandle) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[uint64]*dirHandle)
	}
	t.next++
	t.m[t.next] = d
	return t.next
}

func (t *dirHandles) get(fh uint64) *dirHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[fh]
}

func (t *dirHandles) remove(fh uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, fh)
}

// OpenDir of a tree that never changes (Finder) answers ENOSYS, on
// purpose: the kernel then opens folders by itself without asking (and
// sends no releasedir), keeps their listings in its cache, and reads
// them by node, so opening a folder costs no round trip and nothing
// whatever its size. In a tree that changes, the folder is listed once
// per open, and the handle serves readdir from that snapshot; the kernel
// keeps the listing only of folders that do not change (not Cachers).
func (s *server) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	s.st.requests.count(&in.InHeader)
	e, parent, errno := s.resolve(&in.InHeader)
	if errno != 0 {
		return fuse.Status(errno)
	}
	if !e.IsDir() {
		return fuse.Status(syscall.ENOTDIR)
	}
	if in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return fuse.Status(syscall.EISDIR)
	}
	if s.st.finder != nil {
		return fuse.ENOSYS
	}
	ctx := s.request(cancel)
	defer ctx.end()
	d, err := newDirHandle(ctx, e, parent)
	if err != nil {
		return fuse.Status(Errno(err))
	}
	out.Fh = s.dirs.add(d)
	if s.st.cacheTime(e) >= s.st.timeout {
		out.OpenFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR
	}
	return fuse.OK
}

// listing is what readdir of the request lists: the handle's snapshot,
// or without a handle (no-opendir), the folder's listing now.
func (s *server) listing(ctx context.Context, in *fuse.ReadIn) (*dirHandle, syscall.Errno) {
	if in.Fh != 0 {
		if d := s.dirs.get(in.Fh); d != nil {
			return d, 0
		}
		return nil, syscall.EBADF
	}
	e, parent, errno := s.resolve(&in.InHeader)
	if errno != 0 {
		return nil, errno
	}
	if !e.IsDir() {
		return nil, syscall.ENOTDIR
	}
	d, err := newDirHandle(ctx, e, parent)
	return d, Errno(err)
}

// newDirHandle takes the listing of folder e, whose parent is parent.
func newDirHandle(ctx context.Context, e Entry, parent uint64) (*dirHandle, error) {
	kids, err := e.List(ctx)
	if err != nil {
		return nil, err
	}
	return &dirHandle{kids: kids, dots: [2]uint64{e.Ino(), parent}}, nil
}

// entry is the directory entry at position i of the listing (0 is ".",
// 1 "..", then the listing's positions), or ok false where the listing
// has none.
func (d *dirHandle) entry(i int) (de fuse.DirEntry, e Entry, ok bool) {
	de = fuse.DirEntry{Off: uint64(i + 1)}
	switch i {
	case 0:
		de.Name, de.Ino, de.Mode = ".", d.dots[0], syscall.S_IFDIR
	case 1:
		de.Name, de.Ino, de.Mode = "..", d.dots[1], syscall.S_IFDIR
	default:
		if e = d.kids.At(i - 2); e == nil {
			return de, nil, false
		}
		de.Name, de.Ino, de.Mode = e.Name(), e.Ino(), modeType(e)
	}
	return de, e, true
}

// first is the position readdir from offset off starts at.
func (d *dirHandle) first(off uint64) int {
	return int(min(off, uint64(d.kids.Len()+2)))
}

// ReadDir fills out with the entries past in.Offset.
func (s *server) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	s.st.requests.count(&in.InHeader)
	ctx := s.request(cancel)
	defer ctx.end()
	d, errno := s.listing(ctx, in)
	if errno != 0 {
		return fuse.Status(errno)
	}
	n := 0 // entries in the reply
	for i := d.first(in.Offset); i < d.kids.Len()+2; i++ {
		de, _, ok := d.entry(i)
		if !ok {
			continue
		}
		if !out.AddDirEntry(de) {
			break
		}
		n++
	}
	s.listed(in, true, n)
	return fuse.OK
}

// direntPlusMin is the least a READDIRPLUS entry takes in the reply: its
// attributes, the dirent and a name of up to 8 bytes.
const direntPlusMin = 128 + 24 + 8

// ReadDirPlus is ReadDir with each child's attributes, which the kernel
// takes as a lookup of it ("." and ".." carry none and are not linked).
// The attributes of as many entries as the reply can hold are prepared
// at once first (see Preparer). An entry whose attributes cannot be had
// now is listed without them (node ID 0): the kernel then looks it up
// when it is used, and that lookup says what is wrong.
//
// With ListAttrs the kernel asks for attributes with every reply, and
// wants them where it would have asked without it: in a listing's
// first reply, and in a reply that follows lookups in the folder (ls -l
// stats each name as it lists). Any other reply, of a plain listing,
// carries the attributes of the files that are known without a read
// (Preparer.Prepared; a listing that is no Preparer gives every entry's):
// `ls` reads no headers, and the kernel makes inodes for what may be
// opened next, not for folders.
func (s *server) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	s.st.requests.count(&in.InHeader)
	ctx := s.request(cancel)
	defer ctx.end()
	d, errno := s.listing(ctx, in)
	if errno != 0 {
		return fuse.Status(errno)
	}
	p, _ := d.kids.(Preparer)
	full := p == nil || s.wantsAll(in)
	batch := int(in.Size)/direntPlusMin + 1 // at most the entries the reply holds
	prepared := 0                           // positions of the listing before it are prepared
	n := 0                                  // entries in the reply
	for i := d.first(in.Offset); i < d.kids.Len()+2; i++ {
		if full && p != nil && i >= 2 && i-2 >= prepared {
			p.Prepare(ctx, i-2, i-2+batch)
			prepared = i - 2 + batch
		}
		de, e, ok := d.entry(i)
		if !ok {
			continue
		}
		eo := out.AddDirLookupEntry(de)
		if eo == nil {
			break
		}
		n++
		if e != nil && (full || !e.IsDir() && p.Prepared(i-2)) {
			s.entryOut(ctx, e, d.dots[0], eo) // a failure leaves eo bare
		}
	}
	s.listed(in, !full, n) // a reply without every attribute is a plain one to the kernel's copy
	return fuse.OK
}

// wantsAll reports whether a READDIRPLUS reply is one the kernel asked
// attributes with because they are wanted: always, unless ListAttrs has
// it ask with every reply (see ReadDirPlus). A folder's reply then
// wants them at the listing's start, and from the first reply after
// lookups came between two of its replies (a walk that stats each name
// it lists; lookups are counted over the whole mount) to the listing's
// end.
func (s *server) wantsAll(in *fuse.ReadIn) bool {
	if !s.st.listAttrs {
		return true
	}
	return s.plusMarks.mark(in.NodeId, in.Offset == 0, s.st.requests.lookups())
}

// lookupMarks follows, for each folder being listed under ListAttrs,
// the mount's lookup count at its last reply, and whether its replies
// want every attribute.
type lookupMarks struct {
	mu sync.Mutex
	m  map[uint64]lookupMark
}

type lookupMark struct {
	lookups int64
	all     bool
}

// mark notes folder id's reply at the mount's lookup count now, and
// reports whether the reply wants every attribute (see wantsAll). A
// folder with no mark, whose listing did not start with a reply of its
// own, is taken to want them.
func (k *lookupMarks) mark(id uint64, starts bool, now int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	last, ok := k.m[id]
	if k.m == nil {
		k.m = make(map[uint64]lookupMark)
	}
	all := !starts && (!ok || last.all || now != last.lookups)
	k.m[id] = lookupMark{lookups: now, all: all}
	return starts || all
}

// drop forgets folder id's mark: its listing has ended.
func (k *lookupMarks) drop(id uint64) {
	k.mu.Lock()
	delete(k.m, id)
	k.mu.Unlock()
}

// listed notes a readdir reply by node (no-opendir: a tree that never
// changes) of n entries, plain or with attributes: a listing's first, a
// later plain one with entries, or an empty one, which the kernel takes
// as the listing's end (see keptListings).
func (s *server) listed(in *fuse.ReadIn, plain bool, n int) {
	if n == 0 && s.st.listAttrs {
		s.plusMarks.drop(in.NodeId)
	}
	switch {
	case in.Fh != 0:
	case in.Offset == 0:
		s.kept.note(in.NodeId, listingStarts)
	case n == 0:
		s.kept.note(in.NodeId, listingEnds)
	case plain:
		s.kept.note(in.NodeId, plainReply)
	}
}

// ReleaseDir drops the listing.
func (s *server) ReleaseDir(in *fuse.ReleaseIn) {
	s.st.requests.count(&in.InHeader)
	s.dirs.remove(in.Fh)
}

// keptListings follows how the kernel came to keep the listings of the
// folders of a tree that never changes, to find those it keeps without
// attributes. In no-opendir mode the kernel keeps every listing it reads
// to the end (see OpenDir) and serves later listings of the folder from
// it. It asks for attributes (READDIRPLUS) with a listing's first reply,
// and with a later one only where a lookup in the folder came between:
// a walk that stats names as it lists them (`ls -l`) gets them, a plain
// `ls` of a large folder does not. After such a listing, `ls -l` or any
// walk that stats each name finds it kept, and every name past the first
// reply costs a lookup of its own. So the first lookup in a folder that
// was listed to its end with plain replies and no lookup between drops
// the kernel's copy (see relist): the listing that goes on, or the next
// one, is read again, with attributes. A listing that had lookups
// between its replies is kept: its names were looked up as it went.
// Only folders listed in more than one reply are followed, until their
// listing is known kept with attributes or dropped.
type keptListings struct {
	n  atomic.Int32 // len(m), read without the lock
	mu sync.Mutex
	m  map[uint64]listingState
}

type listingState uint8

const (
	listingPlain listingState = iota + 1 // plain replies past the first, no lookup yet
	listingMixed                         // lookups in the folder between its replies
	listingBare                          // read to its end, plain, without lookups
)

// listingEvent is what the server sees of a folder's listing.
type listingEvent uint8

const (
	listingStarts listingEvent = iota // its first reply
	plainReply                        // a later plain reply with entries
	listingEnds                       // an empty reply: the kernel has read it all
	lookupInIt                        // a lookup in the folder
)

// note moves folder id on by ev, and reports whether the kernel keeps
// its listing without attributes, which the caller then drops.
func (k *keptListings) note(id uint64, ev listingEvent) (drop bool) {
	if ev != plainReply && k.n.Load() == 0 {
		return false // only a plain reply starts following a folder
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.m[id]
	next := old
	switch {
	case ev == listingStarts:
		next = 0
	case ev == plainReply && old == 0:
		next = listingPlain
	case ev == listingEnds && old == listingPlain:
		next = listingBare
	case ev == listingEnds && old == listingMixed:
		next = 0
	case ev == lookupInIt && old == listingPlain:
		next = listingMixed
	case ev == lookupInIt && old == listingBare:
		next, drop = 0, true
	}
	switch {
	case next == old:
	case next == 0:
		delete(k.m, id)
		k.n.Add(-1)
	default:
		if old == 0 {
			if k.m == nil {
				k.m = make(map[uint64]listingState)
			}
			k.n.Add(1)
		}
		k.m[id] = next
	}
	return drop
}

// relist notes a lookup in folder id, and drops the kernel's kept listing
// of it when it has no attributes (see keptListings). The tree never
// changes: the listing asked for again is the same, and a reader in the
// middle of the kept one goes on from its offset.
func (s *server) relist(id uint64) {
	if s.kept.note(id, lookupInIt) && s.store != nil {
		s.store.InodeNotify(id, 0, 0)
	}
}
