//go:build linux

package fs

import (
	"context"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// PushMax is the largest file whose bytes the server pushes into the
// kernel's page cache unasked (see server.push): 128 KiB, the kernel's
// default readahead window, so that a push is what the file's first read
// would have fetched anyway.
const PushMax = 128 << 10

// pageStore is what the server needs of go-fuse's server to fill the
// kernel's page cache (FUSE_NOTIFY_STORE) and to drop a node's pages,
// for a folder its kept listing (FUSE_NOTIFY_INVAL_INODE): *fuse.Server
// has both.
type pageStore interface {
	InodeNotifyStoreCache(node uint64, offset int64, data []byte) fuse.Status
	InodeNotify(node uint64, off, length int64) fuse.Status
}

// Init keeps go-fuse's server, through which pushes are sent. It is
// called once the kernel's INIT is answered, before any other request.
func (s *server) Init(srv *fuse.Server) { s.store = srv }

var pushBufs = sync.Pool{New: func() any { return new([PushMax]byte) }}

// push stores the whole of e's file in the kernel's page cache, when the
// file is small (at most PushMax) and its bytes lie in a local file
// (Extent): a pread of what is most likely in the archive's page cache
// already. It is called at the first request that shows a file open (the
// open, where the tree answers opens; else an ioctl), before the answer,
// so that the read which follows is served by the kernel without a
// request: a small file costs one round trip fewer. Pushing is
// best-effort: whatever fails, the kernel asks for the bytes as it would
// have.
//
// The bytes pushed are exactly those Read serves, [0, Size()), which the
// kernel marks valid only because they reach the end of the file; a
// store past the size the kernel knows would grow it.
func (s *server) push(ctx context.Context, id uint64, e Entry) {
	if s.store == nil {
		return
	}
	f, err := e.File(ctx)
	if err != nil {
		return
	}
	size := f.Size()
	if size <= 0 || size > PushMax {
		return
	}
	fd, base, ok, err := location(ctx, f)
	if err != nil || !ok {
		return
	}
	buf := pushBufs.Get().(*[PushMax]byte)
	defer pushBufs.Put(buf)
	data := buf[:size]
	// Read and checked as Read does: a change of the archive file, before
	// or while its bytes are read, fails it (the check after the read
	// sees both), and nothing is pushed.
	if _, errno := readExtent(ctx, f, fd, base, 0, size, data, false); errno != 0 {
		return
	}
	if s.store.InodeNotifyStoreCache(id, 0, data) == fuse.OK {
		s.st.pushes.Add(1)
		s.st.bytes.Add(size)
	}
}

// Ioctl answers ENOSYS, which the kernel tells its caller as ENOTTY:
// nothing served has ioctls. The kernel forwards every ioctl of a file,
// though, and it means the file is open: Python's open() asks isatty of
// every file it opens, then reads it. So a small file is pushed first
// (see push), and np.load of it makes no read request. Where the tree
// answers opens, the open has pushed it already.
func (s *server) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	s.st.requests.count(&in.InHeader)
	if s.st.finder == nil {
		return fuse.ENOSYS
	}
	if e, _, errno := s.resolve(&in.InHeader); errno == 0 && !e.IsDir() {
		ctx := s.request(cancel)
		defer ctx.end()
		s.push(ctx, in.NodeId, e)
	}
	return fuse.ENOSYS
}
