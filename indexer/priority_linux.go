package indexer

import "syscall"

// lowerPriority gives the calling thread the lowest CPU priority (nice
// 19): on Linux, a thread's own.
func lowerPriority() error { return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19) }
