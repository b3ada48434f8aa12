//go:build linux

package fs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ErrNoFusermount means neither fusermount3 nor fusermount was found: an
// unprivileged user cannot mount or unmount without it.
var ErrNoFusermount = errors.New("fusermount3 not found (install the fuse3 package)")

// fusermount finds the setuid helper the way go-fuse does.
func fusermount() (string, error) {
	for _, name := range []string{"fusermount3", "/bin/fusermount3", "fusermount", "/bin/fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoFusermount
}

// HaveFusermount reports whether the fusermount helper can be found.
func HaveFusermount() bool {
	_, err := fusermount()
	return err == nil
}

func execOutput(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// capSysAdmin is CAP_SYS_ADMIN's bit in a capability set.
const capSysAdmin = 21

// SysAdmin reports whether this process holds CAP_SYS_ADMIN, which
// mount(2) needs: in its effective set (it may mount now), and in its
// bounding set (a setuid fusermount3 it runs may). A container not given
// --cap-add SYS_ADMIN has it in neither.
func SysAdmin() (effective, bounding bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, false
	}
	return hasCap(b, "CapEff", capSysAdmin), hasCap(b, "CapBnd", capSysAdmin)
}

// hasCap reports whether the capability set named field (CapEff, CapBnd,
// ...) of a /proc/PID/status text holds capability bit.
func hasCap(status []byte, field string, bit uint) bool {
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			caps, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}

// CanMountDirectly reports whether this process mounts with mount(2)
// itself rather than through fusermount3, as libfuse does when it may:
// it is root with CAP_SYS_ADMIN, on a host, in a container given
// --cap-add SYS_ADMIN, or in a user namespace of its own (a rootless
// container). Such a process needs /dev/fuse but not the fuse3 package.
func CanMountDirectly() bool {
	eff, _ := SysAdmin()
	return os.Geteuid() == 0 && eff
}

// mountFlags splits off the options that mount(2) takes as flags rather
// than in its data string (ro, atime, noatime, dev, suid, exec and their
// opposites), starting from nosuid and nodev as fusermount3 does.
func mountFlags(opts []string) (uintptr, []string) {
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV)
	set := map[string]uintptr{"ro": syscall.MS_RDONLY, "noatime": syscall.MS_NOATIME,
		"nodev": syscall.MS_NODEV, "nosuid": syscall.MS_NOSUID, "noexec": syscall.MS_NOEXEC}
	clear := map[string]uintptr{"atime": syscall.MS_NOATIME, "dev": syscall.MS_NODEV,
		"suid": syscall.MS_NOSUID, "exec": syscall.MS_NOEXEC}
	var rest []string
	for _, o := range opts {
		switch {
		case set[o] != 0:
			flags |= set[o]
		case clear[o] != 0:
			flags &^= clear[o]
		default:
			rest = append(rest, o)
		}
	}
	return flags, rest
}
