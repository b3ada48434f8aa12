//go:build !linux

package memplan

// CgroupLimit is 0: cgroups are Linux's.
func CgroupLimit() int64 { return 0 }
