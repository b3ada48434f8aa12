package fs

import (
	"sync"
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
	out.Fh = s.dirs.add(newDirHandle(e, parent))
	if s.st.cacheTime(e) >= s.st.timeout {
		out.OpenFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR
	}
	return fuse.OK
}

// listing is what readdir of the request lists: the handle's snapshot,
// or without a handle (no-opendir), the folder's listing now.
func (s *server) listing(in *fuse.ReadIn) (*dirHandle, syscall.Errno) {
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
	return newDirHandle(e, parent), 0
}

// newDirHandle takes the listing of folder e, whose parent is parent.
func newDirHandle(e Entry, parent uint64) *dirHandle {
	kids := e.List()
	if kids == nil {
		kids = Entries(nil)
	}
	return &dirHandle{kids: kids, dots: [2]uint64{e.Ino(), parent}}
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
	d, errno := s.listing(in)
	if errno != 0 {
		return fuse.Status(errno)
	}
	for i := d.first(in.Offset); i < d.kids.Len()+2; i++ {
		if de, _, ok := d.entry(i); ok && !out.AddDirEntry(de) {
			break
		}
	}
	return fuse.OK
}

// direntPlusMin is the least a READDIRPLUS entry takes in the reply: its
// attributes, the dirent and a name of up to 8 bytes.
const direntPlusMin = 128 + 24 + 8

// ReadDirPlus is ReadDir with each child's attributes, which the kernel
// takes as a lookup of it ("." and ".." carry none and are not linked).
// The attributes of as many entries as the reply can hold are prepared
// at once first (see Preparer).
func (s *server) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	d, errno := s.listing(in)
	if errno != 0 {
		return fuse.Status(errno)
	}
	p, _ := d.kids.(Preparer)
	batch := int(in.Size)/direntPlusMin + 1 // at most the entries the reply holds
	prepared := 0                           // positions of the listing before it are prepared
	for i := d.first(in.Offset); i < d.kids.Len()+2; i++ {
		if p != nil && i >= 2 && i-2 >= prepared {
			p.Prepare(i-2, i-2+batch)
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
		if e != nil {
			s.entryOut(e, d.dots[0], eo)
		}
	}
	return fuse.OK
}

// ReleaseDir drops the listing.
func (s *server) ReleaseDir(in *fuse.ReleaseIn) { s.dirs.remove(in.Fh) }
