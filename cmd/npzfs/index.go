package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/npz"
)

// indexFlags are the flags of the index cache, taken by mount and index.
type indexFlags struct {
	dir     string
	none    bool
	cacheMB int
}

// defaultIndexCacheMB bounds --index-dir.
const defaultIndexCacheMB = 1 << 10

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
	if f.cacheMB < 1 {
		return errors.New("--index-cache-mb must be at least 1")
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

// open opens the index folder, or returns nil with --no-index.
func (f *indexFlags) open() (*npz.IndexStore, error) {
	if f.none {
		return nil, nil
	}
	return npz.OpenIndexStore(f.dir, int64(f.cacheMB)<<20)
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
	verify := fl.Bool("verify", false, "read every member whole, checking saved indexes span by span")
	workers := fl.Int("workers", runtime.GOMAXPROCS(0), "inflate with `N` threads: members at once, and parts of a large member (1: each member from its start)")
	sidecar := fl.Bool("sidecar", false, "also write the indexes beside the archive, as ARCHIVE.npzidx (for a dataset to ship; mounts use it)")
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
	if *workers < 1 {
		return usageError(stderr, "index", fmt.Sprintf("--workers %d: give 1 or more", *workers))
	}
	if xf.none {
		return fail(stderr, "index", errors.New("no folder to keep indexes in: give --index-dir"))
	}
	target, keys := fl.Arg(0), fl.Args()[1:]
	if *sidecar && isRemote(target) {
		return usageError(stderr, "index", "--sidecar is for a local archive")
	}
	// A folder: every archive under it, as a mount of it shows them.
	names, inFolder := []string{target}, false
	if fi, err := os.Stat(target); err == nil && fi.IsDir() && !isRemote(target) {
		if len(keys) > 0 {
			return usageError(stderr, "index", "a KEY names a member of one archive, not of a folder")
		}
		if names, err = archivesUnder(target); err != nil {
			return fail(stderr, "index", err)
		}
		if len(names) == 0 {
			return fail(stderr, "index", fmt.Errorf("no .npz archive under %s", target))
		}
		inFolder = true
	}
	store, err := xf.open()
	if err != nil {
		return fail(stderr, "index", err)
	}
	defer store.Close()
	var logMu sync.Mutex
	var logged []string
	opts := &npz.Options{Indexes: store, Logf: func(format string, a ...any) {
		logMu.Lock()
		logged = append(logged, fmt.Sprintf(format, a...))
		logMu.Unlock()
	}}
	// whose prefixes what is said of a member of the archive name.
	whose := func(name string) string {
		if !inFolder {
			return ""
		}
		rel, _ := filepath.Rel(target, name)
		return rel + ": "
	}

	// First what there is to index, for the progress line. A single
	// archive stays open for the indexing; a folder's archives are then
	// indexed one after another, each opened again (a folder may hold
	// more archives than can be open at once).
	var total int64
	var count, failures int
	var kept *opened
	for _, name := range names {
		a, err := openArchive(name, opts, &rf)
		if err == nil {
			var members []*npz.Member
			if members, err = toIndex(a.Members(), keys); err == nil {
				count += len(members)
				for _, m := range members {
					total += m.Size()
				}
			}
			if err == nil && !inFolder {
				kept = a
			} else {
				a.Close()
			}
		}
		if err != nil && !inFolder {
			return fail(stderr, "index", err)
		}
		if err != nil {
			fmt.Fprintf(stderr, "npzfs index: %s%v\n", whose(name), bare(err))
			failures++
		}
	}

	var before, verified atomic.Int64 // bytes of the archives done; bytes read whole by --verify
	var curMu sync.Mutex
	var current []*npz.Member
	done := func() int64 {
		curMu.Lock()
		defer curMu.Unlock()
		var n int64
		for _, m := range current {
			n += m.Indexed()
		}
		if *verify {
			n = (n + verified.Load()) / 2
		}
		return before.Load() + n
	}
	start := time.Now()
	stop := progress(stderr, done, total, start)
	var indexed int
	var split atomic.Int64   // members whose first pass was shared among the workers
	var wrote, said []string // sidecars written; what to say once the progress line is gone
	for _, name := range names {
		a, err := kept, error(nil)
		if a == nil {
			a, err = openArchive(name, opts, &rf)
		}
		var members []*npz.Member
		if err == nil {
			members, err = toIndex(a.Members(), keys)
		}
		if err != nil {
			if a != nil {
				a.Close()
			}
			continue // said above
		}
		verified.Store(0)
		curMu.Lock()
		current = members
		curMu.Unlock()
		failed := map[*npz.Member]error{}
		var failMu sync.Mutex
		forEachN(members, *workers, func(m *npz.Member) {
			s, err := m.BuildIndexParallel(context.Background(), *workers)
			if s {
				split.Add(1)
			}
			if err == nil && *verify {
				err = readMember(m, &verified)
			}
			if err != nil {
				failMu.Lock()
				failed[m] = err
				failMu.Unlock()
			}
		})
		if *sidecar && len(failed) == 0 {
			side := npz.SidecarPath(name)
			if err := npz.WriteIndexSidecar(side, members); err != nil {
				said = append(said, fmt.Sprintf("cannot write %s: %v", side, bare(err)))
				failures++
			} else {
				wrote = append(wrote, side)
			}
		}
		var size int64
		for _, m := range members {
			size += m.Size()
			if err := failed[m]; err != nil {
				said = append(said, fmt.Sprintf("%s%s: %v", whose(name), m.Name(), bare(err)))
			}
		}
		curMu.Lock()
		current = nil
		curMu.Unlock()
		before.Add(size)
		indexed += len(members) - len(failed)
		failures += len(failed)
		a.Close()
	}
	stop()
	store.Close() // waits for the indexes being written
	elapsed := time.Since(start)
	for _, l := range said {
		fmt.Fprintf(stderr, "npzfs index: %s\n", l)
	}
	for _, l := range logged {
		if strings.Contains(l, "saved index") || strings.Contains(l, "cannot save") {
			fmt.Fprintf(stderr, "npzfs index: %s\n", bare(errors.New(l)))
		}
	}
	rate := float64(total) / max(elapsed.Seconds(), 1e-9) / 1e6
	var of, splitNote, sidecars string
	if inFolder {
		of = fmt.Sprintf(" of %d archives", len(names))
	}
	if n := split.Load(); n > 0 {
		splitNote = fmt.Sprintf(" (%d split among %d threads)", n, *workers)
	}
	switch {
	case len(wrote) == 1:
		sidecars = "; sidecar " + wrote[0]
	case len(wrote) > 1:
		sidecars = fmt.Sprintf("; %d sidecars", len(wrote))
	}
	fmt.Fprintf(stdout, "indexed %d of %d deflated members%s (%s) in %.1f s, %.0f MB/s%s; indexes in %s%s\n",
		indexed, count, of, mib(total), elapsed.Seconds(), rate, splitNote, store.Path(), sidecars)
	if failures > 0 {
		return exitFail
	}
	return exitOK
}

// archivesUnder lists the .npz files under dir, in its sub-folders too,
// as a mount of dir shows them (regular files; links are not followed).
func archivesUnder(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".npz") {
			names = append(names, path)
		}
		return nil
	})
	return names, err
}

// toIndex picks the deflated members to index: all, or those keys name.
func toIndex(all []*npz.Member, keys []string) ([]*npz.Member, error) {
	var out []*npz.Member
	if len(keys) == 0 {
		for _, m := range all {
			if m.Method() == 8 && !m.IsDir() && m.Served() && m.Size() > 0 {
				out = append(out, m)
			}
		}
		return out, nil
	}
	for _, k := range keys {
		i := slices.IndexFunc(all, func(m *npz.Member) bool { return m.Name() == k || m.Name() == k+".npy" })
		if i < 0 {
			return nil, fmt.Errorf("no member %q in the archive", k)
		}
		if all[i].Method() != 8 {
			return nil, fmt.Errorf("%s is not deflated: it needs no index", all[i].Name())
		}
		if !slices.Contains(out, all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// readMember reads m from start to end, counting bytes into done.
func readMember(m *npz.Member, done *atomic.Int64) error {
	f := m.File()
	buf := make([]byte, 4<<20)
	for off := int64(0); off < m.Size(); {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), m.Size()-off)], off)
		off += int64(n)
		done.Add(int64(n))
		if err != nil && !(err == io.EOF && off == m.Size()) {
			return err
		}
	}
	return nil
}

// progress draws a progress line on w while it is a terminal, and
// returns what stops it (and ends the line).
func progress(w io.Writer, done func() int64, total int64, start time.Time) (stop func()) {
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
		d := done()
		secs := time.Since(start).Seconds()
		rate := float64(d) / max(secs, 1e-9)
		left := "?"
		if rate > 0 {
			left = time.Duration(float64(total-d) / rate * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(f, "\r\x1b[Kindexing: %s of %s, %.0f MB/s, %s left", mib(d), mib(total), rate/1e6, left)
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
