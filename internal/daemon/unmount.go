//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
)

// maxStack is how many npzfs mounts stacked on one mount point unmount
// removes before it gives up.
const maxStack = 16

// Unmount removes the npzfs mount on dir and any npzfs mounts stacked
// under it. It never touches the mount itself (no stat, no lookup inside
// it): it finds the mount in /proc/self/mountinfo and unmounts it, so it
// returns at once even when the daemon is stopped or dead. A mount whose
// daemon was killed unmounts like any other (the kernel needs nothing from
// the daemon to unmount), unless files are still open in it.
//
// It returns what it removed: the mount point, and, unless lazy (a
// detached mount's daemon serves until its last file is closed), the
// daemons of the mounts removed, which exit next (see Unmounted.Wait).
func Unmount(dir string, lazy bool) (*Unmounted, error) {
	abs, m, err := unmountPoint(dir)
	if err != nil {
		return nil, err
	}
	remove := npzfs.Unmount
	if lazy {
		remove = npzfs.LazyUnmount
	}
	var ds []process
	for range maxStack {
		if !lazy {
			ds = append(ds, daemonsOf(m.Dev)...)
		}
		if err := remove(abs); err != nil {
			waitExit(ds, 0) // closes their pidfds
			return nil, unmountError(abs, err)
		}
		var ok bool
		if m, ok = mountinfo.Find(abs); !ok || m.FSType != "fuse."+npzfs.FSType {
			return &Unmounted{Dir: abs, daemons: unmounted(ds)}, nil
		}
		// Another npzfs mount was under it (two mounts raced onto one
		// mount point before npzfs locked it): remove it too.
	}
	waitExit(ds, 0)
	return nil, fmt.Errorf("%s is still mounted after %d unmounts", abs, maxStack)
}

// Unmounted is a mount Unmount removed.
type Unmounted struct {
	Dir     string // the mount point, as the mount table names it
	daemons []process
}

// Wait waits up to d for the daemons of the mounts removed to exit (their
// logs closed, their files and indexes written; a daemon takes a few
// milliseconds), and returns the pids of those still running. It closes
// what holds them: it is called once.
func (u *Unmounted) Wait(d time.Duration) (running []int) { return waitExit(u.daemons, d) }

// unmountPoint is dir as the mount table names it (MountPath), and its
// topmost mount, once that is known to be an npzfs mount this user may
// remove.
func unmountPoint(dir string) (string, mountinfo.Entry, error) {
	abs, err := MountPath(dir)
	if err != nil {
		return dir, mountinfo.Entry{}, err
	}
	m, ok := mountinfo.Find(abs)
	if !ok {
		// Not a mount point, so looking at it waits on no daemon.
		if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
			return abs, m, fmt.Errorf("%s does not exist", abs)
		}
		return abs, m, fmt.Errorf("%s is not mounted", abs)
	}
	if m.FSType != "fuse."+npzfs.FSType {
		return abs, m, fmt.Errorf("%s is a %s mount, not npzfs; use umount(8)", abs, m.FSType)
	}
	return abs, m, mayUnmount(abs, m)
}

// unmountError says why unmounting abs failed and what to do.
func unmountError(abs string, err error) error {
	switch {
	case errors.Is(err, syscall.EBUSY) || strings.Contains(err.Error(), "busy"):
		if inner := mountsInside(abs); len(inner) > 0 {
			return fmt.Errorf("%s is busy: %s is mounted inside it; unmount that first", abs, strings.Join(inner, ", "))
		}
		return fmt.Errorf("%s is busy: close the files open in it, or use: npzfs unmount --lazy %s", abs, abs)
	case errors.Is(err, npzfs.ErrNoFusermount):
		return err
	}
	return fmt.Errorf("cannot unmount %s: %v", abs, err)
}

// mountsInside lists the mount points below dir.
func mountsInside(dir string) []string {
	var out []string
	for _, m := range mountinfo.Read() {
		if strings.HasPrefix(m.Dir, dir+"/") {
			out = append(out, m.Dir)
		}
	}
	return out
}

// mayUnmount refuses, saying who may, to unmount a mount that this user
// neither made nor may remove: one made for another user, as by a
// privileged process that handed npzfs the FUSE device (npzfs mount
// ARCHIVE /dev/fd/N), whose owner is named by user_id. Root may unmount
// any; fusermount3 lets a user unmount only mounts made for them.
func mayUnmount(abs string, m mountinfo.Entry) error {
	uid := os.Geteuid()
	owner, ok := mountinfo.Option(m.Super, "user_id")
	if uid == 0 || !ok || owner == strconv.Itoa(uid) {
		return nil
	}
	return fmt.Errorf("%s was mounted for user %s, not you: whoever mounted it must unmount it (for npzfs mount ARCHIVE /dev/fd/N, the process that opened /dev/fuse and handed it over: the container runtime or CSI driver), or root: umount %s", abs, owner, abs)
}
