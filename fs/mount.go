//go:build linux

package fs

import (
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/splice"
)

// FSType is the name after "fuse." that mount(8) and df -T show.
const FSType = "npzfs"

// maxRequest is the most Linux 4.20+ sends in one read request (max_pages
// 256); older kernels cap it at 128 KiB.
const maxRequest = 1 << 20

// MaxRead is the largest read request npzfs asks of the kernel: the
// largest page multiple, up to 1 MiB, whose reply still splices. Stored
// reads are spliced from the archive file into /dev/fuse through a pipe
// that must hold the reply's header, its data and one more page, and a
// pipe holds at most /proc/sys/fs/pipe-max-size (1 MiB by default): a
// 1 MiB reply would not fit and go-fuse would copy it through the daemon
// instead, which makes first reads about 1.3 times slower. By default
// MaxRead is therefore 1 MiB less 8 KiB; where pipe-max-size has been
// raised it is the full 1 MiB.
var MaxRead = maxReadFor(splice.MaxPipeSize(), os.Getpagesize())

// maxReadFor is MaxRead for a pipe size limit and page size. Where even
// 128 KiB replies would not splice, it gives up on splicing rather than on
// request size.
func maxReadFor(pipeMax, page int) int {
	const replyHeader = 16 // fuse_out_header
	n := (pipeMax - page - replyHeader) / page * page
	if n < 128<<10 {
		return maxRequest
	}
	return min(n, maxRequest)
}

// Config describes one mount.
type Config struct {
	// Source is shown as the mount's source in mount(8) and df: the
	// archive's absolute path.
	Source string
	// ArchiveSize is the archive's size in bytes, for statfs.
	ArchiveSize int64
	// Files is what statfs reports as the number of files (df -i). 0
	// means count the tree on the first statfs, which resolves every
	// folder's children (reads every .npy header of an archive).
	Files uint64
	// UID and GID own every file; normally the mounting user's.
	UID, GID uint32
	// Options are extra mount options (allow_other, default_permissions,
	// ...); "ro" is always added. "rw" is refused. allow_root, which
	// fusermount3 does not know, becomes allow_other plus a check on
	// every request that the caller is root or UID, modes 0400/0500 and
	// default_permissions.
	Options []string
	// Timeout is how long the kernel may cache entries and attributes;
	// 0 means one hour. The archive does not change while mounted.
	Timeout time.Duration
	// Debug logs every FUSE request and reply to Logger.
	Debug bool
	// Logger receives debug output and go-fuse's diagnostics; nil means
	// the standard logger.
	Logger *log.Logger
	// Local says that every request is answered from memory and local
	// files, never waiting on a network (a local archive): a tree that
	// never changes (Finder) is then served by a loop of the server's
	// own, one request at a time (see loop), unless Debug.
	Local bool
	// MaxReadAhead bounds kernel readahead in bytes; 0 means MaxRead
	// (the kernel lowers it to what it allows).
	MaxReadAhead int
	// ListAttrs gives the kernel, with every reply of every listing,
	// the attributes of the files listed that cost no read (see
	// server.ReadDirPlus): each file opened after a listing then costs
	// no lookup, and each one listed costs the kernel an inode. Without
	// it, a listing's first reply has them, and a reply that follows
	// lookups in the folder (ls -l); later replies of a plain listing
	// (ls, os.listdir) have names alone.
	ListAttrs bool
}

// Server is a live mount.
type Server struct {
	srv  *fuse.Server
	loop *loop // the server's own loop, where it has one (Config.Local)
	st   *mountState
	dir  string
	// For a handed FUSE device (FDMountpoint), which npzfs cannot
	// unmount: closed by Unmount, to stop serving.
	stopped  chan struct{}
	stopOnce sync.Once
}

// Mount mounts root on dir read-only and serves it in the background. It
// returns once the kernel answers requests on dir. A dir of the form
// /dev/fd/N (FDMountpoint) is a FUSE device already mounted by whoever
// handed it over: Mount serves it, and the mount options are theirs.
func Mount(dir string, root Entry, cfg Config) (*Server, error) {
	if root == nil || !root.IsDir() {
		return nil, errors.New("the archive has no root folder")
	}
	if root.Ino() != rootID {
		return nil, fmt.Errorf("the root folder has inode number %d, want %d", root.Ino(), rootID)
	}
	for _, o := range cfg.Options {
		if o == "rw" {
			return nil, errors.New(`mount option "rw" is not supported: npzfs is read-only`)
		}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	logger := cfg.Logger
	if logger == nil {
		logger = log.Default()
	}
	ra := cfg.MaxReadAhead
	if ra <= 0 {
		ra = MaxRead
	}
	st := &mountState{uid: cfg.UID, gid: cfg.GID, archiveSize: cfg.ArchiveSize, timeout: timeout, root: root, listAttrs: cfg.ListAttrs}
	if cfg.Files > 0 {
		st.countOnce.Do(func() { st.count = cfg.Files })
	}
	mopts, allowOther, rootToo := mountOptions(cfg.Options)
	st.rootToo = rootToo
	// Root with CAP_SYS_ADMIN mounts with mount(2) itself and needs no
	// fusermount3; a handed device is mounted already.
	_, handed := FDMountpoint(dir)
	direct := !handed && CanMountDirectly()
	var flags uintptr
	if direct {
		flags, mopts = mountFlags(mopts)
	}
	opts := &fuse.MountOptions{
		FsName:            cfg.Source,
		Name:              FSType,
		Options:           mopts,
		DirectMountStrict: direct,
		DirectMountFlags:  flags,
		AllowOther:        allowOther || st.rootToo,
		MaxWrite:          MaxRead, // also sets max_read and max_pages
		MaxReadAhead:      ra,
		Debug:             cfg.Debug,
		Logger:            logger,
		// Plain readdir for big listings unless the caller stats
		// the entries (ls -l): the kernel decides per request, unless
		// every listing is to carry attributes (ListAttrs). Folders of
		// a tree that never changes open without a request (see
		// server.OpenDir).
		ExtraCapabilities: fuse.CAP_READDIRPLUS_AUTO | fuse.CAP_NO_OPENDIR_SUPPORT,
	}
	if cfg.ListAttrs {
		opts.ExtraCapabilities &^= fuse.CAP_READDIRPLUS_AUTO
	}
	raw := newServer(st)
	s := &Server{st: st, dir: dir}
	var err error
	if cfg.Local && st.finder != nil && !cfg.Debug {
		err = s.serveItself(raw, opts)
	} else {
		err = s.serveWithGoFuse(raw, opts)
	}
	if err != nil {
		return nil, err
	}
	if _, ok := FDMountpoint(dir); ok {
		s.stopped = make(chan struct{})
	}
	return s, nil
}

// serveWithGoFuse mounts and serves with go-fuse's readers.
func (s *Server) serveWithGoFuse(raw *server, opts *fuse.MountOptions) error {
	srv, err := fuse.NewServer(raw, s.dir, opts)
	if err != nil {
		return err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return err
	}
	s.srv = srv
	return nil
}

// serveItself mounts the device for the server's own loop (see loop):
// go-fuse answers the kernel's INIT on it, as on a handed device, and
// writes the server's notifications; the loop reads and answers every
// other request.
func (s *Server) serveItself(raw *server, opts *fuse.MountOptions) error {
	fd, handed := FDMountpoint(s.dir)
	if !handed {
		var err error
		if fd, err = mountDevice(s.dir, opts); err != nil {
			return err
		}
	}
	o := *opts
	o.DirectMountStrict = false // mounted: go-fuse takes it as handed
	srv, err := fuse.NewServer(raw, "/dev/fd/"+strconv.Itoa(fd), &o)
	if err != nil {
		// go-fuse has closed the device.
		if !handed {
			LazyUnmount(s.dir)
		}
		return err
	}
	s.srv = srv
	s.loop = newLoop(raw, fd, o.Logger)
	go s.loop.serve()
	return nil
}

// mountOptions sorts the -o options into those passed on as they are
// (always "ro"; allow_other is go-fuse's to pass), whether anyone may
// enter, and whether root may too. fusermount3 does not know allow_root:
// such a mount gets allow_other, the server refuses users other than
// root and the owner (mountState.rootToo), and default_permissions has
// the kernel check the modes.
func mountOptions(options []string) (mopts []string, allowOther, rootToo bool) {
	mopts = []string{"ro"}
	for _, o := range options {
		switch o {
		case "allow_root":
			rootToo = true
		case "allow_other":
			allowOther = true
		case "ro":
			// always there
		default:
			mopts = append(mopts, o)
		}
	}
	if allowOther {
		rootToo = false
	}
	if rootToo && !slices.Contains(mopts, "default_permissions") {
		mopts = append(mopts, "default_permissions")
	}
	return mopts, allowOther, rootToo
}

// Stats are what a Server has answered since it was mounted.
type Stats struct {
	Reads  int64 // reads answered with data
	Pushes int64 // small files put in the page cache unasked (see PushMax)
	Bytes  int64 // the bytes of both
	// Requests counts the requests the kernel sent, by kind (FUSE's
	// names in lower case: "lookup", "getattr", "ioctl", "read",
	// "readdirplus", ...; kinds never sent are left out), and under
	// "forget" the nodes it forgot.
	Requests map[string]int64
}

// Stats reports what the server has answered so far.
func (s *Server) Stats() Stats {
	return Stats{Reads: s.st.reads.Load(), Bytes: s.st.bytes.Load(), Pushes: s.st.pushes.Load(),
		Requests: s.st.requests.snapshot()}
}

// Wait returns when the file system is unmounted, or for a handed FUSE
// device, when Unmount stops serving it.
func (s *Server) Wait() {
	if s.loop == nil && s.stopped == nil {
		s.srv.Wait()
		return
	}
	done := make(chan struct{})
	if s.loop != nil {
		done = s.loop.done
	} else {
		go func() {
			s.srv.Wait()
			close(done)
		}()
	}
	select {
	case <-done:
	case <-s.stopped:
	}
}

// Unmount unmounts; it fails (EBUSY) while files are open, unless lazy,
// which detaches the mount now and lets open files finish. A handed FUSE
// device cannot be unmounted here: Unmount makes Wait return, and once
// this process has exited (closing the device) the folder answers ENOTCONN
// until whoever mounted it unmounts it.
func (s *Server) Unmount(lazy bool) error {
	if s.stopped != nil {
		s.stopOnce.Do(func() { close(s.stopped) })
		return nil
	}
	if s.loop != nil {
		if err := unmount(s.dir, lazy); err != nil || lazy {
			return err
		}
		<-s.loop.done // as go-fuse's Unmount, return once no longer serving
		return nil
	}
	if !lazy {
		return s.srv.Unmount()
	}
	return LazyUnmount(s.dir)
}

// LazyUnmount detaches the mount at dir: it disappears from the namespace
// at once and goes away when the last open file closes. It also clears a
// mount whose daemon died ("transport endpoint is not connected").
func LazyUnmount(dir string) error {
	return unmount(dir, true)
}

// Unmount unmounts dir, which must not be busy.
func Unmount(dir string) error {
	return unmount(dir, false)
}

func unmount(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		err := syscall.Unmount(dir, flags)
		if err == nil || !errors.Is(err, syscall.EPERM) {
			return err
		}
	}
	bin, err := fusermount()
	if err != nil {
		return err
	}
	args := []string{"-u", "-q"}
	if lazy {
		args = append(args, "-z")
	}
	args = append(args, "--", dir)
	out, err := execOutput(bin, args...)
	if err != nil {
		if msg := strings.TrimSpace(lastLine(out)); msg != "" {
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %v", bin, err)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
