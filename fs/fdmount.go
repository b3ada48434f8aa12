//go:build linux

package fs

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// A FUSE device can be handed to npzfs already mounted: a privileged
// process (a container runtime, a CSI driver, mount.fuse3 with
// drop_privileges) opens /dev/fuse, mounts it on a folder with mount(2),
// and starts npzfs with the descriptor, naming it "/dev/fd/N" as the
// mount point (libfuse's convention, which go-fuse follows). npzfs then
// needs neither fusermount3 nor root, never learns the folder, and cannot
// unmount it: the process that mounted it does.

// FDMountpoint reports whether dir names a handed FUSE device,
// "/dev/fd/N", and N.
func FDMountpoint(dir string) (int, bool) {
	s, ok := strings.CutPrefix(dir, "/dev/fd/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// The FUSE device's numbers (Linux's devices.txt: misc, 229).
const fuseMajor, fuseMinor = 10, 229

// CheckFD checks that descriptor fd is open on the FUSE device.
func CheckFD(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("/dev/fd/%d: no such open file descriptor (%v): the process that mounted the FUSE device must pass it to npzfs", fd, err)
	}
	major := (st.Rdev>>8)&0xfff | (st.Rdev>>32)&^0xfff
	minor := st.Rdev&0xff | (st.Rdev>>12)&^0xff
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR || major != fuseMajor || minor != fuseMinor {
		return fmt.Errorf("/dev/fd/%d is not a FUSE device: give the descriptor of an opened and mounted /dev/fuse", fd)
	}
	return nil
}
