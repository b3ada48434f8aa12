// Package pack rewrites an archive for random access: np.load reads the
// result as it read the original, and npzfs serves it at once. Each
// stored array's data (the .npy data, past its header) starts at a
// multiple of 4096 bytes in the archive file, so that it maps page by
// page (of 64 when it is shorter than a page: see PageSize), its local
// header padded as Android's zipalign pads it (zip.FileHeader.Align).
// Each deflated member is SOZip-chunked (see package zip): every chunk is
// compressed alone, on every core, and inflates alone. The compression of
// arrays can be kept, dropped or chosen (Compress); members that are not
// arrays, and arrays of objects (a pickle), keep their method (deflated
// ones are chunked too) and their bytes. The archive is written to a
// temporary file beside its destination and renamed over it once whole,
// so the destination is never torn, and nothing is left of a failed or
// cancelled run. docs/archive.md describes the layout.
package pack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// Compress says what becomes of the compression of arrays (the .npy
// members that are not object arrays).
type Compress int

// The ways arrays are written.
const (
	Keep    Compress = iota // stored arrays stay stored, deflated ones deflated
	None                    // every array stored
	Deflate                 // every array deflated
	Auto                    // deflated where that saves at least a tenth, else stored
)

var compressNames = []string{"keep", "none", "deflate", "auto"}

// String is the name ParseCompress takes.
func (c Compress) String() string {
	if c < 0 || int(c) >= len(compressNames) {
		return fmt.Sprintf("Compress(%d)", int(c))
	}
	return compressNames[c]
}

// ParseCompress is the Compress named s: keep, none, deflate or auto.
func ParseCompress(s string) (Compress, error) {
	for i, n := range compressNames {
		if s == n {
			return Compress(i), nil
		}
	}
	return 0, fmt.Errorf("compression %q: give keep, none, deflate or auto", s)
}

// DefaultChunk is the default SOZip chunk: a read anywhere in a deflated
// member inflates half of one on average.
const DefaultChunk = 1 << 20

// Bounds of Options.Chunk: a shorter chunk costs more in size (each
// chunk starts with an empty window, and its flushes take 10 bytes); a
// longer one costs every random read more, and memory (two chunks a
// core are in flight).
const (
	MinChunk = 4 << 10
	MaxChunk = 64 << 20
)

// Alignments of stored arrays' data in the archive file: a page for an
// array of a page or more, so that it maps page by page; a cache line
// for a smaller one (a page would cost more than it holds, and 64 is a
// multiple of every numpy item's alignment).
const (
	PageSize = 4096
	LineSize = 64
)

// Options tune a run. The zero value is the default.
type Options struct {
	// Chunk is the SOZip chunk size of deflated members, MinChunk to
	// MaxChunk; 0 means DefaultChunk.
	Chunk int64
	// Compress says what becomes of the arrays' compression (Keep by
	// default).
	Compress Compress
	// Workers is how many goroutines compress chunks; 0 means one a core.
	Workers int
	// Progress, when set, is told after each chunk written how many
	// bytes of members (uncompressed) are done, of how many. It is
	// called from one goroutine at a time and must return quickly.
	Progress func(done, total int64)
	// Zip64 writes zip64 records for every member and at the end, as if
	// every size and offset needed them: what an archive of members over
	// 4 GiB looks like to readers, without writing one (for tests).
	Zip64 bool
}

// Result says what a run wrote.
type Result struct {
	Members int   // central directory entries written
	Aligned int   // arrays stored with their data on a page boundary
	Stored  int   // other members stored, as they were
	Chunked int   // members deflated in more than one chunk, each with its SOZip index
	Deflate int   // members deflated in one chunk (no index)
	In, Out int64 // the input's and the output's sizes in bytes
}

// how is what becomes of a member.
type how uint8

const (
	asDir      how = iota // a directory entry: stored, empty
	asStored              // stored, where it falls
	asAligned             // stored, its array data on a page
	asDeflated            // deflated in chunks
	asAuto                // deflated in chunks, or stored aligned when that saves less than a tenth
)

// member is a member of the input with what becomes of it.
type member struct {
	m     *npz.Member
	how   how
	skip  int64 // an array's .npy header length: where its data starts
	align int64 // where it is stored: its data's alignment
}

// ReaderAt packs the archive of size bytes read from r into the file out
// (see Archive); r may be a source.ContextReaderAt, whose reads get ctx.
func ReaderAt(ctx context.Context, r io.ReaderAt, size int64, out string, opts *Options) (Result, error) {
	a, err := npz.NewReader(ctx, r, size, nil)
	if err != nil {
		return Result{}, err
	}
	defer a.Close()
	return Archive(ctx, a, out, opts)
}

// Archive packs a into the file out: every central directory entry of a
// in order (shadowed and unserved ones too, as np.load sees them all),
// each array as opts.Compress says and every other member with its
// method, and a's comment. It fails, leaving out as it was, when a member
// cannot be read (an unsupported method, a stream or CRC-32 that does not
// hold, a name that is not UTF-8), naming it; when ctx is done; or when
// out cannot be written. a must not be a bare .npy file.
func Archive(ctx context.Context, a *npz.Archive, out string, opts *Options) (Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Chunk == 0 {
		o.Chunk = DefaultChunk
	}
	if o.Chunk < MinChunk || o.Chunk > MaxChunk {
		return Result{}, fmt.Errorf("chunk of %d bytes: give %d to %d", o.Chunk, MinChunk, MaxChunk)
	}
	if o.Compress < Keep || o.Compress > Auto {
		return Result{}, fmt.Errorf("unknown compression %d", int(o.Compress))
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if a.Bare() {
		return Result{}, errors.New("a bare .npy file is not an archive: np.load reads it as it is")
	}
	f, err := create(out)
	if err != nil {
		return Result{}, err
	}
	p := newPacker(ctx, a, f, &o)
	res, err := p.run()
	if err != nil {
		f.discard()
		return Result{}, err
	}
	if res.Out, err = f.commit(); err != nil {
		return Result{}, err
	}
	res.In = a.Size()
	return res, nil
}

// plan decides what becomes of m, reading an array's .npy header.
func (p *packer) plan(m *npz.Member) (*member, error) {
	name := m.Name()
	if !utf8.ValidString(name) {
		return nil, &MemberError{Name: name, Err: errors.New("its name is not UTF-8, though flagged so")}
	}
	if m.IsDir() {
		return &member{m: m, how: asDir}, nil
	}
	if err := m.ReadError(); err != nil {
		return nil, memberError(m, err)
	}
	mb := &member{m: m, how: asStored}
	if m.Method() == zip.Deflated {
		mb.how = asDeflated
	}
	if !strings.HasSuffix(name, ".npy") {
		return mb, nil
	}
	h, err := m.Header(p.ctx)
	if errors.Is(err, source.ErrTransient) || errors.Is(err, npz.ErrChanged) || p.ctx.Err() != nil {
		return nil, memberError(m, err)
	}
	if err != nil || h.DType.HasObject {
		return mb, nil // not an array npzfs can serve: kept as it is
	}
	mb.skip, mb.align = h.DataOffset, LineSize
	if h.DataLength(m.Size()) >= PageSize {
		mb.align = PageSize
	}
	switch p.opts.Compress {
	case None:
		mb.how = asAligned
	case Deflate:
		mb.how = asDeflated
	case Auto:
		mb.how = asAuto
	default:
		if m.Method() == zip.Stored {
			mb.how = asAligned
		}
	}
	return mb, nil
}

// MemberError is a member that could not be packed, and why.
type MemberError struct {
	Name string // its name in the archive
	Err  error
}

func (e *MemberError) Error() string {
	msg := strings.TrimPrefix(strings.TrimPrefix(e.Err.Error(), "npz: "), "zip: ")
	if strings.Contains(msg, fmt.Sprintf("%q", e.Name)) {
		return msg // it names the member already
	}
	return fmt.Sprintf("member %q: %s", e.Name, msg)
}

// Unwrap returns the cause.
func (e *MemberError) Unwrap() error { return e.Err }

// memberError is err, about m, as a *MemberError.
func memberError(m *npz.Member, err error) error {
	if err == nil {
		err = errors.New("cannot be read")
	}
	return &MemberError{Name: m.Name(), Err: err}
}
