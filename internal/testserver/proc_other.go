//go:build !linux

package testserver

import (
	"os"
	"syscall"
)

// ownGroup leaves a server in the test's process group.
func ownGroup() *syscall.SysProcAttr { return nil }

// stop ends the server p: asked to (os.Interrupt, where the system has
// it), or killed.
func stop(p *os.Process, kill bool) {
	if kill || p.Signal(os.Interrupt) != nil {
		p.Kill()
	}
}
