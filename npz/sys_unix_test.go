//go:build unix

package npz

import (
	"syscall"
	"testing"
)

// pread reads p from the file descriptor fd at off, as splice would.
func pread(_ *testing.T, fd uintptr, p []byte, off int64) (int, error) {
	return syscall.Pread(int(fd), p, off)
}

// cpuTime is the user and system CPU time of the process, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
