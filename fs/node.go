package fs

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Permission bits of everything served: the archive is read-only.
const (
	fileMode = 0o444
	dirMode  = 0o555
)

// mountState is what every node of one mount shares.
type mountState struct {
	uid, gid    uint32
	archiveSize int64 // bytes, for statfs

	// rootToo: the mount has allow_other only to let root in (allow_root,
	// which fusermount3 does not know): every request from a user other
	// than root and the owner is refused with EACCES.
	rootToo bool

	countOnce sync.Once
	count     uint64 // nodes in the tree, for statfs; computed on first use
	root      Entry
}

// node is the inode of one Entry. go-fuse keeps one node per inode number
// it has handed to the kernel; nodes are created on lookup and readdir, so
// mounting costs nothing per array.
type node struct {
	gofs.Inode
	e  Entry
	st *mountState
}

// Interfaces the kernel reaches. The writing ones all answer EROFS: the
// mount is "ro", so the kernel refuses most of them itself, but the daemon
// says the same if one ever gets through.
var (
	_ = (gofs.NodeLookuper)((*node)(nil))
	_ = (gofs.NodeGetattrer)((*node)(nil))
	_ = (gofs.NodeOpendirHandler)((*node)(nil))
	_ = (gofs.NodeOpener)((*node)(nil))
	_ = (gofs.NodeReader)((*node)(nil))
	_ = (gofs.NodeStatfser)((*node)(nil))
	_ = (gofs.NodeAccesser)((*node)(nil))
	_ = (gofs.NodeGetxattrer)((*node)(nil))
	_ = (gofs.NodeListxattrer)((*node)(nil))
	_ = (gofs.NodeFsyncer)((*node)(nil))
	_ = (gofs.NodeFlusher)((*node)(nil))

	_ = (gofs.NodeSetattrer)((*node)(nil))
	_ = (gofs.NodeWriter)((*node)(nil))
	_ = (gofs.NodeCreater)((*node)(nil))
	_ = (gofs.NodeMkdirer)((*node)(nil))
	_ = (gofs.NodeMknoder)((*node)(nil))
	_ = (gofs.NodeUnlinker)((*node)(nil))
	_ = (gofs.NodeRmdirer)((*node)(nil))
	_ = (gofs.NodeRenamer)((*node)(nil))
	_ = (gofs.NodeSymlinker)((*node)(nil))
	_ = (gofs.NodeLinker)((*node)(nil))
	_ = (gofs.NodeSetxattrer)((*node)(nil))
	_ = (gofs.NodeRemovexattrer)((*node)(nil))
	_ = (gofs.NodeAllocater)((*node)(nil))
	_ = (gofs.NodeCopyFileRanger)((*node)(nil))
)

// denied reports whether the caller of a request may not use the mount.
func (st *mountState) denied(ctx context.Context) bool {
	if !st.rootToo {
		return false
	}
	c, ok := ctx.(*fuse.Context)
	if !ok {
		return false
	}
	return c.Uid != 0 && c.Uid != st.uid
}

func stableAttr(e Entry) gofs.StableAttr {
	mode := uint32(syscall.S_IFREG)
	if e.IsDir() {
		mode = syscall.S_IFDIR
	}
	return gofs.StableAttr{Mode: mode, Ino: e.Ino()}
}

// fillAttr describes e: exact size, archive times, 0444/0555, the mounting
// user as owner.
func (st *mountState) fillAttr(e Entry, a *fuse.Attr) {
	a.Ino = e.Ino()
	fm, dm := uint32(fileMode), uint32(dirMode)
	if st.rootToo {
		// Owner only; root passes anyway. With default_permissions the
		// kernel enforces this even on what it has cached.
		fm, dm = fm&0o700, dm&0o700
	}
	if e.IsDir() {
		a.Mode = syscall.S_IFDIR | dm
		a.Size = 0
	} else {
		a.Mode = syscall.S_IFREG | fm
		if f := e.File(); f != nil {
			a.Size = uint64(max(f.Size(), 0))
		}
	}
	// 1 for folders too: "unknown number of subfolders", so find(1) does
	// not use the leaf optimisation on a count we do not keep.
	a.Nlink = 1
	a.Uid, a.Gid = st.uid, st.gid
	t := e.ModTime()
	if !t.IsZero() {
		a.SetTimes(&t, &t, &t)
	}
	a.Blksize = 4096
	a.Blocks = (a.Size + 511) / 512
}

func (n *node) child(ctx context.Context, e Entry, out *fuse.EntryOut) *gofs.Inode {
	n.st.fillAttr(e, &out.Attr)
	return n.NewInode(ctx, &node{e: e, st: n.st}, stableAttr(e))
}

// Lookup finds a child by name.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.st.denied(ctx) {
		return nil, syscall.EACCES
	}
	if !n.e.IsDir() {
		return nil, syscall.ENOTDIR
	}
	c := n.e.Lookup(name)
	if c == nil {
		return nil, syscall.ENOENT
	}
	return n.child(ctx, c, out), 0
}

// Getattr answers stat.
func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.st.denied(ctx) {
		return syscall.EACCES
	}
	n.st.fillAttr(n.e, &out.Attr)
	return 0
}

// OpendirHandle lists the folder once per open; the handle serves readdir
// from that snapshot and can seek in it.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if n.st.denied(ctx) {
		return nil, 0, syscall.EACCES
	}
	if !n.e.IsDir() {
		return nil, 0, syscall.ENOTDIR
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EISDIR
	}
	kids := n.e.Children()
	parentIno := n.e.Ino()
	if _, p := n.Parent(); p != nil {
		parentIno = p.StableAttr().Ino
	}
	d := &dirHandle{n: n, kids: kids, dots: [2]uint64{n.e.Ino(), parentIno}}
	// The listing never changes while mounted: let the kernel cache it.
	return d, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR, 0
}

// Open opens a file for reading; anything else is EROFS.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if n.st.denied(ctx) {
		return nil, 0, syscall.EACCES
	}
	if n.e.IsDir() {
		return nil, 0, syscall.EISDIR
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EROFS
	}
	f := n.e.File()
	if f == nil {
		return nil, 0, syscall.EIO
	}
	// Resolve where the bytes are now, so a broken member fails at open
	// rather than at the first read.
	if _, _, _, err := f.Extent(); err != nil {
		return nil, 0, Errno(err)
	}
	// Never direct_io: the page cache is what makes mmap and second
	// reads work. The content never changes, so keep the cache across
	// opens.
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read serves [off, off+len(dest)) clamped to the file's end: spliced
// from the archive file for stored members, through ReadAt otherwise.
func (n *node) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f := n.e.File()
	if f == nil {
		return nil, syscall.EISDIR
	}
	return readContent(ctx, f, dest, off)
}

func readContent(ctx context.Context, f Content, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return nil, syscall.EINVAL
	}
	size := f.Size()
	if off >= size || len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	want := int64(len(dest))
	if rest := size - off; want > rest {
		want = rest
	}
	fd, base, ok, err := f.Extent()
	if err != nil {
		return nil, Errno(err)
	}
	if ok {
		// ReadResultFd only stops at the end of the whole archive file:
		// want is already clamped to this file's end.
		return fuse.ReadResultFd(fd, base+off, int(want)), 0
	}
	got, err := f.ReadAt(dest[:want], off)
	if err != nil && !(errors.Is(err, io.EOF) && got == int(want)) {
		if got > 0 && errors.Is(err, io.EOF) {
			// The content ended early; hand back what exists.
			return fuse.ReadResultData(dest[:got]), 0
		}
		if ctx.Err() != nil {
			return nil, syscall.EINTR
		}
		return nil, Errno(err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

// Statfs: blocks from the archive's size, files from the node count.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if n.st.denied(ctx) {
		return syscall.EACCES
	}
	const bsize = 4096
	out.Bsize = bsize
	out.Frsize = bsize
	out.Blocks = uint64(max(n.st.archiveSize, 0)+bsize-1) / bsize
	out.Bfree, out.Bavail = 0, 0
	out.Files = n.st.nodeCount()
	out.Ffree = 0
	out.NameLen = 255
	return 0
}

// nodeCount walks the tree once, the first time statfs asks.
func (st *mountState) nodeCount() uint64 {
	st.countOnce.Do(func() {
		var walk func(e Entry) uint64
		walk = func(e Entry) uint64 {
			c := uint64(1)
			if e.IsDir() {
				for _, k := range e.Children() {
					c += walk(k)
				}
			}
			return c
		}
		st.count = walk(st.root)
	})
	return st.count
}

// Access: nothing is writable, files are not executable.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno {
	if n.st.denied(ctx) {
		return syscall.EACCES
	}
	if mask&2 != 0 { // W_OK
		return syscall.EROFS
	}
	if mask&1 != 0 && !n.e.IsDir() { // X_OK
		return syscall.EACCES
	}
	return 0
}

// Getxattr: there are no extended attributes. ENOSYS, on purpose: the
// kernel then answers EOPNOTSUPP itself and stops asking, instead of
// sending a request or two (security.selinux, posix ACLs) for every file
// ls -l lists. (Errno never produces ENOSYS; this is not an error.)
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Listxattr: as Getxattr.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Fsync has nothing to flush.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno { return 0 }

// Flush has nothing to flush.
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno { return 0 }

// Every change is refused.

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EROFS
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.EROFS }

func (n *node) Allocate(ctx context.Context, f gofs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.EROFS
}

func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EROFS
}

// dirHandle serves readdir from the listing taken at opendir. Offsets are
// positions in that listing (1 past "." and "..", then the children), so
// seekdir/telldir work.
type dirHandle struct {
	n    *node
	kids []Entry
	dots [2]uint64 // inode numbers of "." and ".."
	pos  int       // next index: 0 ".", 1 "..", 2+i kids[i]
}

var (
	_ = (gofs.FileReaddirenter)((*dirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*dirHandle)(nil))
	_ = (gofs.FileLookuper)((*dirHandle)(nil))
	_ = (gofs.FileReleasedirer)((*dirHandle)(nil))
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	i := d.pos
	if i >= len(d.kids)+2 {
		return nil, 0
	}
	d.pos++
	de := &fuse.DirEntry{Off: uint64(i + 1)}
	switch i {
	case 0:
		de.Name, de.Ino, de.Mode = ".", d.dots[0], syscall.S_IFDIR
	case 1:
		de.Name, de.Ino, de.Mode = "..", d.dots[1], syscall.S_IFDIR
	default:
		e := d.kids[i-2]
		de.Name, de.Ino, de.Mode = e.Name(), e.Ino(), stableAttr(e).Mode
	}
	return de, 0
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off > uint64(len(d.kids)+2) {
		return syscall.EINVAL
	}
	d.pos = int(off)
	return 0
}

// Lookup serves readdirplus from the entry just listed, without a second
// search by name.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if i := d.pos - 1 - 2; i >= 0 && i < len(d.kids) && d.kids[i].Name() == name {
		return d.n.child(ctx, d.kids[i], out), 0
	}
	return d.n.Lookup(ctx, name, out)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) { d.kids = nil }
