//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/npzfs/npzfs/dataset"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"github.com/npzfs/npzfs/tree"
)

// mountpoint is where a mount goes: a folder (locked from its check
// until the mount is live, so that two mounts started together on it
// cannot both pass the check and stack) or a FUSE device handed over
// (/dev/fd/N, see fs/fdmount.go).
type mountpoint struct {
	dir    string // absolute, links resolved; or /dev/fd/N
	handed bool
	hidden int // entries of the folder the mount hides
	unlock func()
}

// takeMountpoint checks that a mount can go on dir and locks it.
func takeMountpoint(dir string) (*mountpoint, error) {
	mp := &mountpoint{dir: dir, unlock: func() {}}
	if _, handed := npzfs.FDMountpoint(dir); handed { // checked by the caller (CheckHanded)
		mp.handed = true
		return mp, nil
	}
	mp.unlock = lockMountpoint(dir)
	var err error
	if mp.dir, err = checkMountpoint(dir); err != nil {
		return mp, err
	}
	mp.hidden = entriesIn(mp.dir)
	return mp, nil
}

// mount mounts d's tree on the mount point, as cfg says.
func (mp *mountpoint) mount(cfg *Config, d *dataset.Dataset, tr *tree.Tree) (*npzfs.Server, error) {
	if d.Kind() == dataset.Folder && !d.Remote() && within(mp.dir, d.Name()) {
		return nil, fmt.Errorf("cannot serve the folder %s on %s: the mount point is inside the folder (mount it elsewhere)", d.Name(), mp.dir)
	}
	if !mp.handed {
		if err := checkFuse(); err != nil {
			return nil, err
		}
	}
	srv, err := mountCapturingStderr(mp.dir, tr.Root(), npzfs.Config{
		Source:      d.Name(),
		ArchiveSize: tr.Size(),
		Files:       tr.Nodes(),
		UID:         uint32(os.Getuid()),
		GID:         uint32(os.Getgid()),
		Options:     cfg.MountOptions,
		Debug:       cfg.Debug,
		Logger:      cfg.Logger,
		Local:       !d.Remote(),
		ListAttrs:   cfg.ListAttrs,
	})
	if err != nil {
		// A mount made before a later step failed must not stay.
		if m, ok := mountinfo.Find(mp.dir); ok && m.FSType == "fuse."+npzfs.FSType && m.Source == d.Name() {
			npzfs.LazyUnmount(mp.dir)
		}
		return nil, err
	}
	// Hold no folder busy.
	os.Chdir("/")
	if cfg.ReadAheadKB > 0 && os.Geteuid() == 0 && !mp.handed {
		if err := setReadAhead(mp.dir, cfg.ReadAheadKB); err != nil {
			cfg.Logger.Printf("cannot set readahead: %v", err)
		}
	}
	return srv, nil
}

// detached reports whether the mount m, as the mount table gave it once
// made, is gone from the table: detached by a lazy unmount (umount -l,
// fusermount3 -u -z) while files on it are still open.
func detached(m mountinfo.Entry) bool {
	if m.Dev == "" {
		return false // not known: unmount as usual
	}
	for _, e := range mountinfo.Read() {
		if e.Dev == m.Dev && e.FSType == m.FSType {
			return false
		}
	}
	return true
}

// MountPath is dir as the mount table names a mount on it: absolute, with
// its symbolic links resolved, as mount resolved them. A mount point's
// daemon may not answer (stopped, or gone), so nothing is looked up on
// it: the parent's links are resolved, and dir itself is only read as a
// link (readlink of a mount point fails at once, asking no daemon).
func MountPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, err
	}
	for range 40 { // as many links as the kernel follows
		if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			abs = filepath.Join(parent, filepath.Base(abs))
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return abs, nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		abs = filepath.Clean(target)
	}
	return abs, fmt.Errorf("%s: too many levels of symbolic links", dir)
}

// within reports whether path is dir or inside it, symbolic links
// resolved.
func within(path, dir string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// mountCapturingStderr mounts, collecting what fusermount3 prints to
// stderr so a refusal becomes one line of our own.
func mountCapturingStderr(mnt string, root npzfs.Entry, cfg npzfs.Config) (*npzfs.Server, error) {
	r, w, perr := os.Pipe()
	if perr != nil {
		return npzfs.Mount(mnt, root, cfg)
	}
	saved := os.Stderr
	os.Stderr = w
	captured := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		captured <- string(b)
	}()
	srv, err := npzfs.Mount(mnt, root, cfg)
	os.Stderr = saved
	w.Close()
	msg := strings.TrimSpace(<-captured)
	if err == nil {
		if msg != "" {
			cfg.Logger.Print(oneLine(msg))
		}
		return srv, nil
	}
	if msg != "" {
		lines := strings.Split(msg, "\n")
		return nil, fmt.Errorf("cannot mount on %s: %s", mnt, strings.TrimSpace(lines[len(lines)-1]))
	}
	return nil, fmt.Errorf("cannot mount on %s: %v", mnt, err)
}

// entriesIn counts what the folder dir holds, up to 1,000.
func entriesIn(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer f.Close()
	names, _ := f.Readdirnames(1000)
	return len(names)
}

// lockMountpoint takes an exclusive flock(2) on the folder dir (the folder
// itself, before anything is mounted on it) and returns what releases it,
// which may be called more than once. A mount started while another is
// being made on the same folder waits here, then finds that one in the
// mount table. Where the folder cannot be opened or locked there is no
// lock: checkMountpoint then says what is wrong.
func lockMountpoint(dir string) (unlock func()) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(func() { syscall.Close(fd) }) }
}

// checkMountpoint resolves dir and checks that a mount can go there.
func checkMountpoint(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return "", fmt.Errorf("%s is a mount whose daemon died; clear it with: npzfs unmount %s", abs, abs)
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("mount point %s does not exist; create it with: mkdir -p %s", abs, abs)
	case err != nil:
		return "", fmt.Errorf("cannot use mount point: %v", err)
	case !fi.IsDir():
		return "", fmt.Errorf("mount point %s is not a folder; mount on an empty folder", abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("cannot use mount point: %v", err)
	}
	if fsType, ok := kernelFS(real); ok {
		return "", fmt.Errorf("cannot mount on %s: it is in %s, a file system the kernel makes up (processes, devices, settings); mount on an empty folder of your own", real, fsType)
	}
	if m, ok := mountinfo.Find(real); ok {
		if m.FSType == "fuse."+npzfs.FSType {
			return "", fmt.Errorf("%s is already mounted (%s); unmount it first: npzfs unmount %s", real, m.Source, real)
		}
		return "", fmt.Errorf("%s is already a mount point (%s); unmount it first", real, m.FSType)
	}
	return real, nil
}

// kernelFileSystems are the file systems whose folders the kernel makes
// up (/proc, /sys, /dev and the like): a mount there would hide a
// process's or a device's entries (/proc/self is the process looking),
// and go with them.
var kernelFileSystems = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "cgroup": true, "cgroup2": true,
	"debugfs": true, "tracefs": true, "securityfs": true, "pstore": true, "bpf": true, "configfs": true,
	"efivarfs": true, "mqueue": true, "fusectl": true, "binfmt_misc": true, "hugetlbfs": true,
}

// kernelFS is the type of the file system path (absolute, links
// resolved) is in, when it is one of kernelFileSystems.
func kernelFS(path string) (string, bool) {
	var in mountinfo.Entry
	for _, m := range mountinfo.Read() {
		// The deepest mount holding path; of those stacked on one
		// folder, the last (topmost).
		if holds := m.Dir == "/" || path == m.Dir || strings.HasPrefix(path, m.Dir+"/"); holds && len(m.Dir) >= len(in.Dir) {
			in = m
		}
	}
	return in.FSType, kernelFileSystems[in.FSType]
}

// checkFuse checks that this user can mount: root needs to open /dev/fuse
// and CAP_SYS_ADMIN; any other user needs /dev/fuse to exist and
// fusermount3 (setuid root) to open it.
func checkFuse() error {
	const missing = "/dev/fuse does not exist: load the fuse kernel module (modprobe fuse), or pass --device /dev/fuse to the container"
	if os.Geteuid() != 0 {
		if _, err := os.Stat("/dev/fuse"); errors.Is(err, os.ErrNotExist) {
			return errors.New(missing)
		}
		if !npzfs.HaveFusermount() {
			return errors.New("fusermount3 not found: install the fuse3 package (a non-root user needs it to mount)")
		}
		if err := syscall.Access("/dev/fuse", 6); err != nil { // read and write
			return fmt.Errorf("/dev/fuse is not open to your user (%v): ask an administrator to allow FUSE mounts for users (mode 0666 on /dev/fuse, as most distributions set it), or mount as root", err)
		}
		return nil
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New(missing)
		}
		return fmt.Errorf("cannot open /dev/fuse (%v): check that FUSE is allowed here", errors.Unwrap(err))
	}
	f.Close()
	// Root mounts with mount(2), given CAP_SYS_ADMIN; without it, only
	// through fusermount3, which its setuid bit gives CAP_SYS_ADMIN
	// unless the bounding set has dropped it too.
	if eff, bnd := npzfs.SysAdmin(); !eff && !(bnd && npzfs.HaveFusermount()) {
		return errors.New("cannot mount: this root lacks CAP_SYS_ADMIN, which mount(2) needs: in a container, pass --cap-add SYS_ADMIN (and --device /dev/fuse), or have a privileged helper hand npzfs a mounted /dev/fuse as /dev/fd/N")
	}
	return nil
}
