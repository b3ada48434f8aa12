//go:build !linux && !darwin

package memplan

// MachineMemory is 0: the machine's memory is not read on this system.
func MachineMemory() int64 { return 0 }
