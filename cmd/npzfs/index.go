package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/indexer"
)

// indexFlags are the flags of the index cache, taken by mount and index.
type indexFlags struct {
	dir     string
	none    bool
	cacheMB int
}

// defaultIndexCacheMB bounds --index-dir.
const defaultIndexCacheMB = dataset.DefaultIndexCacheBytes >> 20

func (f *indexFlags) add(fl *pflag.FlagSet, withNone bool) {
	fl.StringVar(&f.dir, "index-dir", "", "keep the indexes of deflated members in `DIR` (default $XDG_CACHE_HOME/npzfs/index, or ~/.cache/npzfs/index)")
	fl.IntVar(&f.cacheMB, "index-cache-mb", defaultIndexCacheMB, "bound of the --index-dir folder, in `MiB` (the indexes used least recently go first)")
	if withNone {
		fl.BoolVar(&f.none, "no-index", false, "neither read nor write saved indexes")
	}
}

// check resolves the folder (absolute, for the daemon) and refuses bad
// values in one line.
func (f *indexFlags) check() error {
	if err := checkSize("index-cache-mb", f.cacheMB); err != nil {
		return err
	}
	if f.none {
		return nil
	}
	if f.dir == "" {
		f.dir = defaultIndexDir()
		if f.dir == "" {
			f.none = true // no home folder: nowhere to keep them
			return nil
		}
	}
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		return fmt.Errorf("--index-dir: %v", err)
	}
	f.dir = abs
	return nil
}

// defaultIndexDir is $XDG_CACHE_HOME/npzfs/index, else
// ~/.cache/npzfs/index, else "".
func defaultIndexDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "npzfs", "index")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "npzfs", "index")
	}
	return ""
}

func init() {
	register("index", &command{
		summary: "build the indexes of an archive's deflated members ahead of mounting",
		usage:   "[flags] ARCHIVE [KEY...] | FOLDER",
		help:    indexHelp,
		run:     runIndex,
	})
}

func runIndex(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("index", stdout, stderr)
	var xf indexFlags
	xf.add(fl, false)
	var xo indexer.Options
	fl.BoolVar(&xo.Verify, "verify", false, "read every member whole, checking saved indexes span by span")
	fl.IntVar(&xo.Workers, "workers", runtime.GOMAXPROCS(0), "inflate with `N` threads: members at once, and parts of a large member (1: each member from its start)")
	fl.BoolVar(&xo.Sidecar, "sidecar", false, "also write the indexes beside the archive, as ARCHIVE.npzidx (for a dataset to ship; mounts use it): a file beside a local archive, an object put beside an s3:// one (not rebuilt when one there holds them all)")
	fl.StringVar(&xo.SidecarFile, "sidecar-file", "", "for one archive: write its sidecar to `FILE` (for an http(s):// archive: to put beside it by hand)")
	var rf remoteFlags
	rf.add(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() < 1 {
		return argsError(stderr, "index", fl.Args(), 1, "ARCHIVE or FOLDER")
	}
	if err := xf.check(); err != nil {
		return usageError(stderr, "index", err.Error())
	}
	if err := rf.check(); err != nil {
		return usageError(stderr, "index", err.Error())
	}
	if xo.Workers < 1 {
		return usageError(stderr, "index", fmt.Sprintf("--workers %d: give 1 or more", xo.Workers))
	}
	if xf.none {
		return fail(stderr, "index", errors.New("no folder to keep indexes in: give --index-dir"))
	}
	target := fl.Arg(0)
	xo.Keys = fl.Args()[1:]
	if xo.Sidecar && xo.SidecarFile != "" {
		return usageError(stderr, "index", "give --sidecar or --sidecar-file, not both")
	}
	if xo.Sidecar && dataset.IsRemote(target) && !strings.HasPrefix(strings.ToLower(target), "s3://") {
		return usageError(stderr, "index", "an http(s):// server takes no upload: give --sidecar-file FILE, and put FILE beside the archive as ARCHIVE.npzidx by hand")
	}
	folder := dataset.IsRemoteFolder(target)
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		folder = true
	}
	if folder && len(xo.Keys) > 0 {
		return usageError(stderr, "index", "a KEY names a member of one archive, not of a folder")
	}
	if folder && xo.SidecarFile != "" {
		return usageError(stderr, "index", "--sidecar-file is for one archive: give --sidecar for a folder")
	}
	if xo.SidecarFile != "" {
		abs, err := filepath.Abs(xo.SidecarFile)
		if err != nil {
			return usageError(stderr, "index", err.Error())
		}
		xo.SidecarFile = abs
	}
	ro, err := rf.options(0)
	if err != nil {
		return usageError(stderr, "index", err.Error())
	}
	opts := &dataset.Options{IndexDir: xf.dir, IndexCacheBytes: int64(xf.cacheMB) << 20, Remote: ro}
	var p indexer.Progress
	ctx, cancel := interruptible()
	defer cancel()
	stop := progress(stderr, "indexing", &p, time.Now())
	rep, err := indexer.Index(ctx, target, opts, &xo, &p)
	stop()
	if err != nil {
		return fail(stderr, "index", err)
	}
	for _, l := range rep.Problems() {
		fmt.Fprintf(stderr, "npzfs index: %s\n", l)
	}
	fmt.Fprintln(stdout, rep.Summary())
	if !rep.OK() {
		return exitFail
	}
	return exitOK
}

// counter is what a progress line shows: bytes done, of a total.
type counter interface {
	Done() int64
	Total() int64
}

// progress draws a progress line on w, saying what is done (indexing,
// packing), while it is a terminal, and returns what stops it (and ends
// the line).
func progress(w io.Writer, what string, p counter, start time.Time) (stop func()) {
	f, ok := w.(*os.File)
	if !ok {
		return func() {}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	draw := func() {
		d, total := p.Done(), p.Total()
		secs := time.Since(start).Seconds()
		rate := float64(d) / max(secs, 1e-9)
		left := "?"
		if rate > 0 {
			left = time.Duration(float64(total-d) / rate * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(f, "\r\x1b[K%s: %s of %s, %.0f MB/s, %s left", what, mib(d), mib(total), rate/1e6, left)
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				draw()
			case <-quit:
				fmt.Fprint(f, "\r\x1b[K")
				return
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
