//go:build linux

package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/dataset"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/daemon"
	"github.com/npzfs/npzfs/memplan"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/tree"
)

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
	debug               bool
	options             []string
	memoryMB            int
	cacheMB             int
	indexMB             int
	readAheadKB         int
	maxHeaderKB         int
	verify              verifyFlag
	maxOpen             int
	remoteCacheMB       int
	remote              remoteFlags
	listTTL             time.Duration
	index               indexFlags
	buildIndex          bool
	listAttrs           bool
	life                lifeArgs
}

// lifeArgs are the flags of a daemon's life: how it starts, where it
// logs, and what ends it.
type lifeArgs struct {
	foreground bool
	readyFD    int // daemon mode: report readiness on this fd
	logFile    string
	logTarget  string // where the daemon's messages go, for npzfs status
	owner      int
	rmdir      bool
}

func runMount(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mount", stdout, stderr)
	var ma mountArgs
	var opts []string
	ma.addFlags(fl, &opts)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 2 {
		return argsError(stderr, "mount", fl.Args(), 2, "ARCHIVE and MOUNTPOINT")
	}
	ma.archive, ma.mountpoint = fl.Arg(0), fl.Arg(1)
	if err := ma.takeOptions(fl, opts); err != nil {
		return usageError(stderr, "mount", err.Error())
	}
	if err := ma.check(fl); err != nil {
		return usageError(stderr, "mount", err.Error())
	}
	if fd, handed := npzfs.FDMountpoint(ma.mountpoint); handed {
		if err := daemon.CheckHanded(fd); err != nil {
			return fail(stderr, "mount", err)
		}
	} else if ma.life.readyFD == 0 {
		// Resolved here, as the user means it: in this working folder,
		// and /proc/self as this process (a mount point the daemon
		// then refuses), not the daemon.
		mp, err := daemon.MountPath(ma.mountpoint)
		if err != nil {
			return fail(stderr, "mount", err)
		}
		args = replaceLast(args, ma.mountpoint, mp)
		ma.mountpoint = mp
	}
	switch {
	case ma.life.readyFD > 0:
		return runDaemon(&ma)
	case ma.life.foreground:
		return runForeground(&ma, stderr)
	}
	return startDaemon(&ma, args, stderr)
}

// replaceLast is args with the last one that is old (a positional
// argument, after any flag value alike) made new.
func replaceLast(args []string, old, new string) []string {
	out := slices.Clone(args)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] == old {
			out[i] = new
			break
		}
	}
	return out
}

// addFlags defines mount's flags on fl; -o's values go to opts.
func (ma *mountArgs) addFlags(fl *pflag.FlagSet, opts *[]string) {
	fl.BoolVarP(&ma.life.foreground, "foreground", "f", false, "stay attached: serve until SIGINT/SIGTERM or unmount, log to stderr")
	fl.BoolVar(&ma.debug, "debug", false, "log every FUSE request and reply")
	fl.StringArrayVarP(opts, "options", "o", nil, "pass mount options `OPT[,OPT]` through (see above)")
	fl.StringVar(&ma.life.logFile, "log", "", "append the daemon's messages to `FILE`")
	fl.IntVar(&ma.memoryMB, "memory-mb", 0, "the daemon's memory target, in `MiB`: the caches below not given are shares of it, and it is Go's soft memory limit (default 512, or 7/8 of the cgroup's memory limit where that is less); at most the machine's memory, as every memory flag")
	fl.IntVar(&ma.cacheMB, "cache-mb", 0, "memory for inflated spans of deflated members, in `MiB` (default 1/32 of --memory-mb)")
	fl.IntVar(&ma.indexMB, "index-mb", 0, "memory for the indexes of deflated members (their checkpoints), in `MiB`: past it, deep random reads of large members get slower, not memory larger (default 1/8 of --memory-mb)")
	fl.IntVar(&ma.readAheadKB, "readahead-kb", npzfs.MaxRead>>10, "kernel readahead for the mount in `KiB` (root only; 0 keeps the kernel's 128)")
	fl.IntVar(&ma.maxHeaderKB, "max-header-kb", npz.DefaultMaxHeaderLen>>10, "longest npy header read, in `KiB`: arrays with longer headers are served without views")
	fl.Var(&ma.verify, "verify", verifyUsage)
	fl.IntVar(&ma.maxOpen, "max-open", tree.DefaultMaxOpen, "for a folder: archives kept open when no file of theirs is in use")
	fl.IntVar(&ma.remoteCacheMB, "remote-cache-mb", 0, "for a remote archive or folder: memory for fetched blocks, in `MiB`, for all its archives, and a folder's listings (default 1/2 of --memory-mb)")
	fl.DurationVar(&ma.listTTL, "list-ttl", remote.DefaultListTTL, "for a remote folder (s3://BUCKET/PREFIX/, https://HOST/PATH/): how long a folder's listing is kept before it is listed again (`DURATION`: 60s, 5m, 0s to list at every look)")
	ma.remote.add(fl)
	ma.index.add(fl, true)
	fl.BoolVar(&ma.listAttrs, "list-attrs", false, "every listing gives the kernel the attributes of the files it lists, so that opening a file after a listing (os.listdir, ls) makes no lookup: about a third less time for each small array np.load reads after it, at a few µs more a listing for each file listed (the kernel makes an inode for it)")
	fl.BoolVar(&ma.buildIndex, "index", false, "once the mount is live, index every deflated member in the background, at the lowest CPU priority, so deep reads become fast without waiting (and save the indexes)")
	fl.IntVar(&ma.life.owner, "owner", 0, "unmount once process `PID` exits, however it ends (npzfs.mount gives its Python's)")
	fl.BoolVar(&ma.life.rmdir, "rmdir", false, "remove MOUNTPOINT, an empty folder made for the mount, once it is unmounted (npzfs.mount's temporary folder)")
	fl.IntVar(&ma.life.readyFD, "ready-fd", 0, "internal: report readiness on this fd")
	fl.MarkHidden("ready-fd")
}

// takeOptions takes -o's values: mount options passed through, or flags
// given as options (-o cache_mb=256, as fstab lines give them), which a
// flag given as a flag overrides.
func (ma *mountArgs) takeOptions(fl *pflag.FlagSet, opts []string) error {
	var flagOpts [][2]string
	for _, o := range opts {
		for _, opt := range strings.Split(o, ",") {
			opt = strings.TrimSpace(opt)
			switch {
			case opt == "":
			case opt == "rw":
				return errors.New(`mount option "rw" is refused: npzfs is read-only`)
			case allowedOptions[opt]:
				ma.options = append(ma.options, opt)
			default:
				name, value, ok, err := flagOption(fl, opt)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("unsupported mount option %q%s", opt, suggestOption(fl, opt))
				}
				flagOpts = append(flagOpts, [2]string{name, value})
			}
		}
	}
	for _, nv := range flagOpts {
		if fl.Changed(nv[0]) {
			continue
		}
		if err := fl.Set(nv[0], nv[1]); err != nil {
			return fmt.Errorf("mount option %s=%s: %v", strings.ReplaceAll(nv[0], "-", "_"), nv[1], err)
		}
	}
	return nil
}

// check refuses flag values that cannot work, in one line.
func (ma *mountArgs) check(fl *pflag.FlagSet) error {
	switch {
	case ma.readAheadKB < 0:
		return errors.New("--readahead-kb must not be negative")
	case ma.maxOpen < 1:
		return errors.New("--max-open must be at least 1")
	case ma.listTTL < 0:
		return errors.New("--list-ttl must not be negative")
	case ma.life.owner < 0:
		return errors.New("--owner must be a process id")
	}
	if err := checkSize("max-header-kb", ma.maxHeaderKB); err != nil {
		return err
	}
	if err := checkMemoryFlags(fl); err != nil {
		return err
	}
	if _, err := ma.memory(); err != nil {
		return err
	}
	if ma.life.logFile != "" {
		// Named absolute while the caller's folder is this process's
		// (the daemon serves from /), for status to show.
		abs, err := filepath.Abs(ma.life.logFile)
		if err != nil {
			return err
		}
		ma.life.logFile = abs
	}
	if err := ma.remote.check(); err != nil {
		return err
	}
	return ma.index.check()
}

// runForeground serves in this process (-f), logging to stderr or --log.
func runForeground(ma *mountArgs, stderr io.Writer) int {
	var logw io.Writer = stderr
	if ma.life.logFile != "" {
		f, err := os.OpenFile(ma.life.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fail(stderr, "mount", fmt.Errorf("cannot open the log file: %v", err))
		}
		defer f.Close()
		logw = f
	}
	logger := log.New(logw, "npzfs: ", log.LstdFlags)
	if ma.life.logFile != "" {
		if err := daemon.CheckLog(logger, ma.life.logFile, ma.archive, ma.mountpoint); err != nil {
			return fail(stderr, "mount", err)
		}
	}
	ma.life.logTarget = cmp.Or(ma.life.logFile, "stderr")
	err := ma.serve(logger, func(r daemon.Ready) {
		st := mountStatus{Ready: r, indexDir: ma.givenIndexDir()}
		logger.Printf("serving %s on %s (Ctrl-C to unmount)", st.Source, st.Mountpoint)
		for _, w := range st.warnings() {
			fmt.Fprintf(stderr, "npzfs mount: %s\n", w)
		}
		if ma.life.logFile != "" {
			// From now on the Go runtime's own output (a panic, the
			// goroutine dump of SIGQUIT) goes to the log too, not to
			// the terminal.
			daemon.RedirectStderr(logw.(*os.File))
		}
	})
	if err != nil {
		return fail(stderr, "mount", err)
	}
	return exitOK
}

// givenIndexDir is the index folder (made absolute by indexFlags.check)
// when it is not the default one, for the unindexed note; else "".
func (ma *mountArgs) givenIndexDir() string {
	if ma.index.none || ma.index.dir == defaultIndexDir() {
		return ""
	}
	return ma.index.dir
}

// memory is the daemon's memory target and budgets, from the flags.
func (ma *mountArgs) memory() (memplan.Plan, error) {
	return memplan.Make(memplan.Plan{Target: int64(ma.memoryMB) << 20, SpanCache: int64(ma.cacheMB) << 20,
		Indexes: int64(ma.indexMB) << 20, Remote: int64(ma.remoteCacheMB) << 20})
}

// startDaemon re-runs this program detached (daemon.Start) with
// --ready-fd and waits for its report: the mount live, or why not.
func startDaemon(ma *mountArgs, args []string, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		return fail(stderr, "mount", fmt.Errorf("cannot find the npzfs program to start the daemon: %v", err))
	}
	dargs, env := daemonArgs(args, ma.archive, ma.remote.headers)
	dargs = append([]string{"mount", fmt.Sprintf("--ready-fd=%d", daemon.ReadyFD)}, dargs...)
	started, err := daemon.Start(exe, dargs, env, ma.life.logFile, ma.mountpoint)
	if err != nil {
		return fail(stderr, "mount", err)
	}
	// A mount that takes a while says what it waits for, once.
	r, err := started.Wait(func() {
		fmt.Fprintf(stderr, "npzfs mount: still opening %s (Ctrl-C gives up)\n", dataset.Redact(ma.archive))
	})
	if err != nil {
		fmt.Fprintf(stderr, "npzfs mount: %v\n", err)
		return exitFail
	}
	if r.LogCreated != "" {
		fmt.Fprintf(stderr, "npzfs mount: no syslog answers here: the daemon's messages go to %s\n", r.LogCreated)
	}
	st := mountStatus{Ready: r, indexDir: ma.givenIndexDir()}
	for _, w := range st.warnings() {
		fmt.Fprintf(stderr, "npzfs mount: %s\n", w)
	}
	return exitOK
}

// runDaemon is the detached process: it serves and tells the parent how
// the mount went.
func runDaemon(ma *mountArgs) int {
	fromDaemonEnv(ma)
	d := daemon.Detach(ma.life.readyFD, ma.life.logFile)
	defer d.Close()
	ma.life.logTarget = d.Target
	if err := daemon.CheckLog(d.Logger, d.Target, ma.archive, ma.mountpoint); err != nil {
		d.Failed(err)
		return exitFail
	}
	err := ma.serve(d.Logger, func(r daemon.Ready) {
		// Logged first, so the log says so once npzfs mount returns.
		d.Logger.Printf("serving %s on %s", r.Source, r.Mountpoint)
		d.Live(r)
	})
	if err != nil {
		d.Logger.Printf("mount failed: %v", err)
		d.Failed(err)
		return exitFail
	}
	return exitOK
}

// serve sets the process's memory limit and serves the mount as the
// flags say (daemon.Serve), logging to logger; ready is told how the
// mount went once it is live.
func (ma *mountArgs) serve(logger *log.Logger, ready func(daemon.Ready)) error {
	mem, err := ma.memory()
	if err != nil {
		return err
	}
	opts, err := ma.datasetOptions(mem, logger)
	if err != nil {
		return err
	}
	memplan.SetMemoryLimit(mem)
	return daemon.Serve(&daemon.Config{
		Source: ma.archive, Mountpoint: ma.mountpoint, Dataset: opts, Memory: mem, MaxOpen: ma.maxOpen,
		MountOptions: ma.options, Debug: ma.debug, ReadAheadKB: ma.readAheadKB, Index: ma.buildIndex, ListAttrs: ma.listAttrs,
		Options: ma.shownOptions(), Log: ma.life.logTarget, Logger: logger, Owner: ma.life.owner, RemoveMountpoint: ma.life.rmdir,
	}, func(r daemon.Ready) {
		ready(r)
		logger.Print(mem)
	})
}

// datasetOptions are what the flags ask of the dataset a mount serves.
func (ma *mountArgs) datasetOptions(mem memplan.Plan, logger *log.Logger) (*dataset.Options, error) {
	ro, err := ma.remote.options(mem.Remote)
	ro.ListTTL = ma.listTTL
	if ro.ListTTL == 0 {
		ro.ListTTL = -1 // every look lists again
	}
	if err != nil {
		return nil, err
	}
	o := &dataset.Options{
		Archive: npz.Options{
			CacheBytes:   mem.SpanCache,
			IndexBytes:   mem.Indexes,
			MaxHeaderLen: ma.maxHeaderKB << 10,
			Verify:       ma.verify.mode,
			// A first read deep into a large deflated member has the
			// other cores index parts of it ahead (all members' helpers
			// together are bounded by inflate.DefaultHelperBudget).
			Helpers: runtime.GOMAXPROCS(0) - 1,
			Logf:    logger.Printf,
		},
		Remote: ro,
	}
	if !ma.index.none {
		o.IndexDir, o.IndexCacheBytes, o.Sidecars = ma.index.dir, int64(ma.index.cacheMB)<<20, true
	}
	return o, nil
}

// shownOptions are the flags the mount was made with, as npzfs status
// shows them: without secrets (header values are counted, not shown).
func (ma *mountArgs) shownOptions() []string {
	out := []string{}
	add := func(flag string, v any, def any) {
		if v != def {
			out = append(out, fmt.Sprintf("--%s=%v", flag, v))
		}
	}
	if ma.debug {
		out = append(out, "--debug")
	}
	add("memory-mb", ma.memoryMB, 0)
	add("cache-mb", ma.cacheMB, 0)
	add("index-mb", ma.indexMB, 0)
	add("max-open", ma.maxOpen, tree.DefaultMaxOpen)
	add("remote-cache-mb", ma.remoteCacheMB, 0)
	add("max-header-kb", ma.maxHeaderKB, npz.DefaultMaxHeaderLen>>10)
	add("verify", ma.verify.mode, npz.VerifyAuto)
	add("readahead-kb", ma.readAheadKB, npzfs.MaxRead>>10)
	add("endpoint", ma.remote.endpoint, "")
	add("disk-cache", ma.remote.diskCache, "")
	add("disk-cache-mb", ma.remote.diskCacheMB, defaultDiskCacheMB)
	add("remote-timeout", ma.remote.timeout, remote.DefaultReadTimeout)
	add("stall-timeout", ma.remote.stall, remote.DefaultStallTimeout)
	add("list-ttl", ma.listTTL, remote.DefaultListTTL)
	if ma.index.none {
		out = append(out, "--no-index")
	} else {
		add("index-dir", ma.index.dir, defaultIndexDir())
		add("index-cache-mb", ma.index.cacheMB, defaultIndexCacheMB)
	}
	if ma.listAttrs {
		out = append(out, "--list-attrs")
	}
	if ma.buildIndex {
		out = append(out, "--index")
	}
	add("owner", ma.life.owner, 0)
	if ma.life.rmdir {
		out = append(out, "--rmdir")
	}
	if ma.remote.noSign {
		out = append(out, "--no-sign-request")
	}
	if n := len(ma.remote.headers); n > 0 {
		out = append(out, fmt.Sprintf("--header (%d, not shown)", n))
	}
	for _, o := range ma.options {
		out = append(out, "-o "+o)
	}
	return out
}

// daemonArgs are the daemon's arguments: args without --header (given
// in headerEnv instead) and with a URL's secrets replaced (the whole URL
// in sourceEnv), plus what to add to its environment.
func daemonArgs(args []string, archive string, headers []string) (out, env []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--header":
			i++
			continue
		case strings.HasPrefix(a, "--header="):
			continue
		case a == archive && dataset.Redact(a) != a:
			a = dataset.Redact(a)
			env = append(env, sourceEnv+"="+archive)
		}
		out = append(out, a)
	}
	if len(headers) > 0 {
		env = append(env, headerEnv+"="+strings.Join(headers, "\n"))
	}
	return out, env
}

// fromDaemonEnv restores in the daemon what daemonArgs moved to its
// environment (the headers remoteFlags.check took already), and clears
// it there.
func fromDaemonEnv(ma *mountArgs) {
	ma.archive = fromSourceEnv(ma.archive)
	os.Unsetenv(headerEnv)
	os.Unsetenv(sourceEnv)
}
