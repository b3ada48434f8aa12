//go:build linux

package fs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
)

// Errno maps an error to the errno a FUSE request answers with. It is the
// one place where errors become errnos:
//
//   - nil is 0;
//   - a syscall.Errno anywhere in the chain passes through, except 0 and
//     ENOSYS, which become EIO (ENOSYS would tell the kernel that the
//     operation is not implemented and make it stop asking);
//   - context cancellation is EINTR: the caller gave up (the kernel
//     interrupted the request, at a signal to the process that made it);
//   - a deadline passed (context.DeadlineExceeded: a remote timeout, the
//     request's own bound) is EIO: a failure, not an interruption. An
//     EINTR the process was not signalled for is retried at once by libc,
//     Go's os package and Python alike, so a timeout answered EINTR would
//     have them ask again for ever;
//   - fs.ErrNotExist is ENOENT, fs.ErrPermission EACCES;
//   - anything else is EIO: malformed archive data, and members npzfs
//     cannot read (another compression method, encryption), whose reason
//     npzfs ls and the daemon log give. A bad member always reads EIO,
//     whatever is wrong with it.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if en == 0 || en == syscall.ENOSYS {
			return syscall.EIO
		}
		return en
	}
	switch {
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	}
	return syscall.EIO
}
