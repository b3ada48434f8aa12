package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	npzfs "github.com/npzfs/npzfs/fs"
)

// handOn passes a handed FUSE device (mount point /dev/fd/N, see
// fs/fdmount.go) on to the daemon cmd starts: as its next extra file,
// with the mount point argument renamed to match. Any other mount point
// is left alone.
func handOn(cmd *exec.Cmd, mountpoint string) error {
	fd, ok := npzfs.FDMountpoint(mountpoint)
	if !ok {
		return nil
	}
	if err := npzfs.CheckFD(fd); err != nil {
		return err
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
