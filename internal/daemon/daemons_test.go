//go:build linux

package daemon

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitExit: waitExit reports a process still running, and returns
// once it has exited.
func TestWaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pidfd := func() []process {
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		return []process{{pid: cmd.Process.Pid, pidfd: fd}}
	}
	if running := waitExit(pidfd(), 0); len(running) != 1 || running[0] != cmd.Process.Pid {
		t.Errorf("a running process: waitExit says %v running, want [%d]", running, cmd.Process.Pid)
	}
	ds := pidfd()
	cmd.Process.Kill()
	if running := waitExit(ds, 5*time.Second); len(running) != 0 {
		t.Errorf("a killed process: waitExit says %v running", running)
	}
	cmd.Wait()
}

// TestDaemonsOfAnUnknownConnection: no process serves a FUSE connection
// that does not exist, and none is a daemon of a device that is no FUSE
// connection's.
func TestDaemonsOfAnUnknownConnection(t *testing.T) {
	for _, dev := range []string{"0:99999999", "8:1", "nonsense"} {
		if ds := daemonsOf(dev); len(ds) != 0 {
			t.Errorf("daemonsOf(%q) = %v, want none", dev, ds)
		}
	}
}
