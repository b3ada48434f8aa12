package memplan

import "golang.org/x/sys/unix"

// MachineMemory is the machine's physical memory in bytes (the sysctl
// hw.memsize), or 0 where it cannot be read.
func MachineMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return clampBytes(n)
}
