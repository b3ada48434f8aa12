package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/npzfs/npzfs/dataset"
	"io"
	iofs "io/fs"
	"log"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/folder"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"github.com/npzfs/npzfs/npz"
)

const mountHelp = `Mounts ARCHIVE (a NumPy .npz file) read-only on MOUNTPOINT, an existing
folder. Each member appears byte for byte (images.npy), and each .npy member
also as a folder of views: images/header.json and images/raw.bin (the array
data alone, ready for mmap), and beside it as images.ra (RawArray: a header
of 64-bit integers, then the data).

ARCHIVE may be a folder: every .npz file under it is then a folder
NAME.npz/ holding that archive's tree, and every .npy file NAME.npy with
its views; sub-folders are kept, other files left out. Archives are opened
on first use, and at most --max-open of them stay open once none of their
files is in use. An archive that cannot be read is a folder holding only
npzfs-error.txt, which says why, and so is a sub-folder that cannot be
listed. Symbolic links are followed, except to a folder they are in (or
one holding it) and into npzfs mounts: those are left out, and logged.
Files added, removed or replaced in the folder appear, vanish or change
within a second; reads of a replaced archive's old files fail. ARCHIVE may
also be a bare .npy file (known by its magic): it is served as an archive
of that one array.

ARCHIVE may be remote: https://host/path/data.npz (or http://; a presigned
URL works as it is) or s3://BUCKET/KEY.npz, read by byte range: the mount
fetches the archive's tail, then only the bytes that are read, in 256 KiB
blocks kept in memory (--remote-cache-mb), ahead of sequential readers;
with --disk-cache DIR on disk too, keyed by the object's ETag, version and
date, so a later mount of the unchanged object fetches only its tail.
S3 takes every credential the AWS SDK does (environment, AWS_PROFILE and
the shared files, SSO, web identity, instance and container roles);
--endpoint (or AWS_ENDPOINT_URL_S3) for S3-compatible servers. If the
object changes while mounted, reads of bytes not yet fetched fail with an
I/O error. URLs are shown without their query string, headers never.

A deflated member (np.savez_compressed) is inflated from its start the
first time it is read deep; the index made on the way (a checkpoint every
512 KiB) is saved in --index-dir once the member has been read to its end,
so later mounts of the archive, or of a copy of it, read anywhere at once.
"npzfs index ARCHIVE" builds them ahead of time, on every core; with
--index the mount builds them in the background once it is live, at the
lowest CPU priority (a read waits for no more than one span of it).
--no-index leaves no trace on disk.

The daemon keeps to one memory target, --memory-mb (512 MiB, or 7/8 of
the memory limit of its cgroup where that is less): the span cache, the
indexes' checkpoints and a remote archive's blocks are shares of it
unless given (1/32, 1/8, 1/2), and it is Go's soft memory limit unless
GOMEMLIMIT sets one.

By default npzfs mount returns once the mount is live, leaving a daemon
(its own session, working directory /) that serves it until
"npzfs unmount MOUNTPOINT" or SIGINT/SIGTERM. If the mount cannot be made,
it prints one line saying why and leaves no mount and no daemon behind.

Daemon messages: with --log FILE they are appended to FILE (which also
receives the daemon's stdout and stderr). Without --log they go to syslog
(facility daemon, tag "npzfs") when a syslog socket answers, and otherwise
to $XDG_STATE_HOME/npzfs/npzfs.log (~/.local/state/npzfs/npzfs.log). With
-f they go to stderr, or to FILE with --log. A mount that succeeds says in
one line when some members cannot be served or read.

Mount options (-o, comma-separated, repeatable): allow_other, allow_root,
default_permissions, nosuid, nodev, noexec, exec, suid, dev, noatime, atime,
ro. "rw" is refused: npzfs is read-only. allow_other lets every user
read the mount; allow_root lets root in besides you (files then show as
0400 and folders 0500, and the kernel checks them). Both need
user_allow_other in /etc/fuse.conf for a non-root user. Every flag below
but -f and -o can be given as an option too, with "_" or "-": -o
cache_mb=256,log=/var/log/npzfs.log,debug (a flag given as a flag wins).

From mount(8) and /etc/fstab, as type fuse.npzfs (npzfs must be on
mount's PATH, /usr/local/bin or /usr/bin):
  mount -t fuse.npzfs /data/run.npz /mnt/run -o ro,allow_other
  /data/run.npz  /mnt/run  fuse.npzfs  ro,noauto,user,cache_mb=256  0 0
mount(8)'s own options (rw, its default; dev, suid, user, noauto, nofail,
_netdev, x-*) are accepted there and mean nothing more to npzfs.

Exit codes: 0 mounted (with -f: unmounted cleanly after a signal or
"npzfs unmount"), 1 the mount failed, 2 bad command line.`

// allowedOptions are the -o options passed through to the mount.
var allowedOptions = map[string]bool{
	"allow_other": true, "allow_root": true, "default_permissions": true,
	"nosuid": true, "nodev": true, "noexec": true, "exec": true, "suid": true,
	"dev": true, "noatime": true, "atime": true, "ro": true,
}

func init() {
	register("mount", &command{
		summary: "mount an archive as a read-only folder",
		usage:   "[flags] ARCHIVE MOUNTPOINT",
		help:    mountHelp,
		run:     runMount,
	})
}

type mountArgs struct {
	archive, mountpoint string
	foreground          bool
	debug               bool
	options             []string
	logFile             string
	memoryMB            int
	cacheMB             int
	indexMB             int
	readAheadKB         int
	maxHeaderKB         int
	maxOpen             int
	readyFD             int // daemon mode: report readiness on this fd
	remoteCacheMB       int
	remote              remoteFlags
	index               indexFlags
	buildIndex          bool
}

func runMount(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mount", stdout, stderr)
	var ma mountArgs
	var opts []string
	fl.BoolVarP(&ma.foreground, "foreground", "f", false, "stay attached: serve until SIGINT/SIGTERM or unmount, log to stderr")
	fl.BoolVar(&ma.debug, "debug", false, "log every FUSE request and reply")
	fl.StringArrayVarP(&opts, "options", "o", nil, "pass mount options `OPT[,OPT]` through (see above)")
	fl.StringVar(&ma.logFile, "log", "", "append the daemon's messages to `FILE`")
	fl.IntVar(&ma.memoryMB, "memory-mb", 0, "the daemon's memory target, in `MiB`: the caches below not given are shares of it, and it is Go's soft memory limit (default 512, or 7/8 of the cgroup's memory limit where that is less)")
	fl.IntVar(&ma.cacheMB, "cache-mb", 0, "memory for inflated spans of deflated members, in `MiB` (default 1/32 of --memory-mb)")
	fl.IntVar(&ma.indexMB, "index-mb", 0, "memory for the indexes of deflated members (their checkpoints), in `MiB`: past it, deep random reads of large members get slower, not memory larger (default 1/8 of --memory-mb)")
	fl.IntVar(&ma.readAheadKB, "readahead-kb", npzfs.MaxRead>>10, "kernel readahead for the mount in `KiB` (root only; 0 keeps the kernel's 128)")
	fl.IntVar(&ma.maxHeaderKB, "max-header-kb", npz.DefaultMaxHeaderLen>>10, "longest npy header read, in `KiB`: arrays with longer headers are served without views")
	fl.IntVar(&ma.maxOpen, "max-open", folder.DefaultMaxOpen, "for a folder: archives kept open when no file of theirs is in use")
	fl.IntVar(&ma.remoteCacheMB, "remote-cache-mb", 0, "for a remote archive: memory for fetched blocks, in `MiB` (default 1/2 of --memory-mb)")
	ma.remote.add(fl)
	ma.index.add(fl, true)
	fl.BoolVar(&ma.buildIndex, "index", false, "once the mount is live, index every deflated member in the background, at the lowest CPU priority, so deep reads become fast without waiting (and save the indexes)")
	fl.IntVar(&ma.readyFD, "ready-fd", 0, "internal: report readiness on this fd")
	fl.MarkHidden("ready-fd")
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 2 {
		return argsError(stderr, "mount", fl.Args(), 2, "ARCHIVE and MOUNTPOINT")
	}
	ma.archive, ma.mountpoint = fl.Arg(0), fl.Arg(1)
	var flagOpts [][2]string
	for _, o := range opts {
		for _, opt := range strings.Split(o, ",") {
			opt = strings.TrimSpace(opt)
			switch {
			case opt == "":
			case opt == "rw":
				return usageError(stderr, "mount", `mount option "rw" is refused: npzfs is read-only`)
			case allowedOptions[opt]:
				ma.options = append(ma.options, opt)
			default:
				name, value, ok, err := flagOption(fl, opt)
				if err != nil {
					return usageError(stderr, "mount", err.Error())
				}
				if !ok {
					return usageError(stderr, "mount", fmt.Sprintf("unsupported mount option %q", opt))
				}
				flagOpts = append(flagOpts, [2]string{name, value})
			}
		}
	}
	// Flags given as options (-o cache_mb=256, as fstab lines give them);
	// a flag given as a flag wins.
	for _, nv := range flagOpts {
		if fl.Changed(nv[0]) {
			continue
		}
		if err := fl.Set(nv[0], nv[1]); err != nil {
			return usageError(stderr, "mount", fmt.Sprintf("mount option %s=%s: %v", strings.ReplaceAll(nv[0], "-", "_"), nv[1], err))
		}
	}
	if ma.readAheadKB < 0 {
		return usageError(stderr, "mount", "--readahead-kb must not be negative")
	}
	if ma.maxHeaderKB < 1 {
		return usageError(stderr, "mount", "--max-header-kb must be at least 1")
	}
	for _, f := range []string{"memory-mb", "cache-mb", "index-mb", "remote-cache-mb"} {
		if v, _ := fl.GetInt(f); fl.Changed(f) && v < 1 {
			return usageError(stderr, "mount", "--"+f+" must be at least 1")
		}
	}
	if ma.maxOpen < 1 {
		return usageError(stderr, "mount", "--max-open must be at least 1")
	}
	if _, err := ma.memory(); err != nil {
		return usageError(stderr, "mount", err.Error())
	}
	if err := ma.remote.check(); err != nil {
		return usageError(stderr, "mount", err.Error())
	}
	if err := ma.index.check(); err != nil {
		return usageError(stderr, "mount", err.Error())
	}

	if ma.readyFD > 0 {
		return runDaemon(&ma)
	}
	if ma.foreground {
		var logw io.Writer = stderr
		if ma.logFile != "" {
			f, err := os.OpenFile(ma.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				return fail(stderr, "mount", fmt.Errorf("cannot open the log file: %v", err))
			}
			defer f.Close()
			logw = f
		}
		logger := log.New(logw, "npzfs: ", log.LstdFlags)
		err := serve(&ma, logger, func(st mountStatus) {
			logger.Printf("serving %s on %s (Ctrl-C to unmount)", st.archive, st.mountpoint)
			for _, w := range st.warnings() {
				fmt.Fprintf(stderr, "npzfs mount: %s\n", w)
			}
			if ma.logFile != "" {
				// From now on the Go runtime's own output (a panic, the
				// goroutine dump of SIGQUIT) goes to the log too, not
				// to the terminal.
				redirectStderr(logw.(*os.File))
			}
		})
		if err != nil {
			return fail(stderr, "mount", err)
		}
		return exitOK
	}
	return startDaemon(&ma, args, stderr)
}

// memory is the daemon's memory target and budgets, from the flags.
func (ma *mountArgs) memory() (dataset.Memory, error) {
	return dataset.PlanMemory(dataset.Memory{Target: int64(ma.memoryMB) << 20, SpanCache: int64(ma.cacheMB) << 20,
		Indexes: int64(ma.indexMB) << 20, Remote: int64(ma.remoteCacheMB) << 20})
}

// startDaemon re-runs this program detached (setsid) with --ready-fd and
// waits for its one line on the pipe: "ok", or why the mount failed.
func startDaemon(ma *mountArgs, args []string, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		return fail(stderr, "mount", fmt.Errorf("cannot find the npzfs program to start the daemon: %v", err))
	}
	var out *os.File // the daemon's stdout and stderr; nil is /dev/null
	if ma.logFile != "" {
		out, err = os.OpenFile(ma.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fail(stderr, "mount", fmt.Errorf("cannot open the log file: %v", err))
		}
		defer out.Close()
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail(stderr, "mount", err)
	}
	defer r.Close()
	dargs, env := daemonArgs(args, ma.archive, ma.remote.headers)
	cmd := exec.Command(exe, append([]string{"mount", "--ready-fd=3"}, dargs...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = []*os.File{w}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Ctrl-C while waiting reaches only us (the daemon has its own
	// session): pass it on, so the daemon gives up or unmounts at once.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	if err := cmd.Start(); err != nil {
		w.Close()
		return fail(stderr, "mount", fmt.Errorf("cannot start the daemon: %v", err))
	}
	w.Close()
	var interrupted atomic.Bool
	go func() {
		if _, ok := <-sigc; ok {
			interrupted.Store(true)
			cmd.Process.Signal(syscall.SIGTERM)
		}
	}()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	if st, ok := parseReady(line); ok && !interrupted.Load() {
		cmd.Process.Release()
		if st.logCreated != "" {
			fmt.Fprintf(stderr, "npzfs mount: no syslog answers here: the daemon's messages go to %s\n", st.logCreated)
		}
		for _, w := range st.warnings() {
			fmt.Fprintf(stderr, "npzfs mount: %s\n", w)
		}
		return exitOK
	}
	werr := cmd.Wait()
	if interrupted.Load() {
		line = "interrupted; nothing was left mounted"
	} else if line == "" {
		line = fmt.Sprintf("the daemon exited before mounting (%v); run with -f to see why", werr)
	}
	fmt.Fprintf(stderr, "npzfs mount: %s\n", line)
	return exitFail
}

// runDaemon is the detached process: it serves and tells the parent how
// the mount went.
func runDaemon(ma *mountArgs) int {
	fromDaemonEnv(ma)
	syscall.CloseOnExec(ma.readyFD)
	ready := os.NewFile(uintptr(ma.readyFD), "ready")
	signal.Ignore(syscall.SIGHUP)
	var logger *log.Logger
	prefix := fmt.Sprintf("npzfs[%d]: ", os.Getpid())
	logCreated := ""
	if ma.logFile != "" {
		// The parent opened the file as our stderr.
		logger = log.New(os.Stderr, prefix, log.LstdFlags)
	} else if sl, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "npzfs"); err == nil {
		defer sl.Close()
		logger = log.New(sl, "", 0)
	} else if f, created, err := openStateLog(); err == nil {
		defer f.Close()
		logger = log.New(f, prefix, log.LstdFlags)
		redirectStderr(f) // a panic or SIGQUIT's dump lands there too
		if created {
			logCreated = f.Name()
		}
	} else {
		logger = log.New(io.Discard, "", 0)
	}
	err := serve(ma, logger, func(st mountStatus) {
		// Logged first, so the log says so once npzfs mount returns.
		logger.Printf("serving %s on %s", st.archive, st.mountpoint)
		st.logCreated = logCreated
		fmt.Fprintln(ready, st.readyLine())
		ready.Close()
	})
	if err != nil {
		logger.Printf("mount failed: %v", err)
		fmt.Fprintln(ready, oneLine(err.Error()))
		ready.Close()
		return exitFail
	}
	return exitOK
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// indexInBackground indexes the archive's deflated members one after the
// other (npz.Member.BuildIndex), on a thread of the lowest CPU priority,
// until done or ctx ends; reads of the mount wait for no more than a span
// of it.
func indexInBackground(ctx context.Context, a *npz.Archive, logger *log.Logger) {
	runtime.LockOSThread() // the thread dies with the goroutine
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19); err != nil {
		logger.Printf("background indexing: cannot lower its priority: %v", err)
	}
	start := time.Now()
	var n, failed int
	var bytes int64
	for _, m := range a.Members() {
		if m.Method() != 8 || !m.Served() || m.IsDir() || m.Size() == 0 {
			continue
		}
		if err := m.BuildIndex(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			failed++
			logger.Printf("background indexing: %s: %v", m.Name(), err)
			continue
		}
		n++
		bytes += m.Size()
	}
	if n+failed > 0 {
		logger.Printf("background indexing: %d deflated members (%.1f MiB) indexed in %.1f s; %d failed", n, float64(bytes)/(1<<20), time.Since(start).Seconds(), failed)
	}
}

// serve checks everything, mounts, calls ready with how the mount went
// (members that cannot be read) once it is live, and serves until
// unmounted (by npzfs unmount, or here on SIGINT/SIGTERM).
func serve(ma *mountArgs, logger *log.Logger, ready func(mountStatus)) error {
	// Catch the signals before mounting: one that arrives while the mount
	// is being made is handled (unmount, exit 0) once it is live, rather
	// than killing the process and leaving a dead mount.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	remoteSource := isRemote(ma.archive)
	archive := shown(ma.archive) // what mount tables and logs show
	if !remoteSource {
		var err error
		if archive, err = filepath.Abs(ma.archive); err != nil {
			return err
		}
	}
	// Two mounts started together on one mount point must not both pass
	// the check below and stack: hold a lock on the mount point's folder
	// from the check until this mount is live (or has failed).
	unlock := lockMountpoint(ma.mountpoint)
	defer unlock()
	mnt, err := checkMountpoint(ma.mountpoint)
	if err != nil {
		return err
	}
	hidden := entriesIn(mnt)
	var fi os.FileInfo
	if !remoteSource {
		fi, err = os.Stat(archive)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("archive %s does not exist (check the path)", archive)
			}
			return fmt.Errorf("cannot read archive: %v", err)
		}
	}
	if err := checkFuse(); err != nil {
		return err
	}

	mem, err := ma.memory()
	if err != nil {
		return err
	}
	mem.SetMemoryLimit()
	opts := npz.Options{
		CacheBytes:   mem.SpanCache,
		IndexBytes:   mem.Indexes,
		MaxHeaderLen: ma.maxHeaderKB << 10,
		// A first read deep into a large deflated member has the
		// other cores index parts of it ahead.
		Helpers: runtime.NumCPU() - 1,
		Logf: func(format string, args ...any) {
			logger.Printf(format, args...)
		},
	}
	indexes, err := ma.index.open()
	if err != nil {
		// Indexes save time, nothing more: a folder that cannot be
		// made (no home, a read-only one) does not stop the mount.
		logger.Printf("%v; indexes of deflated members are not kept", err)
		indexes = nil
	}
	if indexes != nil {
		defer indexes.Close() // after the archive: waits for indexes being saved
		opts.Indexes = indexes
	}
	if !ma.index.none && !remoteSource && !fi.IsDir() {
		// A dataset may ship its indexes beside the archive.
		sc, err := npz.OpenIndexSidecar(npz.SidecarPath(archive))
		switch {
		case err == nil:
			defer sc.Close()
			opts.Sidecar = sc
		case !errors.Is(err, os.ErrNotExist):
			logger.Printf("%v; not used", err)
		}
	}
	var sv *served
	switch {
	case remoteSource:
		sv, err = serveRemote(ma.archive, opts, &ma.remote, mem.Remote)
	case fi.IsDir() && within(mnt, archive):
		return fmt.Errorf("cannot serve the folder %s on %s: the mount point is inside the folder (mount it elsewhere)", archive, mnt)
	case fi.IsDir():
		sv, err = serveFolder(archive, opts, ma.maxOpen, !ma.index.none)
	default:
		sv, err = serveArchive(archive, opts, nil)
	}
	if err != nil {
		return err
	}
	defer sv.close() // its problems are already in the log, through Logf

	srv, err := mountCapturingStderr(mnt, sv.root, npzfs.Config{
		Source:      archive,
		ArchiveSize: sv.size,
		Files:       sv.files,
		UID:         uint32(os.Getuid()),
		GID:         uint32(os.Getgid()),
		Options:     ma.options,
		Debug:       ma.debug,
		Logger:      logger,
	})
	if err != nil {
		// A mount made before a later step failed must not stay.
		if m, ok := mountinfo.Find(mnt); ok && m.FSType == "fuse."+npzfs.FSType && m.Source == archive {
			npzfs.LazyUnmount(mnt)
		}
		return err
	}
	// Hold no folder busy.
	os.Chdir("/")
	if ma.readAheadKB > 0 && os.Geteuid() == 0 {
		if err := setReadAhead(mnt, ma.readAheadKB); err != nil {
			logger.Printf("cannot set readahead: %v", err)
		}
	}

	self, _ := mountinfo.Find(mnt) // to know the mount once detached
	stop := make(chan struct{})
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		if detached(self) {
			// Nothing to unmount: files still open on it keep the
			// kernel's end alive, and only the daemon's exit ends it.
			logger.Printf("%v: %s was detached (lazy unmount): the files still open on it are served no more", s, mnt)
			close(stop)
			return
		}
		logger.Printf("%v: unmounting %s", s, mnt)
		// fusermount3's errors come over several lines: one line each.
		if err := srv.Unmount(false); err != nil {
			logger.Printf("unmount %s: %s; detaching it (lazy unmount)", mnt, oneLine(err.Error()))
			if err := srv.Unmount(true); err != nil {
				logger.Printf("lazy unmount %s: %s", mnt, oneLine(err.Error()))
			}
		}
	}()
	unlock()
	st := mountStatus{archive: archive, mountpoint: mnt, hidden: hidden}
	if sv.members != nil {
		st.members, st.unreadable = len(sv.members), unreadableMembers(sv.members)
		sv.members = nil
	}
	ready(st)
	logger.Print(mem)
	if ma.buildIndex && sv.a == nil {
		logger.Printf("--index: background indexing is for a single archive, not a folder; not done")
	}
	if ma.buildIndex && sv.a != nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			indexInBackground(ctx, sv.a, logger)
		}()
		defer func() { cancel(); <-done }()
	}
	served := make(chan struct{})
	go func() {
		srv.Wait()
		close(served)
	}()
	select {
	case <-served:
		logger.Printf("unmounted %s", mnt)
	case <-stop:
	}
	return nil
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

// served is what a mount serves: an archive's tree, or a folder's.
type served struct {
	root    npzfs.Entry
	a       *npz.Archive  // an archive's
	members []*npz.Member // its members, until the mount is live
	size    int64         // bytes of archives, for statfs
	files   uint64        // nodes, for statfs (df -i)
	close   func() error
}

// serveRemote serves a remote archive, its blocks cached in cacheBytes.
func serveRemote(url string, opts npz.Options, rf *remoteFlags, cacheBytes int64) (*served, error) {
	src, err := openRemote(context.Background(), url, rf, cacheBytes, opts.Logf)
	if err != nil {
		return nil, err
	}
	a, err := newRemoteArchive(src.Source, &opts)
	if err != nil {
		src.Close()
		var fe *npz.FormatError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s is not a readable .npz archive (%v)", src, fe)
		}
		return nil, err
	}
	o := &opened{Archive: a, src: src}
	ms := a.Members()
	return &served{root: dataset.FromNPZ(a.Root()), a: a, members: ms, size: a.Size(), files: fileCount(ms), close: o.Close}, nil
}

func serveArchive(path string, opts npz.Options, rf *remoteFlags) (*served, error) {
	a, err := openArchive(path, &opts, rf)
	if err != nil {
		var fe *npz.FormatError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s is not a readable .npz archive (%v)", shown(path), fe)
		}
		if isRemote(path) {
			return nil, err // says what and where
		}
		return nil, fmt.Errorf("cannot open archive: %v", err)
	}
	ms := a.Members()
	return &served{root: dataset.FromNPZ(a.Root()), a: a.Archive, members: ms, size: a.Size(), files: fileCount(ms), close: a.Close}, nil
}

// serveFolder serves the archives under dir (package folder). statfs's
// figures come from one walk of the folder, which opens no archive: the
// bytes of its archives, and its folders and archives plus four nodes a
// .npy file.
func serveFolder(dir string, opts npz.Options, maxOpen int, sidecars bool) (*served, error) {
	t, err := folder.Open(dir, &folder.Options{Archive: opts, MaxOpen: maxOpen, Sidecars: sidecars})
	if err != nil {
		return nil, fmt.Errorf("cannot open folder: %v", err)
	}
	sv := &served{root: t.Root(), files: 1, close: t.Close}
	filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		switch name := d.Name(); {
		case d.IsDir():
			sv.files++
		case strings.HasSuffix(name, ".npz"), strings.HasSuffix(name, ".npy"):
			if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
				sv.size += fi.Size()
				sv.files++
				if strings.HasSuffix(name, ".npy") {
					sv.files += uint64(len(npz.ViewNames()) + len(npz.BesideSuffixes()) + 1)
				}
			}
		}
		return nil
	})
	return sv, nil
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
	if m, ok := mountinfo.Find(real); ok {
		if m.FSType == "fuse."+npzfs.FSType {
			return "", fmt.Errorf("%s is already mounted (%s); unmount it first: npzfs unmount %s", real, m.Source, real)
		}
		return "", fmt.Errorf("%s is already a mount point (%s); unmount it first", real, m.FSType)
	}
	return real, nil
}

// checkFuse checks that this user can mount: root needs to open /dev/fuse;
// any other user needs it to exist and fusermount3 (setuid root) to open it.
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
	return nil
}

// fileCount estimates the served nodes for statfs (df -i) without reading
// any header: the root, each served member, and for each .npy member its
// folder, the views in it and those beside it.
func fileCount(members []*npz.Member) uint64 {
	n := uint64(1)
	perArray := uint64(1 + len(npz.ViewNames()) + len(npz.BesideSuffixes()))
	for _, m := range members {
		if !m.Served() {
			continue
		}
		n++
		if m.IsNPY() {
			n += perArray
		}
	}
	return n
}
