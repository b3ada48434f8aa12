//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package source

import (
	"os"
	"strconv"
	"syscall"
)

// FileIdentity names the file fi describes as it is now: its device and
// inode number, size, and modification and change times. A file renamed
// over another, or rewritten in place, has another identity, even with
// the same size and modification time (what cp -p, rsync -a and tar x
// leave): its inode number or its change time differs.
func FileIdentity(fi os.FileInfo) string {
	b := make([]byte, 0, 80)
	b = append(b, "file:"...)
	b = strconv.AppendInt(b, fi.Size(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sec, nsec := ctime(st)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(st.Dev), 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(st.Ino), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, sec*1e9+nsec, 10)
	}
	return string(b)
}
