//go:build linux

package daemon

import (
	"fmt"
	"strconv"

	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// CheckHanded checks that fd, named by the mount point /dev/fd/N, was
// passed to this process open on the FUSE device. The Go runtime and
// package initialisation open a few descriptors of their own before main
// runs, so a number the caller did not pass may well be open here; those
// are close-on-exec, which a passed descriptor cannot be (exec would have
// closed it).
func CheckHanded(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC != 0 {
		return fmt.Errorf("/dev/fd/%d was not passed to npzfs: the process that mounted the FUSE device must pass its descriptor open", fd)
	}
	return npzfs.CheckFD(fd)
}

// handedDir is where the FUSE device handed as descriptor fd is mounted
// in this process's mount namespace, found by its connection; "" where
// the kernel does not say or the mount is in another namespace.
func handedDir(fd int) string {
	conn, ok := fuseConnection("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if !ok {
		return ""
	}
	for _, m := range mountinfo.Read() {
		if m.Dev == "0:"+conn { // FUSE mounts have anonymous devices
			return m.Dir
		}
	}
	return ""
}
