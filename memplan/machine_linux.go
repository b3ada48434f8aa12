package memplan

import "golang.org/x/sys/unix"

// MachineMemory is the machine's physical memory in bytes (sysinfo(2)'s
// total RAM), or 0 where it cannot be read.
func MachineMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return clampBytes(uint64(si.Totalram) * uint64(si.Unit))
}
