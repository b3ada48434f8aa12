package inflate

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/npzfs/npzfs/source"
)

// An IndexSource gives a reader the index saved for its stream: an
// accelerator, which the reader does without while it cannot have it.
type IndexSource interface {
	// OpenIndex returns the saved index as MarshalIndex wrote it, and
	// its size; or an error wrapping fs.ErrNotExist when there is none;
	// or another error when it cannot tell now.
	//
	// A reader asks when its index first has to grow past the first
	// span (or read ahead, or be indexed by IndexTo), from the goroutine
	// growing it, with that goroutine's context (a read's, cancelled
	// when it is interrupted), holding none of the reader's locks; it
	// must not read the reader. That read, and any other read needing
	// the index meanwhile, waits for the answer as long as its own
	// context allows: an implementation that may be slow (a remote
	// sidecar) bounds its own wait.
	//
	// "None" is final: the reader does not ask again. A *Pending says
	// the index is being looked for (a request under way that need not
	// be waited for): the read that asked waits for it a little (see
	// pendingWait), then the reader inflates from the stream meanwhile,
	// and asks again once Pending.Ready is closed, at the next span it
	// inflates. Any other error is not final either: the reader
	// inflates from the stream without the saved index and asks again
	// at a later read that needs the index to grow, no sooner than
	// retryFirst after the failure, and twice as long after each
	// failure in a row, up to retryMax; an answer cut short by the
	// asking read's context is asked for again by the next read.
	//
	// The index's bytes must stay readable while the reader is used
	// (see LoadIndex). They are read with the context of the read that
	// needs them (its table, then each span's window) where src takes
	// one (source.ContextReaderAt); such a read failing with an error
	// that may pass (source.ErrTransient, or the context's) fails the
	// read or the load and keeps the index, any other discards it (see
	// Progress).
	OpenIndex(ctx context.Context) (src io.ReaderAt, size int64, err error)
}

// Pending is what an IndexSource answers while it looks for the index
// without the reader waiting for it: the reader goes on inflating, and
// asks again once Ready is closed.
type Pending struct{ Ready <-chan struct{} }

func (p *Pending) Error() string { return "inflate: the saved index is being looked for" }

// How long a reader waits to ask its IndexSource again after a failure:
// retryFirst after the first, twice as long after each failure in a
// row, up to retryMax.
const (
	retryFirst = time.Second
	retryMax   = time.Minute
)

// asker asks a reader's IndexSource for its index, one read at a time,
// until it has an answer for good (see loadSaved). mu guards its fields
// but got and size, which belong to the read asking; it is a leaf.
type asker struct {
	src IndexSource

	mu     sync.Mutex
	done   bool            // answered for good: loaded, refused, or none
	asking chan struct{}   // while a read asks: closed when it is done
	fails  int             // failures in a row
	next   time.Time       // no asking before, after a failure
	ready  <-chan struct{} // a Pending answer's: asked again once closed

	// An index opened and not loaded yet: the load was cut short, or
	// reading its table failed in a way that may pass.
	got  io.ReaderAt
	size int64
	// A ChunkSource's chunks, once asked for for good (given, none, or
	// refused), and those given and not loaded yet (the turn not had).
	chunksAsked bool
	chunks      *Chunks
}

// loadSaved asks Options.Index for a saved index and loads it, unless it
// has an answer for good, or failed less than its backoff ago, or
// another read is asking (it then waits for that read's answer, until
// ctx is done). It returns ctx's error once ctx is done, and no other:
// without its saved index the reader inflates from the stream. An index
// LoadIndex refuses is reported by Progress.
func (f *frontier) loadSaved(ctx context.Context) error {
	a := &f.saved
	if a.src == nil {
		return nil
	}
	for {
		a.mu.Lock()
		switch {
		case a.done || (a.fails > 0 && f.s.hooks.now().Before(a.next)) || a.waits():
			a.mu.Unlock()
			return nil
		case a.asking != nil:
			asking := a.asking
			a.mu.Unlock()
			f.s.hooks.waiting(forIndex)
			select {
			case <-asking:
				continue // answered, or to be asked again
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		a.asking = make(chan struct{})
		a.mu.Unlock()
		err := f.ask(ctx)
		a.mu.Lock()
		a.answered(err, ctx.Err() != nil && isCancel(err), f.s.hooks.now())
		ready := a.ready
		close(a.asking)
		a.asking = nil
		a.mu.Unlock()
		if ready != nil && waitPending(ctx, ready) {
			continue // ask again: the answer is there
		}
		return ctx.Err()
	}
}

// pendingWait is how long the read that is answered Pending waits for
// the answer before it inflates without it: a saved index found in a
// request or two's time (a remote sidecar) is used by that read, while
// one that does not come (a silent server) holds it no longer than this,
// about what inflating a few MiB costs. Reads meanwhile do not wait.
const pendingWait = 250 * time.Millisecond

// waitPending waits for ready, for pendingWait at most, and reports
// whether it closed.
func waitPending(ctx context.Context, ready <-chan struct{}) bool {
	t := time.NewTimer(pendingWait)
	defer t.Stop()
	select {
	case <-ready:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// waits reports a Pending answer not ready yet, and forgets one that is
// (so that the source is asked again). a.mu is held.
func (a *asker) waits() bool {
	if a.ready == nil {
		return false
	}
	select {
	case <-a.ready:
		a.ready = nil
		return false
	default:
		return true
	}
}

// readyNow reports a Pending answer that is ready now: the source is to be
// asked again before the next span.
func (a *asker) readyNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ready == nil {
		return false
	}
	select {
	case <-a.ready:
		return true
	default:
		return false
	}
}

// answered records what asking gave: nothing to ask again (err nil or
// "none"), the index still being looked for (Pending), an answer cut
// short (cut), or a failure, after which the next ask waits for its
// backoff from now. a.mu is held.
func (a *asker) answered(err error, cut bool, now time.Time) {
	var p *Pending
	switch {
	case err == nil || errors.Is(err, fs.ErrNotExist):
		a.done = true
	case errors.As(err, &p):
		a.ready = p.Ready
	case cut:
	default:
		a.fails++
		a.next = now.Add(min(retryFirst<<min(a.fails-1, 16), retryMax))
	}
}

// reopen has the IndexSource asked again: the chunks it gave were
// dropped, and its saved index is still to be asked for.
func (a *asker) reopen() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done = false
}

// ask asks the IndexSource for its index, unless one is opened already,
// and loads it with the turn; an index LoadIndex refuses is recorded as
// such. A ChunkSource is asked for its chunks first. It returns an error
// when the index is still to be had: the source's, or one reading its
// table that may pass.
func (f *frontier) ask(ctx context.Context) error {
	a := &f.saved
	if loaded, err := f.askChunks(ctx); loaded || err != nil {
		return err
	}
	if a.got == nil {
		src, size, err := a.src.OpenIndex(ctx)
		switch {
		case err != nil:
			return err
		case src == nil:
			return fs.ErrNotExist
		}
		a.got, a.size = src, size
	}
	if err := f.take(ctx); err != nil {
		return err
	}
	defer f.release()
	err := f.load(ctx, a.got, a.size)
	switch {
	case err != nil && passes(err):
		return err
	case errors.Is(err, ErrBadIndex):
		f.ix.noteRefused(err)
	}
	a.got = nil // loaded, refused, or of no use (the index is complete)
	return nil
}

// askChunks asks a ChunkSource for the stream's chunks, once, and
// loads them with the turn; it reports whether it did, or an error when
// they are still to be had (the source's, or ctx's while waiting for the
// turn).
func (f *frontier) askChunks(ctx context.Context) (bool, error) {
	a := &f.saved
	cs, ok := a.src.(ChunkSource)
	if !ok || a.chunksAsked {
		return false, nil
	}
	if a.chunks == nil {
		ch, err := cs.OpenChunks(ctx)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return false, err
		case err != nil || ch == nil:
			a.chunksAsked = true
			return false, nil
		}
		a.chunks = ch
	}
	if err := f.take(ctx); err != nil {
		return false, err
	}
	defer f.release()
	ch := a.chunks
	a.chunks, a.chunksAsked = nil, true
	return f.loadChunks(ch), nil
}

// passes reports an error reading a saved index that may pass: it
// neither discards the index nor is final.
func passes(err error) bool { return errors.Is(err, source.ErrTransient) || isCancel(err) }
