//go:build linux

package tree

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// slot is one archive file of the folder, as it was when first seen.
type slot struct {
	t       *Folder
	rel     string       // path in the folder
	name    string       // base name
	bare    bool         // a .npy file
	e       folder.Entry // what the store said of it: its identity
	rootIno uint64       // the NAME.npz folder's; rootIno+1 is its error file's (NAME/'s for a .npy)

	files atomic.Int64 // its files open (fs.Opener)
	busy  atomic.Int64 // lookups, listings and resolutions in it under way
	stale atomic.Bool  // the file at rel is another one now

	mu   sync.Mutex
	a    *npz.Archive
	err  error  // why it cannot be opened (this file, for good)
	base uint64 // inode number of the archive's node 2; 0 before the first open
	gen  uint64 // counts opens, so nodes know to find themselves again
	elem *list.Element
	// opening is closed when the open under way ends; nil when none is.
	// The open runs without mu, so that nothing waits on a lock for a
	// network: others wait on it, each as long as its context lets it.
	opening chan struct{}
	retry   retryState // after failures that may pass
	// nodes are a .npy file's nodes as its name makes them, for listing
	// it unopened (npz.BareNodes).
	nodes []npz.BareNode
}

// retryState spaces the opens of an archive whose opens fail in ways
// that may pass (a server answering 503): until at, a use fails at once
// with err rather than asking again; each failure doubles the wait, up
// to maxRetryWait, and an open that succeeds forgets them.
type retryState struct {
	err   error
	at    time.Time
	wait  time.Duration
	since time.Time // the first of the failures in a row
}

// The first wait after an open failed in a way that may pass, and the
// longest: a server back from an outage is asked again within
// maxRetryWait of the next use.
const (
	firstRetryWait = time.Second
	maxRetryWait   = 8 * time.Second
)

// bareNodes are the nodes of a .npy file's slot, known from its name;
// the inode numbers of the archive's nodes are given out with the first.
func (s *slot) bareNodes() ([]npz.BareNode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == nil {
		nodes, maxIno, err := npz.BareNodes(s.name)
		if err != nil {
			return nil, err
		}
		if s.base == 0 {
			s.base = s.t.alloc(max(maxIno, 2) - 1)
		}
		s.nodes = nodes
	}
	return s.nodes, nil
}

// archive is the slot's archive, opened if it is not, and kept open
// until done is called (which it must be, also after an error). An open
// under way for another request is waited for, as long as ctx allows.
func (s *slot) archive(ctx context.Context) (a *npz.Archive, gen uint64, done func(), err error) {
	over := false // this call opened it, past MaxOpen
	for {
		if s.stale.Load() {
			return nil, 0, nop, errStale
		}
		s.mu.Lock()
		a, gen, wait, err := s.useLocked()
		if a != nil {
			s.busy.Add(1)
		}
		s.mu.Unlock()
		switch {
		case a != nil:
			if over {
				s.t.trim()
			}
			return a, gen, func() {
				if s.busy.Add(-1) == 0 {
					s.maybeClose()
				}
			}, nil
		case err != nil:
			return nil, 0, nop, err
		case wait != nil:
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, 0, nop, ctx.Err()
			}
		default:
			over = s.open(ctx)
			if err := ctx.Err(); err != nil {
				return nil, 0, nop, err
			}
		}
	}
}

func nop() {}

// maxFollow bounds the archives follow opens, each replaced again as it
// was opened.
const maxFollow = 4

// follow is archive for a lookup or listing in the slot's folders: the
// slot's archive, or, when the file at its path was replaced or removed
// since the slot was made (it is stale), the one there now, with its
// slot. The kernel keeps a folder it has looked up for a while (its
// cache time) and may look into it after the file was replaced: what it
// finds there is the new archive's, under the new archive's inode
// numbers, as a path on local disk finds the new file after a rename
// over the old one, not absence. The old archive's own files, under
// their numbers, fail their reads, never giving the new archive's bytes.
func (s *slot) follow(ctx context.Context) (*slot, *npz.Archive, uint64, func(), error) {
	for range maxFollow {
		a, gen, done, err := s.archive(ctx)
		if !errors.Is(err, source.ErrChanged) {
			return s, a, gen, done, err
		}
		done()
		if s, err = s.t.slotNow(ctx, s); err != nil {
			return nil, nil, 0, nop, err
		}
	}
	return nil, nil, 0, nop, source.Transient(fmt.Errorf("%s: replaced again as it was opened, %d times", s.rel, maxFollow))
}

// useLocked is what a use of the slot finds: its archive, open; or why it
// cannot be opened, for good or for now; or an open under way to wait
// for; or, all nil, that the caller is to open it.
func (s *slot) useLocked() (*npz.Archive, uint64, <-chan struct{}, error) {
	switch {
	case s.a != nil:
		t := s.t
		t.mu.Lock()
		t.open.MoveToFront(s.elem)
		t.mu.Unlock()
		return s.a, s.gen, nil, nil
	case s.err != nil:
		return nil, 0, nil, s.err
	case s.opening != nil:
		return nil, 0, s.opening, nil
	case s.retry.err != nil && s.t.now().Before(s.retry.at):
		return nil, 0, nil, s.retry.err
	}
	s.opening = make(chan struct{})
	return nil, 0, nil, nil
}

// open opens the archive, which useLocked has marked as being opened,
// and records what came of it: the archive; a failure for good (this
// file cannot be served); one that may pass (tried again at a later use,
// after a wait); the file replaced or removed since it was seen (the slot
// is stale: the folder's next look finds the new one); or nothing, when
// the caller's ctx ended first (the next use opens it). It reports
// whether more than MaxOpen archives are open now.
func (s *slot) open(ctx context.Context) (over bool) {
	t := s.t
	a, err := s.openFile(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.opening)
	s.opening = nil
	switch {
	case err == nil:
	case errors.Is(err, source.ErrChanged) || errors.Is(err, os.ErrNotExist):
		s.stale.Store(true)
		return false
	case ctx.Err() != nil:
		return false
	case passing(err):
		r := &s.retry
		now := t.now()
		if r.err == nil {
			r.since, r.wait = now, firstRetryWait
		} else {
			r.wait = min(2*r.wait, maxRetryWait)
		}
		r.err, r.at = err, now.Add(r.wait)
		t.logf("npzfs: %s: %v (EIO until it is opened: tried again at a use after %v)", s.rel, err, r.wait)
		return false
	default:
		s.err = err
		t.logf("npzfs: %s: %v", s.rel, err)
		return false
	}
	if s.retry.err != nil {
		t.logf("npzfs: %s: opened, after failing for %v", s.rel, t.now().Sub(s.retry.since).Round(time.Second))
		s.retry = retryState{}
	}
	if s.base == 0 {
		s.base = t.alloc(max(a.MaxIno(), 2) - 1)
	}
	s.a = a
	s.gen++
	t.mu.Lock()
	s.elem = t.open.PushFront(s)
	over = t.open.Len() > t.opts.MaxOpen
	t.mu.Unlock()
	return over
}

func (s *slot) openFile(ctx context.Context) (*npz.Archive, error) {
	opts := s.t.opts.Archive
	opts.Sidecars = s.t.opts.Sidecars
	opts.LogName = s.rel
	a, err := s.t.store.Open(ctx, s.rel, s.e, &opts)
	if err != nil {
		return nil, err
	}
	if err := folder.KindError(s.name, a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// mtime is the archive file's modification time, or when it was first
// seen if the store does not say.
func (s *slot) mtime() time.Time {
	if s.e.ModTime.IsZero() {
		return s.t.started
	}
	return s.e.ModTime
}

// idle reports an archive that may be closed: none of its files open
// and no request in it under way.
func (s *slot) idle() bool { return s.files.Load() == 0 && s.busy.Load() == 0 }

// close closes the archive if it is idle (or always, with force, when
// the mount ends).
func (s *slot) close(force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.a == nil || (!force && !s.idle()) {
		return
	}
	vs := s.verifyStats()
	s.a.Close()
	s.a = nil
	t := s.t
	t.mu.Lock()
	t.open.Remove(s.elem)
	t.closedVerify.Add(vs)
	t.mu.Unlock()
	s.elem = nil
}

// opened and closed count the slot's files open (fs.Opener).
func (s *slot) opened() { s.files.Add(1) }

func (s *slot) closed() {
	if s.files.Add(-1) == 0 {
		s.maybeClose()
	}
}

// maybeClose closes a slot gone idle when it is stale, and trims when too
// many archives are open.
func (s *slot) maybeClose() {
	if !s.idle() {
		return
	}
	if s.stale.Load() {
		s.close(false)
	}
	s.t.trim()
}

// errStale is what the nodes of an archive replaced or removed since it
// was seen fail with: they are gone, not broken.
var errStale = fmt.Errorf("the archive was replaced: %w", source.ErrChanged)

// verifyStats is what the slot's open archive verified, its failing
// members named with its path in the folder; the slot's lock is held.
func (s *slot) verifyStats() npz.VerifyStats {
	vs := s.a.VerifyStats()
	for i := range vs.Failing {
		vs.Failing[i].Archive = s.rel
	}
	return vs
}
