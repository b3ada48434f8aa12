//go:build linux

package daemon

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownerGone is what a mount's owner exiting is to the daemon: a reason
// to unmount, as SIGTERM is, told apart in the log.
type ownerGone struct{ pid int }

func (o ownerGone) String() string { return fmt.Sprintf("its owner (pid %d) exited", o.pid) }
func (o ownerGone) Signal()        {}

// watchOwner sends ownerGone to sig once process pid exits, whatever
// ends it (SIGKILL, the OOM killer, a closed terminal): a pidfd turns
// readable then. It fails at once when pid is not running: a mount
// whose owner is gone already is not made.
func watchOwner(pid int, sig chan<- os.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if err == syscall.ESRCH {
			return fmt.Errorf("--owner %d: no such process (it exited already?)", pid)
		}
		return fmt.Errorf("--owner %d: %v", pid, err)
	}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || err != syscall.EINTR {
				break
			}
		}
		sig <- ownerGone{pid}
	}()
	return nil
}
