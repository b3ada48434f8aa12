//go:build !linux

package memplan

// CgroupLimit is 0: cgroups are Linux's.
func CgroupLimit() int64 { return 0 }

// watcher finds no cgroup limit: cgroups are Linux's.
type watcher struct{}

func (*watcher) limit() int64 { return 0 }
