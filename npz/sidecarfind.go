package npz

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/npzfs/npzfs/inflate"
)

// A SidecarFinder finds an archive's index sidecar where the archive
// cannot look for it itself: a remote archive's, an object beside it.
// The archive hands it down: npz asks it, and it never calls npz back.
type SidecarFinder interface {
	// FindSidecar returns the sidecar; or an error wrapping
	// io/fs.ErrNotExist when there is none (or it may not be read: no
	// sidecar, for good); or another error when it cannot be found now
	// (a network failing), which is asked again later. head is about how
	// many of the sidecar's first bytes the lookup that asks reads, if
	// the member's index is the sidecar's first (its local header and
	// the index's table), or 0 when unknown: a remote sidecar may fetch
	// them with its first request. It bounds its own waits (a remote
	// one by its stall rule and timeout) and ends when ctx does. The
	// archive closes what it returns.
	FindSidecar(ctx context.Context, head int64) (*IndexSidecar, error)
}

// The wait before an archive asks its SidecarFinder again after it
// failed in a way that may pass, doubling while it fails, up to
// maxSidecarWait.
const (
	firstSidecarWait = time.Second
	maxSidecarWait   = time.Minute
)

// sidecarLookup is what an archive knows of the sidecar its
// Options.SidecarFinder finds: found, none, or a lookup under way in the
// background (which no read waits for: see look), or failed for now
// until retryAt.
type sidecarLookup struct {
	mu      sync.Mutex
	found   *IndexSidecar
	none    bool
	running chan struct{} // closed when the lookup under way ends
	stop    context.CancelFunc
	err     error // the last failure that may pass
	retryAt time.Time
	wait    time.Duration
	closed  bool
}

// sidecarPending is what the archive answers while its sidecar is
// looked for: an inflate.Pending, whose Ready closes when the lookup
// ends, so that no read waits for a sidecar (an optional accelerator) to
// answer.
func sidecarPending(running chan struct{}) error { return &inflate.Pending{Ready: running} }

// IndexSidecar is the archive's sidecar of saved indexes:
// Options.Sidecar, or the one Options.SidecarFinder finds, waited for as
// long as ctx allows; nil when there is none. A lookup that failed in a
// way that may pass says so.
func (a *Archive) IndexSidecar(ctx context.Context) (*IndexSidecar, error) {
	sc, err := a.sidecarWait(ctx, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return sc, err
}

// sidecar is the archive's sidecar, or why it has none now: an error
// wrapping fs.ErrNotExist when it has none for good, a *inflate.Pending
// while a lookup is under way (started now, in the background, the first
// time, telling the finder head), or the last failure that may pass
// until its wait is over.
func (a *Archive) sidecar(head int64) (*IndexSidecar, error) {
	if a.opts.Sidecar != nil {
		return a.opts.Sidecar, nil
	}
	if a.opts.SidecarFinder == nil {
		return nil, fs.ErrNotExist
	}
	l := &a.side
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.found != nil:
		return l.found, nil
	case l.none || l.closed:
		return nil, fs.ErrNotExist
	case l.running != nil:
		return nil, sidecarPending(l.running)
	case l.err != nil && time.Now().Before(l.retryAt):
		return nil, l.err
	}
	ctx, stop := context.WithCancel(context.Background())
	l.running, l.stop = make(chan struct{}), stop
	go a.lookForSidecar(ctx, head, l.running)
	return nil, sidecarPending(l.running)
}

// foundSidecar is the archive's sidecar if it is known already (given,
// or found by an earlier lookup), else nil. It starts no lookup.
func (a *Archive) foundSidecar() *IndexSidecar {
	if a.opts.Sidecar != nil {
		return a.opts.Sidecar
	}
	l := &a.side
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.found
}

// hasNoSidecar reports an archive known to have no sidecar: none given
// and no finder, or the finder's answer was none. It starts no lookup.
func (a *Archive) hasNoSidecar() bool {
	if a.opts.Sidecar != nil {
		return false
	}
	if a.opts.SidecarFinder == nil {
		return true
	}
	l := &a.side
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.none
}

// lookForSidecar asks the archive's SidecarFinder, in the background,
// and records the answer; running is closed once it is.
func (a *Archive) lookForSidecar(ctx context.Context, head int64, running chan struct{}) {
	sc, err := a.opts.SidecarFinder.FindSidecar(ctx, head)
	l := &a.side
	l.mu.Lock()
	defer l.mu.Unlock()
	defer close(running)
	l.running = nil
	l.stop()
	switch {
	case l.closed:
		if sc != nil {
			sc.Close()
		}
	case err == nil && sc != nil:
		l.found, l.err = sc, nil
	case err == nil || errors.Is(err, fs.ErrNotExist):
		l.none = true
	default:
		if l.err == nil {
			l.wait = firstSidecarWait
		} else {
			l.wait = min(2*l.wait, maxSidecarWait)
		}
		l.err, l.retryAt = fmt.Errorf("the index sidecar cannot be looked for now (asked again in %v): %w", l.wait, err), time.Now().Add(l.wait)
		a.logf("npz: %v", l.err)
	}
}

// closeSidecar ends a lookup under way and closes the sidecar found.
func (a *Archive) closeSidecar() error {
	l := &a.side
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.stop != nil {
		l.stop()
	}
	if l.found != nil {
		err := l.found.Close()
		l.found = nil
		return err
	}
	return nil
}
