//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package source

import "syscall"

// ctime is the file's change time.
func ctime(st *syscall.Stat_t) (sec, nsec int64) { return st.Ctimespec.Unix() }

// modTime is the file's modification time.
func modTime(st *syscall.Stat_t) (sec, nsec int64) { return st.Mtimespec.Unix() }
