package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// checkHanded checks that fd, named by the mount point /dev/fd/N, was
// passed to this process open on the FUSE device. The Go runtime and
// package initialisation open a few descriptors of their own before main
// runs, so a number the caller did not pass may well be open here; those
// are close-on-exec, which a passed descriptor cannot be (exec would have
// closed it).
func checkHanded(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC != 0 {
		return fmt.Errorf("/dev/fd/%d was not passed to npzfs: the process that mounted the FUSE device must pass its descriptor open", fd)
	}
	return npzfs.CheckFD(fd)
}

// handOn passes a handed FUSE device (mount point /dev/fd/N, see
// fs/fdmount.go) on to the daemon cmd starts: as its next extra file,
// with the mount point argument renamed to match (runMount has checked
// the descriptor). Any other mount point is left alone.
func handOn(cmd *exec.Cmd, mountpoint string) error {
	fd, ok := npzfs.FDMountpoint(mountpoint)
	if !ok {
		return nil
	}
	// The mount point is the last argument that names it.
	for i := len(cmd.Args) - 1; i > 0; i-- {
		if cmd.Args[i] != mountpoint {
			continue
		}
		// A duplicate, which the caller may close like its other files.
		dup, err := syscall.Dup(fd)
		if err != nil {
			return fmt.Errorf("%s: %v", mountpoint, err)
		}
		syscall.CloseOnExec(dup)
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(dup), mountpoint))
		cmd.Args[i] = fmt.Sprintf("/dev/fd/%d", 2+len(cmd.ExtraFiles))
		return nil
	}
	return fmt.Errorf("the mount point %s is not among the daemon's arguments", mountpoint)
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
