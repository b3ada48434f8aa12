package testserver

import (
	"os"
	"syscall"
)

// ownGroup runs a server in a process group of its own, killed if the
// test process dies first.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// stop ends the server p and its group: asked to (SIGTERM), or killed.
func stop(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}
