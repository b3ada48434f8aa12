package folder

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
)

// npzfsMount reports whether dev is the device of an npzfs mount, and
// its mount point. The mount table is read again when a second old, so
// that mounts made since (this one among them) are seen.
func (d *Dir) npzfsMount(dev uint64) (string, bool) {
	d.mountsMu.Lock()
	defer d.mountsMu.Unlock()
	if d.npzfs == nil || time.Since(d.mountsAt) > time.Second {
		d.npzfs = map[string]string{}
		for _, m := range mountinfo.Read() {
			if m.FSType == "fuse."+fs.FSType {
				d.npzfs[m.Dev] = m.Dir
			}
		}
		d.mountsAt = time.Now()
	}
	mnt, ok := d.npzfs[devName(dev)]
	return mnt, ok
}

// devOf is the device a file is on.
func devOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev
	}
	return 0
}

// devName is a device number as the mount table writes it, major:minor.
func devName(dev uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return fmt.Sprintf("%d:%d", major, minor)
}
