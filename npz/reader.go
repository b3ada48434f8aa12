package npz

import (
	"context"
	"errors"
	"io"

	"github.com/npzfs/npzfs/source"
)

// reader is how an archive reads its source: with the read's context when
// the source takes one, and noting the first read that finds the source
// changed. It has no plain ReadAt: every read carries the context of
// whoever waits for it (at gives an io.ReaderAt bound to one).
type reader struct {
	a   *Archive
	src io.ReaderAt
}

func (r *reader) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := source.ReadAt(ctx, r.src, p, off)
	switch {
	case err == nil:
	case r.a.closed.Load():
		// Closed under the read (a pass running on after its reader
		// left): not a fault of the archive's bytes.
		err = ErrClosed
	case errors.Is(err, ErrChanged):
		err = r.a.changed(err, off)
	}
	return n, err
}

// at is the archive's source as an io.ReaderAt whose reads carry ctx,
// for what takes a plain one (zip's record readers, a decoder reading an
// npy header).
func (r *reader) at(ctx context.Context) io.ReaderAt { return boundReader{ctx, r} }

type boundReader struct {
	ctx context.Context
	r   *reader
}

func (b boundReader) ReadAt(p []byte, off int64) (int, error) {
	return b.r.ReadAtContext(b.ctx, p, off)
}

// prefetch tells the archive's source the ranges about to be read, when
// it is a source.Prefetcher.
func (r *reader) prefetch(ctx context.Context, ranges []source.Range) {
	if p, ok := r.src.(source.Prefetcher); ok && len(ranges) > 0 {
		p.Prefetch(ctx, ranges)
	}
}

// changed logs (once) that the source changed, and wraps err, which wraps
// ErrChanged, as a *FormatError.
func (a *Archive) changed(err error, off int64) error {
	if !a.changedLogged.Swap(true) {
		a.logf("npz: %v; every read that needs the archive fails from now on", err)
		a.forgetIndexes()
	}
	return &FormatError{Offset: off, Msg: "cannot read the archive", Err: err}
}

// check asks the source, when it can tell, whether it changed.
func (a *Archive) check() error {
	if a.closed.Load() {
		return ErrClosed
	}
	if a.checker == nil {
		return nil
	}
	if err := a.checker.Check(); err != nil {
		if errors.Is(err, ErrChanged) {
			return a.changed(err, 0)
		}
		return err
	}
	return nil
}

// section is n bytes of the archive from off, for the inflater: an
// io.ReaderAt that also passes a read's context on.
type section struct {
	r      *reader
	off, n int64
}

func (s *section) ReadAt(p []byte, off int64) (int, error) {
	return s.ReadAtContext(context.Background(), p, off)
}

// Prefetch implements source.Prefetcher for a member's data: the
// ranges, the member's, clipped to it, are passed on to the archive's
// source when it is a Prefetcher (see reader.prefetch).
func (s *section) Prefetch(ctx context.Context, ranges []source.Range) {
	out := make([]source.Range, 0, len(ranges))
	for _, r := range ranges {
		from, to := max(r.Off, 0), min(r.Off+r.Len, s.n)
		if from < to {
			out = append(out, source.Range{Off: s.off + from, Len: to - from})
		}
	}
	s.r.prefetch(ctx, out)
}

// ReadAtContext reads the member's data: its reads carry the member's
// end as their source.ReadLimit, or the end of what the read says it
// reads (the inflater's, of a chunk), if sooner.
func (s *section) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off >= s.n {
		return 0, io.EOF
	}
	short := false
	if rest := s.n - off; int64(len(p)) > rest {
		p, short = p[:rest], true
	}
	end := s.n
	if limit, ok := source.ReadLimit(ctx); ok {
		end = min(end, max(limit, off))
	}
	n, err := s.r.ReadAtContext(source.WithReadLimit(ctx, s.off+end), p, s.off+off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}
