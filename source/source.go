// Package source is what npz reads an archive from: a run of bytes whose
// size and identity are fixed when it is opened. npz takes any io.ReaderAt
// and its size, as archive/zip does, and discovers what else a source can
// do through the small optional interfaces below; this package also holds
// the local file, the common case. Network sources live in packages of
// their own that implement the same interfaces, so npz and fs never learn
// what a source is.
package source

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrChanged is the cause of every read of a source whose object changed
// after it was opened (a local file truncated or rewritten, a remote
// object replaced): nothing more is read from it, so old and new bytes are
// never mixed. Sources wrap it in the errors they return; bytes read before
// the change stay valid.
var ErrChanged = errors.New("the archive changed after it was opened")

// ErrTransient is in the chain of a read error that may pass (a server
// or network failing, once the source's own retries ran out): a later
// read of the same bytes may succeed, so nothing about it is remembered.
var ErrTransient = errors.New("the failure may pass")

// Transient marks err as one that may pass (see ErrTransient); its
// message is err's.
func Transient(err error) error {
	if err == nil || errors.Is(err, ErrTransient) {
		return err
	}
	return transient{err}
}

type transient struct{ err error }

func (t transient) Error() string        { return t.err.Error() }
func (t transient) Unwrap() error        { return t.err }
func (t transient) Is(target error) bool { return target == ErrTransient }

// ContextReaderAt is implemented by sources whose reads can be cancelled:
// a read whose ctx is done returns early with an error. npz passes the
// FUSE request's context down to it.
type ContextReaderAt interface {
	ReadAtContext(ctx context.Context, p []byte, off int64) (n int, err error)
}

// Identifier is implemented by sources that can name the object they read
// as it was when opened: for a local file its size and modification time,
// for HTTP its strong ETag (else its Last-Modified), for S3 its ETag and
// version. Two sources with the same identity hold the same bytes, so it
// can key a cache that outlives the mount.
type Identifier interface {
	Identity() string
}

// Checker is implemented by sources that can tell, before a read that
// bypasses them (a splice from their file descriptor), whether their
// object has changed: Check returns an error wrapping ErrChanged once it
// has.
type Checker interface {
	Check() error
}

// FileBacked is implemented by sources whose bytes are those of an open
// file, so that reads can be spliced from it: bytes [off, off+n) of the
// source are bytes [base+off, base+off+n) of fd.
type FileBacked interface {
	FileExtent() (fd uintptr, base int64)
}

// ModTimer is implemented by sources that know when their object was last
// modified; npz gives that time to folders and views.
type ModTimer interface {
	ModTime() time.Time
}

// ReadAt reads from r with ctx when r is a ContextReaderAt, and as a plain
// io.ReaderAt otherwise (after checking that ctx is not already done).
func ReadAt(ctx context.Context, r io.ReaderAt, p []byte, off int64) (int, error) {
	if cr, ok := r.(ContextReaderAt); ok {
		return cr.ReadAtContext(ctx, p, off)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return r.ReadAt(p, off)
}

type readLimitKey struct{}

// WithReadLimit returns ctx telling the source that what is read ends at
// byte end (a member's data, in its archive): a source that reads ahead
// of a sequential reader (a remote object's) reads no further, where it
// could only fetch bytes no one asked for.
func WithReadLimit(ctx context.Context, end int64) context.Context {
	return context.WithValue(ctx, readLimitKey{}, end)
}

// ReadLimit is the end WithReadLimit set on ctx, if any.
func ReadLimit(ctx context.Context) (int64, bool) {
	end, ok := ctx.Value(readLimitKey{}).(int64)
	return end, ok
}

// WithContext returns an io.ReaderAt whose reads of r carry ctx, for code
// that takes a plain io.ReaderAt (a decoder reading a compressed stream,
// zip reading its records). context.Background leaves r as it is; any
// other ctx is not asked for its Done channel here, which some contexts
// (a FUSE request's) make only when someone is about to wait on it.
func WithContext(ctx context.Context, r io.ReaderAt) io.ReaderAt {
	if ctx == context.Background() {
		return r
	}
	return ctxReaderAt{ctx, r}
}

type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) { return ReadAt(c.ctx, c.r, p, off) }

// Range is n bytes of a source from Off.
type Range struct {
	Off, Len int64
}

// Prefetcher is implemented by sources for which many small reads cost
// more than one large one (a remote object): npz calls Prefetch with the
// ranges it is about to read (the local and npy headers of many members)
// so the source can fetch them in a few merged requests. It is advice:
// Prefetch may return before the bytes arrive, and reads must work
// whether or not it was called.
type Prefetcher interface {
	Prefetch(ctx context.Context, ranges []Range)
}

// Section is n bytes of r from off, as io.SectionReader is, but for
// sources: a read with a context (ReadAtContext) passes it on to r when r
// takes one.
type Section struct {
	r      io.ReaderAt
	off, n int64
}

// NewSection is bytes [off, off+n) of r.
func NewSection(r io.ReaderAt, off, n int64) *Section { return &Section{r, off, n} }

// ReadAt reads as ReadAtContext does, with context.Background.
func (s *Section) ReadAt(p []byte, off int64) (int, error) {
	return s.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext reads bytes [off, off+len(p)) of the section, io.EOF
// where it ends first.
func (s *Section) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off >= s.n {
		return 0, io.EOF
	}
	short := false
	if rest := s.n - off; int64(len(p)) > rest {
		p, short = p[:rest], true
	}
	n, err := ReadAt(ctx, s.r, p, s.off+off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// Size is the section's length.
func (s *Section) Size() int64 { return s.n }
