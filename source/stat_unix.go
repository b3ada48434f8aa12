//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package source

import (
	"os"
	"syscall"
	"time"
)

// stat is the file's size and modification time now. Check asks it
// before every read, so it calls fstat(2) without the allocations of
// os.File.Stat.
func (s *File) stat() (size int64, mtime time.Time, err error) {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return 0, time.Time{}, err
	}
	var st syscall.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil {
		return 0, time.Time{}, err
	}
	if serr != nil {
		return 0, time.Time{}, &os.PathError{Op: "stat", Path: s.name, Err: serr}
	}
	return st.Size, time.Unix(modTime(&st)), nil
}
