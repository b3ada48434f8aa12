//go:build linux

package fs

import (
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Permission bits of everything served: the archive is read-only.
const (
	fileMode = 0o444
	dirMode  = 0o555
)

// rootID is the node ID the kernel uses for the mount's root folder. The
// tree's root must have it as its inode number (Mount checks), so node IDs
// and inode numbers are the same number everywhere.
const rootID = fuse.FUSE_ROOT_ID

// mountState is what every request of one mount shares.
type mountState struct {
	uid, gid    uint32
	archiveSize int64         // bytes, for statfs
	timeout     time.Duration // entry, attribute and negative-lookup cache time
	reqTimeout  time.Duration // each request's deadline (RequestTimeout)

	// listAttrs: every listing reply is READDIRPLUS (Config.ListAttrs).
	listAttrs bool

	// rootToo: the mount has allow_other only to let root in (allow_root,
	// which fusermount3 does not know): every request from a user other
	// than root and the owner is refused with EACCES.
	rootToo bool

	countOnce sync.Once
	count     uint64 // nodes in the tree, for statfs; computed on first use
	root      Entry
	// finder is the root's, when the tree never changes (see Finder):
	// then nodes are found in the tree, not in a table of known ones.
	finder Finder

	// Reads answered, files pushed, and the bytes of both, and the
	// requests answered by kind (Server.Stats).
	reads, pushes, bytes atomic.Int64
	requests             requestCounts
}

// server answers the kernel's requests with go-fuse's raw protocol API.
//
// npzfs keeps no inode objects: a node ID is the entry's inode number
// (unique while mounted: a tree that changes gives new entries new
// numbers, see Cacher). A tree that never changes finds its entries by
// number itself (Finder), and the server keeps nothing per node; for
// other trees the only per-node state is the entry the kernel may still
// name, in the table of known nodes, with the count of lookups it has
// not yet forgotten (about 70 bytes a node, where a go-fuse node-API
// inode costs several hundred).
type server struct {
	fuse.RawFileSystem // ENOSYS for what is not below (locks, poll, ...)

	st    *mountState
	nodes knownNodes
	dirs  dirHandles
	kept  keptListings // how the kernel came to keep folders' listings
	// plusMarks: with ListAttrs, the lookups seen by folders' listings.
	plusMarks lookupMarks
	store     pageStore // set by Init; nil in tests without a kernel
}

var _ fuse.RawFileSystem = (*server)(nil)

func newServer(st *mountState) *server {
	st.finder, _ = st.root.(Finder)
	return &server{RawFileSystem: fuse.NewDefaultRawFileSystem(), st: st}
}

func (s *server) String() string { return FSType }

// known is a node the kernel has been handed by lookup or readdirplus.
type known struct {
	e      Entry
	parent uint64 // node ID of the folder it was found in, for ".."
	refs   uint64 // lookups not yet forgotten
}

// knownNodes maps node IDs to entries, sharded so that parallel lookups
// of different names rarely wait for each other. The root is not in it:
// the kernel never forgets the root.
type knownNodes struct {
	shards [32]nodeShard
}

type nodeShard struct {
	mu sync.Mutex
	m  map[uint64]known
}

func (t *knownNodes) shard(id uint64) *nodeShard {
	return &t.shards[id%uint64(len(t.shards))]
}

// ref records one more lookup of e, found in the folder parent.
func (t *knownNodes) ref(e Entry, parent uint64) {
	id := e.Ino()
	if id == rootID {
		return
	}
	sh := t.shard(id)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uint64]known)
	}
	k := sh.m[id]
	sh.m[id] = known{e: e, parent: parent, refs: k.refs + 1}
	sh.mu.Unlock()
}

// forget drops n lookups of id, and the node with the last of them.
func (t *knownNodes) forget(id, n uint64) {
	sh := t.shard(id)
	sh.mu.Lock()
	if k, ok := sh.m[id]; ok {
		if k.refs <= n {
			delete(sh.m, id)
		} else {
			k.refs -= n
			sh.m[id] = k
		}
	}
	sh.mu.Unlock()
}

func (t *knownNodes) get(id uint64) (known, bool) {
	sh := t.shard(id)
	sh.mu.Lock()
	k, ok := sh.m[id]
	sh.mu.Unlock()
	return k, ok
}

// node returns the entry with node ID id and its parent's node ID. A node
// the kernel names but the table does not know would be a bookkeeping
// error; it answers ESTALE, as for a file handle whose file is gone.
func (s *server) node(id uint64) (Entry, uint64, syscall.Errno) {
	if id == rootID {
		return s.st.root, rootID, 0
	}
	if s.st.finder != nil {
		e, parent := s.st.finder.Find(id)
		if e == nil {
			return nil, 0, syscall.ESTALE
		}
		return e, parent, 0
	}
	k, ok := s.nodes.get(id)
	if !ok {
		return nil, 0, syscall.ESTALE
	}
	return k.e, k.parent, 0
}

// resolve makes the checks of a request that names a node: that its caller
// may use the mount (EACCES) and that the node is known (ESTALE).
func (s *server) resolve(h *fuse.InHeader) (Entry, uint64, syscall.Errno) {
	if s.st.denied(&h.Caller) {
		return nil, 0, syscall.EACCES
	}
	return s.node(h.NodeId)
}

// request is the context the Entry and Content calls of a request see:
// done when the kernel interrupts the request, at its deadline, or once
// it is answered (the caller defers its end).
func (s *server) request(cancel <-chan struct{}) *request {
	return newRequest(cancel, cmp.Or(s.st.reqTimeout, RequestTimeout))
}

// denied reports whether the caller of a request may not use the mount.
func (st *mountState) denied(c *fuse.Caller) bool {
	return st.rootToo && c.Uid != 0 && c.Uid != st.uid
}

func modeType(e Entry) uint32 {
	if e.IsDir() {
		return syscall.S_IFDIR
	}
	return syscall.S_IFREG
}

// fillAttr describes e: exact size, archive times, 0444/0555, the mounting
// user as owner.
func (st *mountState) fillAttr(ctx context.Context, e Entry, a *fuse.Attr) error {
	at, err := e.Attr(ctx)
	if err != nil {
		return err
	}
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
		a.Size = uint64(max(at.Size, 0))
	}
	// 1 for folders too: "unknown number of subfolders", so find(1) does
	// not use the leaf optimisation on a count we do not keep.
	a.Nlink = 1
	a.Uid, a.Gid = st.uid, st.gid
	t := at.ModTime
	if u, ok := e.(Unsettled); ok && u.Unsettled() && e.IsDir() {
		// The kernel keeps a folder's listing while the folder's
		// modification time stays the same: one whose contents may
		// still change says it changed now, so it is listed again.
		t = time.Now()
	}
	if !t.IsZero() {
		a.SetTimes(&t, &t, &t)
	}
	a.Blksize = 4096
	a.Blocks = uint64(max(at.DiskUsage, 0)+511) / 512
	return nil
}

// entryOut describes e as the answer to a lookup of it in folder parent,
// and records the lookup; when e's attributes cannot be had, out is left
// as it was and nothing is recorded.
func (s *server) entryOut(ctx context.Context, e Entry, parent uint64, out *fuse.EntryOut) error {
	if err := s.st.fillAttr(ctx, e, &out.Attr); err != nil {
		out.Attr = fuse.Attr{}
		return err
	}
	out.NodeId = e.Ino()
	out.Generation = 0
	out.SetEntryTimeout(s.st.cacheTime(e))
	out.SetAttrTimeout(s.st.cacheTime(e))
	if s.st.finder == nil {
		s.nodes.ref(e, parent)
	}
	return nil
}

// cacheTime is how long the kernel may cache e (see Cacher).
func (st *mountState) cacheTime(e Entry) time.Duration {
	if u, ok := e.(Unsettled); ok && u.Unsettled() {
		return 0
	}
	if c, ok := e.(Cacher); ok {
		return c.CacheTime()
	}
	return st.timeout
}

// Lookup finds a child by name. A name that is not there is answered with
// node ID 0 and a timeout, which the kernel caches as a negative entry; a
// lookup that fails otherwise (a remote folder that cannot be listed now)
// answers its errno, which the kernel keeps nothing of.
func (s *server) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	s.st.requests.count(h)
	ctx := s.request(cancel)
	defer ctx.end()
	dir, parent, errno := s.resolve(h)
	if errno != 0 {
		return fuse.Status(errno)
	}
	if !dir.IsDir() {
		return fuse.Status(syscall.ENOTDIR)
	}
	var c Entry
	switch name {
	case ".": // sent only to revive a node by its ID (NFS export)
		c = dir
	case "..":
		if c, parent, errno = s.node(parent); errno != 0 {
			return fuse.Status(errno)
		}
	default:
		var err error
		c, err = dir.Lookup(ctx, name)
		parent = h.NodeId
		s.relist(h.NodeId)
		if errors.Is(err, fs.ErrNotExist) {
			*out = fuse.EntryOut{}
			out.SetEntryTimeout(s.st.cacheTime(dir))
			return fuse.OK
		}
		if err != nil {
			return fuse.Status(Errno(err))
		}
	}
	return fuse.Status(Errno(s.entryOut(ctx, c, parent, out)))
}

// Forget: the kernel dropped nlookup references to a node.
func (s *server) Forget(nodeid, nlookup uint64) {
	s.st.requests.forgets.Add(1)
	if s.st.finder == nil {
		s.nodes.forget(nodeid, nlookup)
	}
}

// GetAttr answers stat.
func (s *server) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	s.st.requests.count(&in.InHeader)
	ctx := s.request(cancel)
	defer ctx.end()
	e, _, errno := s.resolve(&in.InHeader)
	if errno != 0 {
		return fuse.Status(errno)
	}
	if err := s.st.fillAttr(ctx, e, &out.Attr); err != nil {
		return fuse.Status(Errno(err))
	}
	out.SetTimeout(s.st.cacheTime(e))
	return fuse.OK
}

// Open opens a file for reading; anything else is EROFS. Files need no
// handle: reads name the node.
//
// In a tree that never changes (Finder) it answers ENOSYS, on purpose:
// the kernel then opens files without asking (FUSE's no-open mode, which
// keeps the page cache, as FOPEN_KEEP_CACHE does) and sends no release,
// which saves two of a small file's five requests (lookup, open, the
// ioctl of isatty, read, release); the ioctl then pushes a small file's
// bytes, which saves the read (see push). A file that cannot be read then
// fails at its first read rather than at open; the mount being read-only,
// the kernel refuses opens for writing itself. A tree that changes
// answers opens, so that a replaced archive's file fails at once, and
// pushes a small file's bytes with its answer.
func (s *server) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	s.st.requests.count(&in.InHeader)
	if s.st.finder != nil {
		return fuse.ENOSYS
	}
	ctx := s.request(cancel)
	defer ctx.end()
	e, errno := s.open(ctx, &in.InHeader, in.Flags)
	if errno != 0 {
		return fuse.Status(errno)
	}
	s.push(ctx, in.NodeId, e)
	// Never direct_io: the page cache is what makes mmap and second
	// reads work. The content never changes, so keep the cache across
	// opens; and there is nothing to flush, so the kernel need not ask
	// at each close.
	out.Fh = 0
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	return fuse.OK
}

func (s *server) open(ctx context.Context, h *fuse.InHeader, flags uint32) (Entry, syscall.Errno) {
	e, _, errno := s.resolve(h)
	if errno != 0 {
		return nil, errno
	}
	if e.IsDir() {
		return nil, syscall.EISDIR
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, syscall.EROFS
	}
	// Told before its content is resolved, so that what it keeps open
	// for it stays open from here; told again if the open fails.
	o, _ := e.(Opener)
	if o != nil {
		o.Opened()
	}
	errno = 0
	f, err := e.File(ctx)
	if err != nil {
		errno = Errno(err)
	} else if _, _, _, err := f.Extent(ctx); err != nil {
		// Where the bytes are is resolved now, so that a broken member
		// fails at open rather than at the first read.
		errno = Errno(err)
	}
	if errno != 0 && o != nil {
		o.Closed()
	}
	return e, errno
}

// Read serves [off, off+size) clamped to the file's end: spliced from the
// archive file for stored members, through ReadAt otherwise.
func (s *server) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	s.st.requests.count(&in.InHeader)
	ctx := s.request(cancel)
	defer ctx.end()
	e, _, errno := s.node(in.NodeId)
	if errno != 0 {
		return nil, fuse.Status(errno)
	}
	if e.IsDir() {
		return nil, fuse.Status(syscall.EISDIR)
	}
	f, err := e.File(ctx)
	if err != nil {
		return nil, fuse.Status(Errno(err))
	}
	if int(in.Size) < len(buf) {
		buf = buf[:in.Size]
	}
	r, errno := readContent(ctx, f, buf, int64(in.Offset))
	if errno == 0 {
		s.st.reads.Add(1)
		s.st.bytes.Add(int64(r.Size()))
	}
	return r, fuse.Status(errno)
}

// fromArchiveFile reports whether a read of node id is answered at once:
// from the archive file (its Extent), or with an error.
func (s *server) fromArchiveFile(id uint64) bool {
	e, _, errno := s.node(id)
	if errno != 0 || e.IsDir() {
		return true
	}
	ctx := s.request(nil)
	defer ctx.end()
	f, err := e.File(ctx)
	if err != nil {
		return true
	}
	_, _, ok, err := location(ctx, f)
	return ok || err != nil
}

// spliceMin is the least a read splices from the archive file: a
// smaller one is copied through dest (one pread, the reply's writev),
// which costs fewer system calls than loading a pipe and moving it on
// (four or five) for less than a copy of these few bytes saves.
const spliceMin = 32 << 10

func readContent(ctx context.Context, f Content, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return nil, syscall.EINVAL
	}
	size := f.Size()
	if off >= size || len(dest) == 0 {
		return dataResult(nil), 0
	}
	want := int64(len(dest))
	if rest := size - off; want > rest {
		want = rest
	}
	fd, base, ok, err := location(ctx, f)
	if err != nil {
		return nil, Errno(err)
	}
	if ok {
		return readExtent(ctx, f, fd, base, off, want, dest, want >= spliceMin)
	}
	got, err := f.ReadAtContext(ctx, dest[:want], off)
	if got == int(want) {
		return dataResult(dest[:got]), 0 // err may be io.EOF at the end
	}
	// A short reply would tell the kernel the file ends there (it would
	// shrink its size for the file): content that ends before its Size
	// is an error, like any other.
	if ctx.Err() != nil {
		return nil, syscall.EINTR
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, Errno(err)
}

// readExtent reads [off, off+want) of f, whose bytes after its head (if
// it is Headed) lie at base of the archive file fd, into a reply:
// spliced where it can be, or copied into dest. want is clamped to f's
// end already: the read is of bytes the archive file must hold, whole,
// or it fails.
func readExtent(ctx context.Context, f Content, fd uintptr, base, off, want int64, dest []byte, spliced bool) (fuse.ReadResult, syscall.Errno) {
	var head []byte
	if h, isHeaded := f.(Headed); isHeaded {
		var err error
		if head, err = h.Head(ctx); err != nil {
			return nil, Errno(err)
		}
	}
	// The part of the head this read covers, and where the rest starts
	// in the archive file.
	var headPart []byte
	if off < int64(len(head)) {
		headPart = head[off:min(int64(len(head)), off+want)]
	}
	at := base + max(off-int64(len(head)), 0)
	var r fuse.ReadResult
	var err error
	if spliced {
		r, err = readExact(fd, at, headPart, int(want), dest)
	} else {
		r, err = readCopy(fd, at, headPart, dest[:want])
	}
	if err != nil {
		// Whatever the archive file's own error (EINVAL, ENXIO from a
		// failing device...), the file cannot be read: EIO, as for
		// every other read that fails. The check lets the archive
		// notice a change that made the read short.
		f.Extent(ctx)
		return nil, syscall.EIO
	}
	// Checked now that the bytes are read: a change of the archive file
	// before or while they were read fails the read rather than serving
	// what may be new bytes or a mix.
	if _, _, _, err := f.Extent(ctx); err != nil {
		r.Done()
		return nil, Errno(err)
	}
	return r, 0
}

// Release: files have no handle to release; an Opener is told.
func (s *server) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	s.st.requests.count(&in.InHeader)
	if e, _, _ := s.node(in.NodeId); e != nil {
		if o, ok := e.(Opener); ok {
			o.Closed()
		}
	}
}

// Flush, Fsync and FsyncDir have nothing to do, and answer ENOSYS on
// purpose, like GetXAttr: the kernel then stops sending them and succeeds
// by itself. Without that every close(2) costs a round trip to the
// daemon, and np.load closes each file twice (numpy dups the descriptor).
func (s *server) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

// StatFs: blocks from the archive's size, files from the node count.
func (s *server) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	s.st.requests.count(h)
	if s.st.denied(&h.Caller) {
		return fuse.Status(syscall.EACCES)
	}
	const bsize = 4096
	out.Bsize = bsize
	out.Frsize = bsize
	out.Blocks = uint64(max(s.st.archiveSize, 0)+bsize-1) / bsize
	out.Bfree, out.Bavail = 0, 0
	ctx := s.request(cancel)
	defer ctx.end()
	out.Files = s.st.nodeCount(ctx)
	out.Ffree = 0
	out.NameLen = 255
	return fuse.OK
}

// nodeCount walks the tree once, the first time statfs asks; a folder
// that cannot be listed counts as one node.
func (st *mountState) nodeCount(ctx context.Context) uint64 {
	st.countOnce.Do(func() {
		var walk func(e Entry) uint64
		walk = func(e Entry) uint64 {
			c := uint64(1)
			if !e.IsDir() {
				return c
			}
			if l, err := e.List(ctx); err == nil {
				for i := range l.Len() {
					if k := l.At(i); k != nil {
						c += walk(k)
					}
				}
			}
			return c
		}
		st.count = walk(st.root)
	})
	return st.count
}

// Access: nothing is writable, files are not executable.
func (s *server) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	s.st.requests.count(&in.InHeader)
	e, _, errno := s.resolve(&in.InHeader)
	if errno != 0 {
		return fuse.Status(errno)
	}
	if in.Mask&2 != 0 { // W_OK
		return fuse.Status(syscall.EROFS)
	}
	if in.Mask&1 != 0 && !e.IsDir() { // X_OK
		return fuse.Status(syscall.EACCES)
	}
	return fuse.OK
}

// GetXAttr: there are no extended attributes. ENOSYS, on purpose: the
// kernel then answers EOPNOTSUPP itself and stops asking, instead of
// sending a request or two (security.selinux, posix ACLs) for every file
// ls -l lists. (Errno never produces ENOSYS; this is not an error.)
func (s *server) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	s.st.requests.count(h)
	return 0, fuse.ENOSYS
}

// ListXAttr: as GetXAttr.
func (s *server) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	s.st.requests.count(h)
	return 0, fuse.ENOSYS
}

// refuse counts a request and answers it with st.
func (s *server) refuse(h *fuse.InHeader, st fuse.Status) fuse.Status {
	s.st.requests.count(h)
	return st
}

// Every change is refused.

var erofs = fuse.Status(syscall.EROFS)

func (s *server) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return s.refuse(h, erofs)
}

func (s *server) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return s.refuse(h, erofs)
}

func (s *server) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return s.refuse(h, erofs)
}

func (s *server) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	return s.refuse(h, erofs)
}

func (s *server) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}

func (s *server) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return 0, s.refuse(&in.InHeader, erofs)
}

func (s *server) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	return 0, s.refuse(&in.InHeader, erofs)
}

func (s *server) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	return 0, s.refuse(&in.InHeader, erofs)
}

func (s *server) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	return s.refuse(&in.InHeader, erofs)
}
