//go:build !unix

package npz

import "testing"

// pread skips the test: a descriptor is read at an offset on Unix only
// (what the FUSE server does with it is Linux's).
func pread(t *testing.T, _ uintptr, _ []byte, _ int64) (int, error) {
	t.Skip("no pread(2) on this system")
	return 0, nil
}

// cpuTime is the CPU time of the process: not known here (0).
func cpuTime() int64 { return 0 }
