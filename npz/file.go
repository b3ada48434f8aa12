package npz

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/npzfs/npzfs/zip"
)

// File kinds.
const (
	fileMember = iota // a member's bytes
	fileView          // a view (see viewKinds): a head, then a range of the member's bytes
)

// File is the content of a served file: a member's uncompressed bytes, or
// a view of them: a head made from the npy header (header.json is all
// head), then a byte range of the member's bytes (raw.bin is all range).
// It is safe for concurrent use and keeps no offset.
type File struct {
	m    *Member
	kind uint8
	view uint8 // fileView: the index in viewKinds
	head int64 // fileView: the head's length
	base int64 // where the range starts in the member's bytes
	size int64 // the file's size: head plus range
	err  error // fileView: why the array has no such view (every read fails)
}

var errNegativeOffset = errors.New("npz: negative offset")

// Size is the file's exact size in bytes.
func (f *File) Size() int64 { return f.size }

// ReadAt implements io.ReaderAt over the file's bytes. It returns io.EOF
// only when the read reaches Size; an archive that turns out shorter than
// its central directory says (truncated after Open) gives a *FormatError
// wrapping io.ErrUnexpectedEOF; an unreadable method gives a *MethodError.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt for a read that ctx may cancel: a read that has
// to fetch or inflate stops once ctx is done and returns ctx's error.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errNegativeOffset
	}
	if f.err != nil {
		return 0, f.err
	}
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if rem := f.size - off; int64(len(want)) > rem {
		want = want[:rem]
	}
	var n int
	var err error
	if off < f.head {
		var head []byte
		if head, err = f.Head(ctx); err == nil {
			n = copy(want, head[off:])
		}
	}
	if err == nil && n < len(want) {
		if err = f.m.ready(ctx); err == nil {
			var k int
			k, err = f.m.readAt(ctx, want[n:], f.base+off+int64(n)-f.head)
			n += k
		}
	}
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// ReadCached reads len(p) bytes at off, as ReadAt does, if it can
// without blocking, and reports whether it did: the range must lie in
// the data of a deflated member cleared to be served (verified, or
// served unverified by the archive's VerifyMode) whose inflated spans
// the cache holds now (see inflate.ReaderAt.ReadCached). A server tries
// it before handing a read to a goroutine of its own; on false, the read
// goes to ReadAtContext, which says why it cannot be served if it
// cannot. On false, p may hold some of the bytes.
func (f *File) ReadCached(p []byte, off int64) (int, bool) {
	m := f.m
	if f.err != nil || off < f.head || off+int64(len(p)) > f.size || m.a.closed.Load() || m.a.changedLogged.Load() {
		return 0, false
	}
	st := m.st.Load()
	if st&flagRefused != 0 || st&(flagVerified|flagUnverified) == 0 {
		return 0, false
	}
	l := m.loaded()
	if l == nil || l.inf == nil || l.err != nil {
		return 0, false
	}
	return l.inf.ReadCached(p, f.base+off-f.head)
}

// Head is the file's head: the bytes made from the npy header that come
// before the array's data (all of header.json, KEY.ra's RawArray header),
// nil for a member and raw.bin.
func (f *File) Head(ctx context.Context) ([]byte, error) {
	if f.head == 0 {
		return nil, nil
	}
	v := &viewKinds[f.view]
	head, err := v.head(f.m, ctx)
	if err != nil {
		return nil, err
	}
	if int64(len(head)) != f.head {
		// Rendering is deterministic: the member's bytes changed.
		return nil, fmt.Errorf("npz: %q: %s renders a head of %d bytes now, %d before", f.m.Name(), v.name, len(head), f.head)
	}
	return head, nil
}

// Extent reports where the bytes of a stored file that follow its head
// (see Head) lie in the archive file, so the mount can splice them: bytes
// [len(Head), Size()) of the file are bytes [off, off+Size()-len(Head))
// of fd. It verifies the member first when the archive's VerifyMode says
// so. ok is false for deflated members, header.json, unreadable
// members, members whose reads are checked against block CRC-32s
// (VerifyStrict), and archives whose source is not a source.FileBacked
// (a local file); err reports a member that failed verification, a stored member whose local header cannot be
// resolved, or an archive file that changed since it was opened
// (ErrChanged), or, for a view the array does not have, why (see
// Member.viewFile).
func (f *File) Extent(ctx context.Context) (fd uintptr, off int64, ok bool, err error) {
	return f.extent(ctx, true)
}

// Location is Extent without its check that the archive file has not
// changed, for a read that checks it once the bytes are read (as the
// mount's reads do, with Extent): a change before the read is still
// there after it, so a check before adds nothing.
func (f *File) Location(ctx context.Context) (fd uintptr, off int64, ok bool, err error) {
	return f.extent(ctx, false)
}

func (f *File) extent(ctx context.Context, check bool) (fd uintptr, off int64, ok bool, err error) {
	if f.err != nil {
		return 0, 0, false, f.err
	}
	if f.kind == fileView && !viewKinds[f.view].data || f.m.e.Method != zip.Stored || f.m.readable() != nil {
		return 0, 0, false, nil
	}
	dataOff, err := f.m.dataOffset(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	a := f.m.a
	if !a.hasFD {
		return 0, 0, false, nil
	}
	// No byte is served before the member is verified, if it is to be;
	// reads checked against its block CRC-32s go through ReadAt.
	if err := f.m.ready(ctx); err != nil {
		return 0, 0, false, err
	}
	if f.m.checkedSums() != nil {
		return 0, 0, false, nil
	}
	// The bytes are read from fd after this returns: check now that the
	// file has not changed, as every other read of it does.
	if check {
		if err := a.check(); err != nil {
			return 0, 0, false, err
		}
	}
	return a.fd, a.fdBase + dataOff + f.base, true, nil
}
