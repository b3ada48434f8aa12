//go:build linux

package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/npzfs/npzfs/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// process is a daemon serving a mount, held by a pidfd so that its pid
// cannot come to name another process meanwhile.
type process struct {
	pid   int
	pidfd int
	dev   string // the device of the mounts it serves
}

// daemonsOf finds the processes serving the FUSE connection of a mount
// whose device is dev ("0:40"): those run as "npzfs mount" (a daemon, or
// a mount in the foreground) that hold /dev/fuse open on that
// connection, which the kernel names in the descriptor's fdinfo
// (fuse_connection). It skips a stopped daemon, which would not exit
// until continued. Where the kernel does not say, or the processes are
// another user's, it finds none, and unmount does not wait.
func daemonsOf(dev string) []process {
	_, conn, ok := strings.Cut(dev, ":")
	if !ok {
		return nil
	}
	var out []process
	for _, pid := range servers(conn) {
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		// Checked again through the pidfd's process: the one found may
		// have exited and its pid been reused before the pidfd was made.
		if !servesConnection(pid, conn) || isStopped(pid) {
			unix.Close(pidfd)
			continue
		}
		out = append(out, process{pid: pid, pidfd: pidfd, dev: dev})
	}
	return out
}

// servers are the processes run as "npzfs mount" that hold /dev/fuse
// open on the FUSE connection conn (a device's minor number), stopped
// ones too.
func servers(conn string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && isMountCommand(pid) && servesConnection(pid, conn) {
			out = append(out, pid)
		}
	}
	return out
}

// isMountCommand reports a process whose first argument is "mount".
func isMountCommand(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := bytes.Split(b, []byte{0})
	return len(args) > 1 && string(args[1]) == "mount"
}

// servesConnection reports a process with /dev/fuse open on the FUSE
// connection conn.
func servesConnection(pid int, conn string) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err != nil || l != "/dev/fuse" {
			continue
		}
		if c, ok := fuseConnection(filepath.Join(dir, "fdinfo", fd.Name())); ok && c == conn {
			return true
		}
	}
	return false
}

// fuseConnection is the FUSE connection a descriptor of /dev/fuse is on,
// as the kernel names it in the fdinfo file at path (the minor number of
// the mounts it serves).
func fuseConnection(path string) (string, bool) {
	info, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(info)) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == "fuse_connection" {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// isStopped reports a process stopped by a signal or a tracer.
func isStopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and
	// may hold any byte.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// unmounted keeps the daemons none of whose mounts is left in this
// mount namespace, and closes the others' pidfds: a daemon serves until
// its connection's last mount is gone, and a mount bound elsewhere (mount
// --bind) keeps it.
func unmounted(ds []process) []process {
	left := map[string]bool{}
	for _, m := range mountinfo.Read() {
		left[m.Dev] = true
	}
	out := ds[:0]
	for _, d := range ds {
		if left[d.dev] {
			unix.Close(d.pidfd)
			continue
		}
		out = append(out, d)
	}
	return out
}

// waitExit waits up to d for the daemons to exit, and closes their
// pidfds. It returns the pids of those still running.
func waitExit(ds []process, d time.Duration) (running []int) {
	deadline := time.Now().Add(d)
	for _, dm := range ds {
		fds := []unix.PollFd{{Fd: int32(dm.pidfd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int(max(time.Until(deadline), 0)/time.Millisecond))
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				running = append(running, dm.pid)
			}
			break
		}
		unix.Close(dm.pidfd)
	}
	return running
}
