package npz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/zip"
)

// indexLookup is one member's look for its saved index: its key made
// (reading the archive), the store looked in, then the archive's
// sidecar and the index's table fetched from it. Where the sidecar is
// found by a SidecarFinder (a remote one, an optional accelerator that
// may be slow or silent), a look runs in the background, under the
// archive's life rather than a read's, so that it holds up no read: the
// inflater is answered inflate.Pending meanwhile, and takes the index
// when it comes. Any other look reads the archive and the local store
// and sidecar, and is waited for.
type indexLookup struct {
	mu      sync.Mutex
	running chan struct{} // closed when the look under way ends
	done    bool          // the answer below is the look's
	src     io.ReaderAt   // the index found, or nil
	size    int64
	err     error // none (fs.ErrNotExist), or a failure that may pass
}

// OpenIndex gives the inflater the member's saved index (see
// inflate.IndexSource): from the store, whose file stays open (its
// windows are read as spans need them) until close, else from the
// archive's sidecar. It answers what a look found: the index; none
// (fs.ErrNotExist), for good; a failure that may pass (and the next ask
// looks again); or, while a look in the background is under way,
// inflate.Pending.
func (x *memberIndex) OpenIndex(ctx context.Context) (io.ReaderAt, int64, error) {
	if !x.m.a.keepsIndexes() {
		return nil, 0, fs.ErrNotExist
	}
	if x.m.a.opts.SidecarFinder == nil {
		return x.find(ctx)
	}
	l := &x.look
	l.mu.Lock()
	if l.done {
		src, size, err := l.src, l.size, l.err
		if passing(err) {
			l.done = false // looked for again at the next ask
		}
		l.mu.Unlock()
		return src, size, err
	}
	running := l.running
	if running == nil {
		running = make(chan struct{})
		l.running = running
		go x.lookInBackground(running)
	}
	l.mu.Unlock()
	return nil, 0, &inflate.Pending{Ready: running}
}

// lookInBackground looks for the index, bounded by the archive's life
// (the look gives up when it is closed) and the source's own bounds.
func (x *memberIndex) lookInBackground(running chan struct{}) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-x.m.a.done:
			stop()
		case <-ctx.Done():
		}
	}()
	src, size, err := x.find(ctx)
	l := &x.look
	l.mu.Lock()
	defer l.mu.Unlock()
	l.src, l.size, l.err, l.done, l.running = src, size, err, true, nil
	close(running)
}

// find looks for the member's saved index: in the store, then in the
// archive's sidecar. It answers fs.ErrNotExist where there is none.
func (x *memberIndex) find(ctx context.Context) (io.ReaderAt, int64, error) {
	name, err := x.key(ctx)
	switch {
	case err != nil:
		return nil, 0, err
	case name == "":
		return nil, 0, fs.ErrNotExist
	}
	if x.s != nil {
		f, err := x.s.dir.Open(name)
		if err == nil {
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return nil, 0, err
			}
			x.mu.Lock()
			x.file, x.fromStore = f, true
			x.mu.Unlock()
			x.s.loaded.Add(1)
			return f, fi.Size(), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			x.m.a.notef("npz: %q: cannot read its saved index: %v", x.m.Name(), err)
		}
	}
	return x.fromSidecar(ctx, name)
}

// fromSidecar finds the member's index, saved under name, in the
// archive's sidecar, waiting for the archive's look for it, and reads
// the index's table (which loading it reads first). (The store comes
// first: an index rebuilt after the sidecar's failed is there.)
func (x *memberIndex) fromSidecar(ctx context.Context, name string) (io.ReaderAt, int64, error) {
	head := inflate.IndexHeadLen(x.m.e.Size, x.m.a.opts.SpanSize)
	// Told to the finder: the sidecar's start, if it begins with this
	// index, holds its local header and the index's table.
	sc, err := x.m.a.sidecarWait(ctx, int64(zip.LocalHeaderLen+len(path.Base(name)))+head)
	if sc == nil || err != nil {
		return nil, 0, cmpErr(err, fs.ErrNotExist)
	}
	src, size, err := sc.lookup(ctx, name, head)
	x.m.a.tellSidecarDamage(sc)
	switch {
	case err != nil && passing(err):
		return nil, 0, err
	case errors.Is(err, errDamagedFrame):
		return nil, 0, fs.ErrNotExist // the damage, logged, says why
	case err != nil:
		x.m.a.notef("npz: %q: %v; not used", x.m.Name(), err)
		return nil, 0, fs.ErrNotExist
	case src == nil:
		x.m.a.notef("npz: %q: the index sidecar %s holds no index of it (made for another archive, another version of this one, or other members); not used for it", x.m.Name(), sc.Path())
		return nil, 0, fs.ErrNotExist
	}
	// Its table, read now (into a remote sidecar's cache), so that
	// loading it reads no byte a read would wait for.
	if _, err := src.ReadAt(make([]byte, min(head, size)), 0); err != nil && passing(err) {
		return nil, 0, err
	}
	x.mu.Lock()
	x.sidecar = sc
	x.mu.Unlock()
	if x.s != nil {
		x.s.loaded.Add(1)
	}
	return src, size, nil
}

// keepsIndexes reports whether the archive has an IndexStore or a
// sidecar, or may find one: where its members' saved indexes are.
func (a *Archive) keepsIndexes() bool {
	return a.opts.Indexes != nil || a.opts.Sidecar != nil || a.opts.SidecarFinder != nil
}

// tellSidecarDamage logs, once, that the sidecar sc's frame is damaged,
// where that is known (IndexSidecar.Damage).
func (a *Archive) tellSidecarDamage(sc *IndexSidecar) {
	if err := sc.Damage(); err != nil {
		a.logf("npz: %v: the indexes still found in it are used, each checked by its own checksums; write it again with npzfs index --sidecar", err)
	}
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// sidecarWait is the archive's sidecar, its look (see sidecar) waited
// for as long as ctx allows: nil and an error wrapping fs.ErrNotExist
// when there is none, or the failure that may pass.
func (a *Archive) sidecarWait(ctx context.Context, head int64) (*IndexSidecar, error) {
	for {
		sc, err := a.sidecar(head)
		var p *inflate.Pending
		if !errors.As(err, &p) {
			return sc, err
		}
		select {
		case <-p.Ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("looking for the index sidecar: %w", ctx.Err())
		}
	}
}
