//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package source

import (
	"os"
	"strconv"
)

// FileIdentity names the file fi describes as it is now, by its size and
// modification time alone: this system's file information gives no
// inode number or change time to tell a file renamed over another with
// both the same.
func FileIdentity(fi os.FileInfo) string {
	return "file:" + strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}
