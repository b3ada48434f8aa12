//go:build !linux

package folder

import "os"

// npzfsMount reports whether dev is the device of an npzfs mount: there
// are none here (mounts are Linux's).
func (d *Dir) npzfsMount(dev uint64) (string, bool) { return "", false }

// devOf is the device a file is on: 0 here, where no mount is told apart.
func devOf(fi os.FileInfo) uint64 { return 0 }
