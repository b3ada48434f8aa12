//go:build linux

// Package daemon is the life of an npzfs mount's daemon, as the command
// line runs it: the serve loop (Serve: the mount point checked and
// locked, the dataset opened, the tree mounted, served until unmounted
// or signalled), the status socket each daemon answers on and the
// client that asks them all (Statuses), finding a mount's daemons
// through /proc and waiting for them to exit (Unmount), and the checks
// of a FUSE device handed over as /dev/fd/N (CheckHanded). The command
// line parses flags into a Config, and prints what it returns; this
// package prints nothing but the daemon's log.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/dataset"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/indexer"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"github.com/npzfs/npzfs/memplan"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/tree"
	"github.com/npzfs/npzfs/zip"
)

// Config is what a mount serves, where, and how: the command line makes
// it from its flags.
type Config struct {
	// Source names what is served, as dataset.Open takes it: an archive,
	// a .npy file, a folder, or the URL of one.
	Source string
	// Mountpoint is an existing folder, or /dev/fd/N: a FUSE device
	// handed over, mounted by whoever handed it (fs.FDMountpoint).
	Mountpoint string
	// Dataset are the dataset's options: caches, indexes, remote
	// sources. With an IndexDir, Ready counts the large deflated members
	// that have no saved index.
	Dataset *dataset.Options
	// Memory is the memory plan the dataset's budgets were made from
	// (memplan.Make): once the mount is live, the daemon follows its
	// cgroup's memory limit, resizing them to each new plan
	// (memplan.Follow). The zero Plan follows nothing.
	Memory memplan.Plan
	// MaxOpen bounds a folder's archives kept open (tree.Options).
	MaxOpen int
	// MountOptions are passed to the mount (-o: allow_other, noatime, ...).
	MountOptions []string
	// Debug logs every FUSE request and reply.
	Debug bool
	// ReadAheadKB is the kernel's readahead for the mount, in KiB (set
	// by root only; 0 keeps the kernel's).
	ReadAheadKB int
	// Index has every deflated member of a single archive indexed in the
	// background once the mount is live, at the lowest CPU priority.
	Index bool
	// ListAttrs has every listing carry the attributes of what it lists
	// (fs.Config.ListAttrs).
	ListAttrs bool
	// Options and Log are what Status says of the mount: the flags it
	// was made with, as shown (without secrets), and where its messages
	// go.
	Options []string
	Log     string
	// Logger takes the daemon's messages.
	Logger *log.Logger
	// Owner, when not 0, is a process the mount lives no longer than:
	// once it exits (however it ends), the mount is unmounted, as on
	// SIGTERM (npzfs.mount gives its Python's pid).
	Owner int
	// RemoveMountpoint has the daemon remove the mount point, an empty
	// folder made for the mount (npzfs.mount's temporary folder), once
	// it is unmounted.
	RemoveMountpoint bool
}

// Ready is how a mount went, once it is live: what npzfs mount says of
// it.
type Ready struct {
	Source, Mountpoint  string // absolute
	Members, Unreadable int    // members, and those not served or unreadable
	Hidden              int    // entries of the mount point hidden by the mount
	// Unindexed counts the deflated members over BigMember bytes that
	// have no saved index, and UnindexedBytes their bytes.
	Unindexed      int
	UnindexedBytes int64
	// LogCreated is the log file a daemon made, where no syslog
	// answered (Detach), for Started.Wait's caller to tell.
	LogCreated string
}

// Serve checks everything, mounts, calls ready with how the mount went
// (members that cannot be read) once it is live, and serves until
// unmounted (by npzfs unmount, or here on SIGINT/SIGTERM). It answers
// npzfs status meanwhile (Statuses). The process's memory limit is the
// caller's to set, before; the daemon changes it when it follows its
// cgroup's (Config.Memory).
func Serve(cfg *Config, ready func(Ready)) error {
	logger := cfg.Logger
	// Catch the signals before mounting: one that arrives while the
	// dataset is opened gives up the opening (whatever it waits for: a
	// server that does not answer); one that arrives while the mount is
	// being made is handled (unmount, exit 0) once it is live, rather
	// than killing the process and leaving a dead mount.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if cfg.Owner != 0 {
		if err := watchOwner(cfg.Owner, sig); err != nil {
			return err
		}
	}
	if cfg.RemoveMountpoint {
		defer removeMountpoint(cfg.Mountpoint, logger)
	}
	ctx, live := untilLive(sig, cfg.Source)
	defer live()
	mp, err := takeMountpoint(cfg.Mountpoint)
	defer mp.unlock()
	if err != nil {
		return err
	}
	d, err := dataset.Open(ctx, cfg.Source, cfg.Dataset)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	defer d.Close() // its problems are already in the log, through Logf
	tr, err := tree.Of(ctx, d, &tree.Options{MaxOpen: cfg.MaxOpen})
	if err != nil {
		return err
	}
	defer tr.Close()
	srv, err := mp.mount(cfg, d, tr)
	if err != nil {
		return err
	}
	self, _ := mountinfo.Find(mp.dir) // to know the mount once detached
	if live(); ctx.Err() != nil {
		// A signal came as the mount was made: it is unmounted now.
		logger.Printf("%v: unmounting %s", context.Cause(ctx), mp.dir)
		unmountNow(srv, mp.dir, logger)
		return context.Cause(ctx)
	}
	stop := make(chan struct{})
	go unmountOnSignal(sig, srv, mp.dir, self, stop, logger)
	var bg *indexer.Background // made now, for status to show from the start
	if cfg.Index {
		bg = backgroundIndexing(d, logger)
	}
	if stopStatus, err := serveStatus(cfg.statusOf(mp.dir, d, tr, srv, bg)); err != nil {
		logger.Printf("npzfs status will not see this mount: %v", err)
	} else {
		defer stopStatus()
	}
	mp.unlock()
	ready(cfg.readyStatus(mp, d))
	if cfg.Memory.Target > 0 {
		stop := memplan.Follow(cfg.Memory, func(p memplan.Plan) {
			logger.Printf("the cgroup's memory limit changed: %v", p)
			d.SetBudgets(p.SpanCache, p.Indexes, p.Remote)
		})
		defer stop() // before the dataset is closed
	}
	if bg != nil {
		stop := runInBackground(bg, logger)
		defer stop()
	}
	served := make(chan struct{})
	go func() {
		srv.Wait()
		close(served)
	}()
	select {
	case <-served:
		logger.Printf("unmounted %s", mp.dir)
	case <-stop:
	}
	return nil
}

// statusOf is what npzfs status is told of the mount on dir, as it is
// when asked.
func (cfg *Config) statusOf(dir string, d *dataset.Dataset, tr *tree.Tree, srv *npzfs.Server, bg *indexer.Background) func() Status {
	started := time.Now()
	return func() Status {
		name := dir
		if fd, handed := npzfs.FDMountpoint(dir); handed {
			// Named where the helper mounted it, when that can be
			// found: the mount table, and status, know it by that.
			name = cmp.Or(handedDir(fd), dir)
		}
		st := Status{
			Mountpoint: name, PID: os.Getpid(), Started: started.UTC().Truncate(time.Second),
			Uptime: time.Since(started).Seconds(), Options: cfg.Options, Log: cfg.Log,
			Dataset: datasetStatus(d.Stats()), Answering: true, Owner: cfg.Owner,
		}
		if open, idle, ok := tr.ArchivesOpen(); ok {
			st.ArchivesOpen, st.ArchivesIdle = &open, &idle
		}
		var mode npz.VerifyMode
		if cfg.Dataset != nil {
			mode = cfg.Dataset.Archive.Verify
		}
		st.Verification = verificationOf(mode, tr.VerifyStats())
		if bg != nil {
			st.Indexing = (*Indexing)(bg.Progress())
		}
		served := srv.Stats()
		st.Served.Reads, st.Served.Pushes, st.Served.Bytes = served.Reads, served.Pushes, served.Bytes
		st.Served.Requests = served.Requests
		return st
	}
}

// readyStatus is what npzfs mount says of a mount once it is live.
func (cfg *Config) readyStatus(mp *mountpoint, d *dataset.Dataset) Ready {
	st := Ready{Source: d.Name(), Mountpoint: mp.dir, Hidden: mp.hidden}
	if a := d.Archive(); a != nil {
		st.Members, st.Unreadable = a.Len(), unreadableMembers(a.All())
		// For a remote archive with such a member, whether it has a
		// saved index may take a look for its sidecar: requests its
		// first deep read would make, made now. With --no-index no
		// saved index would be read: saying to build one is no help.
		if !cfg.Index && cfg.Dataset.IndexDir != "" {
			st.Unindexed, st.UnindexedBytes = unindexedMembers(context.Background(), a.All())
		}
	}
	return st
}

// removeMountpoint removes the folder dir the mount was made on, once
// the mount is gone, if it is empty (what else is there is not ours).
func removeMountpoint(dir string, logger *log.Logger) {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Printf("cannot remove the mount point %s: %v", dir, err)
	}
}

// unmountOnSignal unmounts on the first signal from sig; when the mount
// self (as the mount table gave it once made) was detached already, it
// closes stop instead, for the daemon to exit.
func unmountOnSignal(sig <-chan os.Signal, srv *npzfs.Server, mnt string, self mountinfo.Entry, stop chan<- struct{}, logger *log.Logger) {
	s, ok := <-sig
	if !ok {
		return
	}
	if detached(self) {
		// Nothing to unmount: files still open on it keep the kernel's
		// end alive, and only the daemon's exit ends it.
		logger.Printf("%v: %s was detached (lazy unmount): the files still open on it are served no more", s, mnt)
		close(stop)
		return
	}
	logger.Printf("%v: unmounting %s", s, mnt)
	unmountNow(srv, mnt, logger)
}

// unmountNow unmounts srv from mnt, or detaches it when it is busy.
func unmountNow(srv *npzfs.Server, mnt string, logger *log.Logger) {
	// fusermount3's errors come over several lines: one line each.
	if err := srv.Unmount(false); err != nil {
		logger.Printf("unmount %s: %s; detaching it (lazy unmount)", mnt, oneLine(err.Error()))
		if err := srv.Unmount(true); err != nil {
			logger.Printf("lazy unmount %s: %s", mnt, oneLine(err.Error()))
		}
	}
}

// untilLive is the context of what a daemon waits for while it opens
// name: done, with the cause, at the first signal from sig before live
// is called. live, called once the mount is made, ends the watch: later
// signals are left in sig; when live returns, ctx says whether one came
// before.
func untilLive(sig <-chan os.Signal, name string) (ctx context.Context, live func()) {
	ctx, giveUp := context.WithCancelCause(context.Background())
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-sig:
			giveUp(fmt.Errorf("interrupted (%v) while opening %s", s, name))
		case <-stop:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(stop)
			<-watched
		})
	}
}

// backgroundIndexing is mount --index's indexing of d's deflated
// members (indexer.Background), nil for a folder.
func backgroundIndexing(d *dataset.Dataset, logger *log.Logger) *indexer.Background {
	if d.Kind() == dataset.Folder {
		logger.Printf("--index: background indexing is for a single archive, not a folder; not done")
		return nil
	}
	return indexer.NewBackground(d.Archive())
}

// runInBackground runs b, which logs what it did, and returns what stops
// it and waits for it.
func runInBackground(b *indexer.Background, logger *log.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err := b.Run(ctx)
		if err != nil {
			return // the mount ended first
		}
		for _, p := range rep.Problems() {
			logger.Printf("background indexing: %s", p)
		}
		if len(rep.Members) > 0 {
			logger.Printf("background indexing: %s", rep.Summary())
		}
	}()
	return func() { cancel(); <-done }
}

// BigMember is the size past which a deflated member without a saved
// index gets a word at mount: a first read deep into it inflates it from
// its start, about a second a GiB.
const BigMember = 256 << 20

// unindexedMembers counts the deflated members over BigMember bytes that
// have no saved index (npz.Member.HasSavedIndex), and their bytes.
func unindexedMembers(ctx context.Context, members iter.Seq[*npz.Member]) (n int, bytes int64) {
	for m := range members {
		if m.Method() == zip.Deflated && m.Served() && m.Size() > BigMember && !m.HasSavedIndex(ctx) {
			n++
			bytes += m.Size()
		}
	}
	return n, bytes
}

// unreadableMembers counts the members a mount does not serve or
// cannot read a byte of (folders aside).
func unreadableMembers(members iter.Seq[*npz.Member]) int {
	n := 0
	for m := range members {
		if !m.Served() || m.ReadError() != nil {
			n++
		}
	}
	return n
}

// oneLine is s on one line: fusermount3's errors come over several.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
