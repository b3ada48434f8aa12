package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/memplan"
	"github.com/npzfs/npzfs/npz"
	npzserve "github.com/npzfs/npzfs/serve"
)

func init() {
	register("serve", &command{
		summary: "answer reads of an archive's arrays on stdin and stdout",
		usage:   "--stdio [flags] ARCHIVE",
		help:    serveHelp,
		run:     runServe,
	})
}

// serveArgs are serve's flags.
type serveArgs struct {
	stdio                                     bool
	memoryMB, cacheMB, indexMB, remoteCacheMB int
	maxHeaderKB                               int
	verify                                    verifyFlag
	remote                                    remoteFlags
	index                                     indexFlags
}

func (sa *serveArgs) addFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&sa.stdio, "stdio", false, "read requests on stdin, reply on stdout")
	fl.IntVar(&sa.memoryMB, "memory-mb", 0, "the memory target, in `MiB` (default 512); it and the three below take at most the machine's memory")
	fl.IntVar(&sa.cacheMB, "cache-mb", 0, "memory for inflated spans, in `MiB` (1/32 of it)")
	fl.IntVar(&sa.indexMB, "index-mb", 0, "memory for checkpoints, in `MiB` (1/8 of it)")
	fl.IntVar(&sa.remoteCacheMB, "remote-cache-mb", 0, "for a URL: memory for blocks, in `MiB` (1/2 of it)")
	fl.IntVar(&sa.maxHeaderKB, "max-header-kb", npz.DefaultMaxHeaderLen>>10, "longest .npy header read, in `KiB`")
	fl.Var(&sa.verify, "verify", verifyUsage)
	sa.remote.add(fl)
	sa.index.add(fl, true)
}

// check refuses flag values that cannot work, in one line.
func (sa *serveArgs) check(fl *pflag.FlagSet) error {
	if !sa.stdio {
		return errors.New("give --stdio: the server answers on its stdin and stdout")
	}
	if err := checkSize("max-header-kb", sa.maxHeaderKB); err != nil {
		return err
	}
	if err := checkMemoryFlags(fl); err != nil {
		return err
	}
	if err := sa.remote.check(); err != nil {
		return err
	}
	return sa.index.check()
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("serve", stdout, stderr)
	var sa serveArgs
	sa.addFlags(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if err := sa.check(fl); err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	if fl.NArg() != 1 {
		return argsError(stderr, "serve", fl.Args(), 1, "ARCHIVE")
	}
	mem, err := memplan.Make(memplan.Plan{Target: int64(sa.memoryMB) << 20, SpanCache: int64(sa.cacheMB) << 20,
		Indexes: int64(sa.indexMB) << 20, Remote: int64(sa.remoteCacheMB) << 20})
	if err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	ro, err := sa.remote.options(mem.Remote)
	if err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	memplan.SetMemoryLimit(mem)
	logger := log.New(stderr, "npzfs serve: ", 0)
	opts := &dataset.Options{
		Archive: npz.Options{CacheBytes: mem.SpanCache, IndexBytes: mem.Indexes, MaxHeaderLen: sa.maxHeaderKB << 10,
			Verify: sa.verify.mode, Helpers: runtime.GOMAXPROCS(0) - 1, Logf: logger.Printf},
		Remote: ro,
	}
	if !sa.index.none {
		opts.IndexDir, opts.IndexCacheBytes, opts.Sidecars = sa.index.dir, int64(sa.index.cacheMB)<<20, true
	}
	ctx, stop := interruptible()
	defer stop()
	d, err := dataset.Open(ctx, fromSourceEnv(fl.Arg(0)), opts)
	if err != nil {
		return fail(stderr, "serve", err)
	}
	defer d.Close() // saves the indexes made
	if d.Kind() == dataset.Folder {
		return fail(stderr, "serve", fmt.Errorf("%s is a folder: serve takes one archive (.npz or .npy)", d.Name()))
	}
	stopFollowing := memplan.Follow(mem, func(p memplan.Plan) { d.SetBudgets(p.SpanCache, p.Indexes, p.Remote) })
	defer stopFollowing() // before the dataset is closed
	// A client gone makes writes fail (EPIPE), not kill the server
	// before it closes the archive.
	signal.Ignore(syscall.SIGPIPE)
	err = npzserve.Serve(ctx, d.Archive(), os.Stdin, stdout, &npzserve.Options{
		Server: "npzfs " + versionString(), Name: d.Name(), MaxHeaderLen: sa.maxHeaderKB << 10,
	})
	if err != nil {
		return fail(stderr, "serve", err)
	}
	return exitOK
}
