//go:build linux

package fs

import (
	"context"
	"time"
)

// Entry is one folder or file of the served tree: all the fs layer needs
// of a tree (package dataset adapts an archive's, package folder serves a
// folder's, and tests serve small trees of their own).
//
// The calls that may have to fetch or open something (Attr, Lookup, List,
// File) take the request's context, which is cancelled when the kernel
// interrupts the request and ends at its deadline (see RequestTimeout),
// and return an error. An error wrapping io/fs.ErrNotExist says that what
// was asked for is not there, which the kernel may remember; any other
// says it could not be found out now (EIO, see Errno), which nothing
// remembers: the next request asks again.
type Entry interface {
	Name() string
	// Ino is the inode number, which is also the FUSE node ID: unique,
	// non-zero, stable while mounted, and 1 for the root.
	Ino() uint64
	IsDir() bool
	// Attr is what stat shows of the entry.
	Attr(ctx context.Context) (Attr, error)
	// Lookup returns the child of a folder by name; one that is not
	// there is an error wrapping io/fs.ErrNotExist.
	Lookup(ctx context.Context, name string) (Entry, error)
	// List is a folder's listing. A folder of a tree that changes
	// (Cacher) is listed once per opening of it; any other folder at
	// each readdir, so its List should cost nothing (a view of what the
	// tree holds, not a copy).
	List(ctx context.Context) (Listing, error)
	// File is the content of a file, for its reads.
	File(ctx context.Context) (Content, error)
}

// Attr is what stat shows of an entry besides its kind and inode number.
type Attr struct {
	// Size is a file's exact size in bytes (a folder's is 0).
	Size int64
	// ModTime is the modification time; zero when unknown.
	ModTime time.Time
	// DiskUsage is what the entry takes where it comes from (an archive
	// member its compressed size, a generated view nothing): st_blocks,
	// which du(1) adds up.
	DiskUsage int64
}

// Listing is a folder's children at fixed positions 0 to Len()-1, At(i)
// being the child at position i, or nil where there is none. Positions
// are the offsets readdir resumes from, so a listing is read in any
// number of requests, each costing what it returns.
type Listing interface {
	Len() int
	At(i int) Entry
}

// Entries is a Listing of the entries in a slice.
type Entries []Entry

// Len is the number of entries.
func (l Entries) Len() int { return len(l) }

// At is entry i.
func (l Entries) At(i int) Entry { return l[i] }

// Preparer is implemented by listings whose entries' attributes cost a
// read each (an array's KEY.ra, whose size is in its npy header):
// Prepare reads those of positions [from, to) at once, before a listing
// with attributes (READDIRPLUS) asks for them one by one; Prepared
// reports whether the attributes at position i are known without a
// read (prepared before, or never needing one).
type Preparer interface {
	Prepare(ctx context.Context, from, to int)
	Prepared(i int) bool
}

// Finder is implemented by the root of a tree that never changes while
// mounted and can find any of its entries by inode number: Find returns
// the entry and the inode number of the folder holding it (the root's
// own for the root), or nil. The server then keeps no table of the nodes
// the kernel holds (it needs none to answer for them), lets the kernel
// open folders without asking (no-opendir: their listings are cached by
// the kernel), and reads listings from the tree at each readdir. Trees
// of entries that are Holders or Cachers must not implement it.
type Finder interface {
	Find(ino uint64) (e Entry, parent uint64)
}

// Opener is implemented by entries that want to know while their file
// is open: Opened is called when the kernel opens it (each open), Closed
// when it releases that open, after its last read (a memory mapping of
// the file keeps it open until unmapped). The kernel reads a file only
// while it is open, so a tree that keeps something open for its files (a
// folder mount's archive) may close it while none is, whatever nodes the
// kernel still caches: a request on such a node comes through Attr,
// Lookup, List or File, which open it again. Neither may block.
type Opener interface {
	Opened()
	Closed()
}

// Cacher is implemented by entries of a tree that changes (the folders and
// archives of a folder mount): CacheTime is how long the kernel may keep
// the entry and its attributes and, for a folder, the names it found
// missing in it. Other entries are cached for the mount's timeout.
type Cacher interface {
	CacheTime() time.Duration
}

// Unsettled is implemented by entries whose contents may change for a
// while (a remote archive's views folder whose header could not be
// fetched yet): while Unsettled is true the kernel caches nothing of
// them, so a name found missing is looked up again.
type Unsettled interface {
	Unsettled() bool
}

// Content is the content of a served file.
type Content interface {
	// Size is the exact size in bytes.
	Size() int64
	// ReadAtContext is io.ReaderAt, safe for concurrent use, for a read
	// that ctx cancels when the kernel interrupts the request: the
	// content should then stop what it is doing and return ctx's error.
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
	// Extent reports that bytes [0, Size()) of the file are bytes
	// [off, off+Size()) of the open file fd, when ok; for a Headed
	// content, that the bytes after its head are.
	Extent(ctx context.Context) (fd uintptr, off int64, ok bool, err error)
}

// Headed is implemented by content that starts with bytes made in memory
// (a view's header) before those its Extent places in a file: bytes
// [0, len(head)) are the head, and bytes [len(head), Size()) are
// [off, off+Size()-len(head)) of fd. A read across both is one reply:
// the head is written into the pipe, then the rest spliced after it.
type Headed interface {
	Head(ctx context.Context) ([]byte, error)
}

// Children lists the entries of a folder's listing, in a new slice.
func Children(ctx context.Context, e Entry) ([]Entry, error) {
	l, err := e.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for i := range l.Len() {
		if c := l.At(i); c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}
