//go:build linux

package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/splice"
)

// errShortFile is a stored file's bytes ending before its size: the
// archive file was truncated (or its file system failed) under the read.
var errShortFile = errors.New("fs: the archive file ended before the file's bytes did (truncated under the read?)")

// Locator is implemented by content whose Extent also checks that the
// archive file has not changed (an archive's files): Location says where
// the bytes lie without that check. A read from the archive file checks
// it once the bytes are read (see readExtent); a change before the read
// is still a change then, so the check before would add a system call
// and nothing else.
type Locator interface {
	Location(ctx context.Context) (fd uintptr, off int64, ok bool, err error)
}

// location is where f's bytes lie, as Extent says, without a check of
// the archive file where f can leave it out (Locator).
func location(ctx context.Context, f Content) (fd uintptr, off int64, ok bool, err error) {
	if l, isLocator := f.(Locator); isLocator {
		return l.Location(ctx)
	}
	return f.Extent(ctx)
}

// readExact serves want bytes, whole or not at all: head (the part of a
// view's head in the read, written into the pipe) then the rest from off
// of fd. go-fuse's
// own ReadResultFd sends whatever a splice or read returns, so a short one
// (the archive truncated, or its file system failing, under the read)
// would reach the kernel as a short reply, which it takes for the end of
// the file (and shrinks its size). Here the bytes are first loaded into a
// pipe of our own, checking the count, and the pipe is handed to go-fuse,
// which splices it on to /dev/fuse: still no copy through user space.
// Where pipes cannot be used, the bytes are read into dest, again whole or
// not at all.
//
// A pipe holds one buffer per page or page fragment, and go-fuse moves
// ours whole into a pipe of about the reply's size behind its own header
// slot, dropping what does not fit (a short reply). So a head is never a
// buffer of its own: it goes in with the archive's bytes up to their next
// page boundary (read, not spliced), and the reply takes no more buffers
// than the same bytes without a head would.
func readExact(fd uintptr, off int64, head []byte, want int, dest []byte) (fuse.ReadResult, error) {
	pair, err := splice.Get()
	if err == nil {
		if err = pair.Grow(want + os.Getpagesize()); err == nil {
			n := 0
			if len(head) > 0 {
				page := int64(os.Getpagesize())
				lead := dest[:len(head)+int(min(int64(want-len(head)), (page-off%page)%page))]
				copy(lead, head)
				if err = readFull(fd, off, lead[len(head):]); err == nil {
					n, err = writePipe(pair, lead)
				}
			}
			if err == nil {
				var k int
				k, err = loadPipe(pair, fd, off+int64(n-len(head)), want-n)
				n += k
			}
			if err == nil {
				return fuse.ReadResultPipe(pair, n), nil
			}
			splice.Drop(pair) // it holds part of the bytes
			return nil, err
		}
		splice.Done(pair)
	}
	return readCopy(fd, off, head, dest[:want])
}

// readCopy is readExact without a pipe: head, then the rest of dest
// preaded from off of fd, whole or not at all.
func readCopy(fd uintptr, off int64, head []byte, dest []byte) (fuse.ReadResult, error) {
	n := copy(dest, head)
	if n < len(dest) {
		if err := readFull(fd, off, dest[n:]); err != nil {
			return nil, err
		}
	}
	return dataResult(dest), nil
}

// writePipe writes all of b into pair (which has room for it).
func writePipe(pair *splice.Pair, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := pair.Write(b[n:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, fmt.Errorf("fs: writing a view's head into a pipe: %w", err)
		}
		n += k
	}
	return n, nil
}

// loadPipe splices want bytes at off of fd into pair, in as many calls as
// it takes.
func loadPipe(pair *splice.Pair, fd uintptr, off int64, want int) (int, error) {
	n := 0
	for n < want {
		k, err := pair.LoadFromAt(fd, want-n, off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, fmt.Errorf("fs: splicing %d bytes at %d of the archive: %w", want, off, err)
		case k == 0:
			return n, fmt.Errorf("%w: %d of %d bytes at %d", errShortFile, n, want, off)
		}
		n += k
	}
	return n, nil
}

// readFull preads all of p at off of fd.
func readFull(fd uintptr, off int64, p []byte) error {
	n := 0
	for n < len(p) {
		k, err := syscall.Pread(int(fd), p[n:], off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("fs: reading %d bytes at %d of the archive: %w", len(p), off, err)
		case k == 0:
			return fmt.Errorf("%w: %d of %d bytes at %d", errShortFile, n, len(p), off)
		}
		n += k
	}
	return nil
}

// dataResult is a reply of bytes in memory. go-fuse tries to splice every
// reply that is not a list of slices: for bytes in memory that costs a
// pipe write, a splice to /dev/null and an ioctl before the writev it
// falls back to. A list of one slice goes straight to writev.
func dataResult(b []byte) fuse.ReadResult {
	return fuse.ReadResultVector([][]byte{b})
}
