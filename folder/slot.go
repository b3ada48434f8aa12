package folder

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// slot is one archive file of the folder, as it was when first seen.
type slot struct {
	t       *Tree
	rel     string // path in the folder
	name    string // base name
	bare    bool   // a .npy file
	e       Entry  // what the store said of it: its identity
	rootIno uint64 // the NAME.npz folder's; rootIno+1 is its error file's (NAME/'s for a .npy)

	files atomic.Int64 // its files open (fs.Opener)
	busy  atomic.Int64 // lookups, listings and resolutions in it under way
	stale atomic.Bool  // the file at rel is another one now

	mu   sync.Mutex
	a    *npz.Archive
	err  error  // why it cannot be opened (this file, for good)
	base uint64 // inode number of the archive's node 2; 0 before the first open
	gen  uint64 // counts opens, so nodes know to find themselves again
	elem *list.Element
	// nodes are a .npy file's nodes as its name makes them, for listing
	// it unopened (npz.BareNodes).
	nodes []npz.BareNode
}

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
// until done is called (which it must be, also after an error).
func (s *slot) archive() (a *npz.Archive, gen uint64, done func(), err error) {
	if s.stale.Load() {
		return nil, 0, nop, errStale
	}
	s.mu.Lock()
	a, gen, over, err := s.openLocked()
	if err == nil {
		s.busy.Add(1)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, 0, nop, err
	}
	if over {
		s.t.trim()
	}
	return a, gen, func() {
		if s.busy.Add(-1) == 0 {
			s.maybeClose()
		}
	}, nil
}

func nop() {}

// openLocked opens the archive if it is not, and reports whether more
// than MaxOpen are open now.
func (s *slot) openLocked() (*npz.Archive, uint64, bool, error) {
	t := s.t
	if s.a != nil {
		t.mu.Lock()
		t.open.MoveToFront(s.elem)
		t.mu.Unlock()
		return s.a, s.gen, false, nil
	}
	if s.err != nil {
		return nil, 0, false, s.err
	}
	a, err := s.openFile()
	if err != nil {
		switch {
		case errors.Is(err, source.ErrChanged) || errors.Is(err, os.ErrNotExist):
			// Replaced or removed since it was seen: its nodes fail.
			s.stale.Store(true)
			return nil, 0, false, errStale
		case errors.Is(err, source.ErrTransient):
			// Not for good: the next use tries again.
			t.logf("npzfs: %s: %v", s.rel, err)
			return nil, 0, false, err
		}
		s.err = err
		t.logf("npzfs: %s: %v", s.rel, err)
		return nil, 0, false, err
	}
	if s.base == 0 {
		s.base = t.alloc(max(a.MaxIno(), 2) - 1)
	}
	s.a = a
	s.gen++
	t.mu.Lock()
	s.elem = t.open.PushFront(s)
	over := t.open.Len() > t.opts.MaxOpen
	t.mu.Unlock()
	return a, s.gen, over, nil
}

func (s *slot) openFile() (*npz.Archive, error) {
	opts := s.t.opts.Archive
	opts.Sidecars = s.t.opts.Sidecars
	a, err := s.t.store.Open(context.Background(), s.rel, s.e, &opts)
	if err != nil {
		return nil, err
	}
	if err := KindError(s.name, a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// KindError says why archive a, the file name in a folder, cannot be
// served as its name says: a folder's listing goes by the names, showing
// NAME.npz as a folder of an archive and NAME.npy as an array, so the
// bytes must agree. It is nil when they do, and for other names.
func KindError(name string, a *npz.Archive) error {
	switch {
	case strings.HasSuffix(name, ".npy") && !a.Bare():
		return fmt.Errorf("%s is named .npy but holds a zip archive (name it .npz)", name)
	case strings.HasSuffix(name, ".npz") && a.Bare():
		return fmt.Errorf("%s is named .npz but holds a .npy file (name it .npy)", name)
	}
	return nil
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
	s.a.Close()
	s.a = nil
	t := s.t
	t.mu.Lock()
	t.open.Remove(s.elem)
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
