package npz

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/zip"
)

// Member states (the low bits of Member.st), set while the archive is
// opened.
const (
	memberServed   = iota // served at Path
	memberSkipped         // not served: unusable name or entry
	memberShadowed        // not served: lost a name collision
)

// Member flags, the other bits of Member.st. Those about the tree are set
// while the archive is opened; the others once, atomically, as reads go.
const (
	stateMask  = 3
	flagDir    = 1 << 2 // a directory entry
	flagBare   = 1 << 3 // a bare .npy file (NewNPY): no zip, no CRC-32
	flagCrypt  = 1 << 4 // encrypted
	flagPath   = 1 << 5 // served at a path other than its name (Archive.paths)
	flagReason = 1 << 6 // has a static reason (Archive.reasons)
	flagViews  = 1 << 7 // has a views folder KEY/
	// flagBeside0 << j: has view j beside KEY.npy (see besideFlag)
	flagBeside0    = 1 << 8
	maxBeside      = 4
	besideMask     = (1<<maxBeside - 1) * flagBeside0
	flagLocated    = 1 << 12 // a stored member's data starts lhLen after its local header
	flagReadFailed = 1 << 13 // a read failure has been logged
	flagUnsettled  = 1 << 14 // its npy header could not be read, for now
	flagNoted      = 1 << 15 // why it has no views has been logged
	flagUTF8       = 1 << 16 // its entry flags its name as UTF-8
	flagDescriptor = 1 << 21 // its entry flags a data descriptor after its data (17 to 20: verify.go)
)

// besideFlag is the member flag of the view beside KEY.npy numbered j
// (viewKind.besideIndex).
func besideFlag(j int) uint32 { return flagBeside0 << j }

// entry is what a member keeps of its central directory entry: its
// fixed-size fields, and where its name is in the archive's arena.
type entry struct {
	CompressedSize int64
	Size           int64
	HeaderOffset   int64
	CRC32          uint32
	mtime          uint32 // Unix seconds less minTime (see packTime)
	Index          int32  // its position in the central directory
	name           uint32 // where its name is in the arena (see arena.add)
	nameLen        uint16
	Method         uint16
}

// minTime is the earliest modification time a member keeps (an extended
// timestamp's least); times are kept as uint32 seconds after it, which
// reaches past the latest an MS-DOS time can say but for its last year.
const minTime = -1 << 31

func packTime(unix int64) uint32 { return uint32(min(max(unix-minTime, 0), 1<<32-1)) }

// Member is one entry of the central directory, in the archive's table of
// members: 64 bytes of fixed-size fields each, with a single pointer,
// its name in the archive's arena of names, and what is rare (a reason,
// a path other than its name, a failed local header, a deflated member's
// inflater) kept beside the table. Its local header and npy header are
// read lazily, the first time they are needed. It is safe for concurrent
// use.
type Member struct {
	a  *Archive
	e  entry
	st atomic.Uint32 // state and flags
	// lhLen is, with flagLocated, how far after the local header the
	// data starts (while the tree is built, the member's folder).
	lhLen uint32
}

// loaded is where a deflated member's data lies, with its inflater, or
// why a member's local header cannot be read, once resolved (see
// locate); nil before, and for stored members located.
func (m *Member) loaded() *location { return m.a.locs.get(m.e.Index) }

// location is where a member's data lies, or why it cannot be read.
type location struct {
	dataOff int64
	err     error
	inf     *inflate.ReaderAt // deflated members
	// idx is its inflater's IndexSource (its SOZip index, and the
	// archive's IndexStore and sidecar), for a member that needs one.
	idx *memberIndex
	soz atomic.Pointer[sozipState] // its SOZip index, once looked for
}

func (m *Member) state() uint32 { return m.st.Load() & stateMask }

func (m *Member) setState(s uint32) {
	m.st.Store(m.st.Load()&^stateMask | s)
}

func (m *Member) skip(reason string) {
	if m.state() == memberServed && reason != "" {
		m.setState(memberSkipped)
		m.a.setReason(m, reason)
	}
}

func (m *Member) skipped() bool { return m.state() == memberSkipped }

// reason is why the member is not served or has no views, from its name
// and the central directory.
func (m *Member) reason() string {
	if m.st.Load()&flagReason == 0 {
		return ""
	}
	return m.a.reasons[m.e.Index]
}

// path is the sanitised path the member is served at (while it is
// served): its name, less a directory entry's "/", unless sanitising
// changed it.
func (m *Member) path() string {
	if m.st.Load()&flagPath != 0 {
		return m.a.paths[m.e.Index]
	}
	return strings.TrimSuffix(m.Name(), "/")
}

// base is the last component of the member's path.
func (m *Member) base() string {
	p := m.path()
	return p[strings.LastIndexByte(p, '/')+1:]
}

// key is the base name of a .npy member without ".npy": its views
// folder's name.
func (m *Member) key() string { return strings.TrimSuffix(m.base(), ".npy") }

// located reports a member whose local header has been read: its data
// offset is known, or, for a location kept with an error, why it cannot
// be (either way, reading the local header again would not help).
func (m *Member) located() bool {
	return m.st.Load()&flagLocated != 0 || m.loaded() != nil
}

// Name is the member's name as stored in the archive (decoded from CP437
// when it is not UTF-8).
func (m *Member) Name() string { return m.a.names.get(m.e.name, m.e.nameLen) }

// Path is where the member is served, relative to the root, or "" when it
// is not served (see Reason).
func (m *Member) Path() string {
	if m.state() != memberServed {
		return ""
	}
	return m.path()
}

// Served reports whether the member appears in the tree.
func (m *Member) Served() bool { return m.state() == memberServed }

// IsDir reports a directory entry (a name ending in "/").
func (m *Member) IsDir() bool { return m.st.Load()&flagDir != 0 }

// Index is the member's position in the central directory.
func (m *Member) Index() int { return int(m.e.Index) }

// Method is the compression method: 0 stored, 8 deflated, others unreadable.
func (m *Member) Method() uint16 { return m.e.Method }

// Encrypted reports the encryption flag (such members cannot be read).
func (m *Member) Encrypted() bool { return m.st.Load()&flagCrypt != 0 }

// CompressedSize is the member's size in the archive.
func (m *Member) CompressedSize() int64 { return m.e.CompressedSize }

// Size is the member's uncompressed size.
func (m *Member) Size() int64 { return m.e.Size }

// HasCRC reports whether the member has a CRC-32 to check its bytes
// against: every zip member, but not a bare .npy file.
func (m *Member) HasCRC() bool { return m.st.Load()&flagBare == 0 }

// CRC32 is the CRC-32 of the uncompressed bytes, from the central
// directory (0 for a bare .npy file: see HasCRC).
func (m *Member) CRC32() uint32 { return m.e.CRC32 }

// ModTime is the member's modification time: the Unix time of an
// extended-timestamp extra field if there is one, else the MS-DOS time taken
// as UTC.
func (m *Member) ModTime() time.Time { return time.Unix(m.modified(), 0).UTC() }

func (m *Member) modified() int64 { return int64(m.e.mtime) + minTime }

// File is the member's bytes, or nil for a directory entry.
func (m *Member) File() *File {
	if m.IsDir() {
		return nil
	}
	return &File{m: m, kind: fileMember, size: m.e.Size}
}

// IsNPY reports a member whose path (or, if it is not served, name) ends
// in ".npy": it gets views when its header is valid.
func (m *Member) IsNPY() bool {
	p := m.Name()
	if m.state() == memberServed {
		p = m.path()
	}
	return !m.IsDir() && strings.HasSuffix(p, ".npy")
}

// Reason says why the member is not served, or, for a .npy member, why it
// has no views, or why its KEY.ra cannot be read; it is "" otherwise. It
// reads the npy header if needed.
func (m *Member) Reason(ctx context.Context) string {
	if m.state() != memberServed || m.IsDir() {
		return m.reason()
	}
	if m.IsNPY() {
		if r := m.reason(); r != "" {
			return r
		}
		ni := m.info(ctx)
		if ni.err != nil {
			return "no views: " + reasonText(ni.err)
		}
		if ni.raLen == 0 {
			if _, err := m.RawArray(ctx); err != nil {
				return "no .ra: " + reasonText(err)
			}
		}
		return ""
	}
	if err := m.readable(); err != nil {
		return reasonText(err)
	}
	return ""
}

// reasonText is an error as a short note about the member it concerns.
func reasonText(err error) string {
	var me *MethodError
	if errors.As(err, &me) {
		if me.Encrypted {
			return "cannot read: encrypted"
		}
		return fmt.Sprintf("cannot read: method %d (%s)", me.Method, MethodName(me.Method))
	}
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "npz: "), "zip: ")
}

// ReadError says why no byte of the member can be read (an unsupported
// method, encryption, sizes that cannot be right), from the central
// directory alone; nil when reads may succeed.
func (m *Member) ReadError() error {
	if m.IsDir() {
		return nil
	}
	return m.readable()
}

// readable reports a member npzfs cannot read at all.
func (m *Member) readable() error {
	if m.Encrypted() {
		return &MethodError{Name: m.Name(), Method: m.e.Method, Encrypted: true}
	}
	switch m.e.Method {
	case zip.Stored:
		if m.e.CompressedSize != m.e.Size {
			return &FormatError{Offset: m.e.HeaderOffset, Msg: fmt.Sprintf("stored member %q has compressed size %d but size %d", m.Name(), m.e.CompressedSize, m.e.Size)}
		}
		return nil
	case zip.Deflated:
		return nil
	}
	return &MethodError{Name: m.Name(), Method: m.e.Method}
}

// locate resolves (once) where the member's data starts in the archive and,
// for a deflated member, sets up its random-access inflater. A stored
// member keeps only its local header's length (lhLen): its location is
// made again at each call, which dataOffset avoids. The local header is
// read holding no lock (the member's lock is shared with others, and a
// read may wait on a network); two first uses at once may both read it,
// and the first to finish is kept.
func (m *Member) locate(ctx context.Context) *location {
	if l := m.loaded(); l != nil {
		return l
	}
	if m.st.Load()&flagLocated != 0 {
		return &location{dataOff: m.e.HeaderOffset + int64(m.lhLen)}
	}
	l := &location{}
	if l.err = m.readable(); l.err == nil {
		// A local header names the member when it decodes, as the
		// entry's name did, to the same.
		ze := m.zipEntry()
		l.dataOff, l.err = zip.DataOffset(m.a.r.at(ctx), m.a.size, &ze)
	}
	if passing(l.err) || errors.Is(l.err, ErrClosed) {
		return l // not kept: the next use reads the local header again
	}
	mu := m.a.lock(m)
	mu.Lock()
	defer mu.Unlock()
	if l := m.loaded(); l != nil {
		return l
	}
	if m.st.Load()&flagLocated != 0 {
		return &location{dataOff: m.e.HeaderOffset + int64(m.lhLen)}
	}
	if l.err != nil && !errors.Is(l.err, ErrChanged) { // logged once for all
		m.a.notef("npz: %q: every read fails: %v", m.Name(), l.err)
	}
	if l.err == nil && m.e.Method == zip.Stored {
		m.lhLen = uint32(l.dataOff - m.e.HeaderOffset)
		m.st.Or(flagLocated)
		return l
	}
	if l.err == nil && m.e.Method == zip.Deflated {
		src := &section{r: m.a.r, off: l.dataOff, n: m.e.CompressedSize}
		cache := m.a.spanCache() // makes the window budget too
		opts := &inflate.Options{SpanSize: m.a.opts.SpanSize, Cache: cache, Windows: m.a.windows, Helpers: m.a.opts.Helpers}
		var x *memberIndex
		if m.NeedsIndex() {
			x = &memberIndex{s: m.a.opts.Indexes, m: m, off: l.dataOff}
			opts.Index = x
		}
		l.inf = inflate.NewReaderAt(src, m.e.CompressedSize, m.e.Size, m.e.CRC32, opts)
		if x != nil {
			x.inf, l.idx = l.inf, x
		}
	}
	m.a.locs.put(m.e.Index, l)
	return l
}

// dataOffset is where the member's data starts in the archive, or why it
// cannot be found; once a stored member is located it allocates nothing.
func (m *Member) dataOffset(ctx context.Context) (int64, error) {
	if m.st.Load()&flagLocated != 0 {
		return m.e.HeaderOffset + int64(m.lhLen), nil
	}
	l := m.locate(ctx)
	return l.dataOff, l.err
}

// readAt reads exactly len(p) bytes at off of the member's uncompressed
// bytes, for a read served; the caller keeps off+len(p) within Size. A
// failure is counted (see fail), and the first of a member that could be
// located is logged (locate logs its own).
func (m *Member) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, l, err := m.readRaw(ctx, p, off)
	if err == nil {
		return n, nil
	}
	m.fail(err)
	if l == nil || l.err != nil {
		return n, err
	}
	if l.idx != nil && l.idx.damaged(err) {
		return n, err // logged
	}
	if !errors.Is(err, ErrChanged) && ctx.Err() == nil && m.st.Or(flagReadFailed)&flagReadFailed == 0 {
		m.a.notef("npz: %q: read failed: %v", m.Name(), err)
	}
	return n, err
}

// readRaw is readAt without its counting and logging (a verification
// pass says what it finds itself), and the member's location, nil when
// it has none.
func (m *Member) readRaw(ctx context.Context, p []byte, off int64) (int, *location, error) {
	var l *location
	if m.e.Method == zip.Stored {
		dataOff, err := m.dataOffset(ctx)
		if err != nil {
			return 0, nil, err
		}
		l = &location{dataOff: dataOff}
	} else if l = m.locate(ctx); l.err != nil {
		return 0, l, l.err
	}
	n, err := m.readData(ctx, l, p, off)
	return n, l, err
}

func (m *Member) readData(ctx context.Context, l *location, p []byte, off int64) (int, error) {
	dataOff := l.dataOff
	if len(p) == 0 {
		return 0, nil
	}
	if m.e.Method == zip.Stored {
		if b := m.checkedSums(); b != nil {
			return m.readChecked(ctx, b, dataOff, p, off)
		}
		return m.readStored(ctx, dataOff, p, off)
	}
	n, err := l.inf.ReadAtContext(ctx, p, off)
	if l.idx != nil {
		l.idx.note(ctx)
	}
	if m.st.Load()&flagVerified == 0 && m.HasCRC() {
		// A read that reached the end checked the CRC-32 of a member
		// inflated whole; a complete saved index checks every span.
		if pr := l.inf.Progress(); pr.Complete {
			m.setVerified(pr.Loaded)
		}
	}
	if n == len(p) {
		return n, nil
	}
	if ctx.Err() != nil {
		return n, ctx.Err()
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, newInflateError(m.Name(), dataOff, off+int64(n), err)
}

// stream returns a reader of the member's uncompressed bytes from the start,
// for reading its npy header: it reads only as far as it is read.
func (m *Member) stream(ctx context.Context) (io.Reader, error) {
	dataOff, err := m.dataOffset(ctx)
	if err != nil {
		return nil, err
	}
	if m.e.Method == zip.Stored {
		// One read fetches a typical header whole (numpy pads it to 64 or
		// 128 bytes, wide records take more).
		return bufio.NewReaderSize(io.NewSectionReader(m.a.r.at(ctx), dataOff, m.e.Size), 512), nil
	}
	zr := inflate.NewReader(io.NewSectionReader(m.a.r.at(ctx), dataOff, m.e.CompressedSize))
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(zr, m.e.Size), zr}, nil
}

// locateWithHead locates a stored member as locate does, by one read
// that also fetches the start of its data, and returns the bytes of its
// data that read held. On any failure it returns nil, and locate reads
// again and says why.
func (m *Member) locateWithHead(ctx context.Context, buf []byte) []byte {
	a := m.a
	ze := m.zipEntry()
	n := min(headerRead(m), a.size-m.e.HeaderOffset)
	if n <= 0 {
		return nil
	}
	b := fit(buf, n)
	if err := zip.ReadAtFull(a.r.at(ctx), b, m.e.HeaderOffset); err != nil {
		return nil
	}
	off, err := zip.ParseLocalHeader(b, a.size, &ze)
	if err != nil || off-m.e.HeaderOffset > int64(len(b)) {
		return nil
	}
	mu := a.lock(m)
	mu.Lock()
	if !m.located() {
		m.lhLen = uint32(off - m.e.HeaderOffset)
		m.st.Or(flagLocated)
	}
	mu.Unlock()
	head := b[off-m.e.HeaderOffset:]
	return head[:min(int64(len(head)), m.e.Size)]
}

// readHead reads the start of a stored member's data, as much as
// locateWithHead does, into buf if it is long enough; nil if it cannot
// (readNPY then says why).
func (m *Member) readHead(ctx context.Context, buf []byte) []byte {
	off, err := m.dataOffset(ctx)
	if err != nil {
		return nil
	}
	b := fit(buf, min(m.e.Size, prefetchGuess))
	if zip.ReadAtFull(m.a.r.at(ctx), b, off) != nil {
		return nil
	}
	return b
}

// headBufLen is the length of the buffers npy headers are read into
// (headBufs): a local header, a name of several hundred bytes and
// prefetchGuess bytes of data.
const headBufLen = 2 << 10

// headBufs recycles the buffers of header reads (see Member.info): a
// listing with attributes of a million arrays reads a million headers.
var headBufs = sync.Pool{New: func() any { b := make([]byte, headBufLen); return &b }}

// fit is the first n bytes of buf, or a new slice when buf is shorter.
func fit(buf []byte, n int64) []byte {
	if n <= int64(len(buf)) {
		return buf[:n]
	}
	return make([]byte, n)
}

// zipEntry is what zip needs of the member to read its local header.
func (m *Member) zipEntry() zip.Entry {
	ze := zip.Entry{Name: m.Name(), HeaderOffset: m.e.HeaderOffset, CompressedSize: m.e.CompressedSize}
	if m.st.Load()&flagUTF8 != 0 {
		ze.Flags = zip.FlagUTF8
	}
	return ze
}

// readHeader reads the member's npy header from its start, refusing one
// longer than maxLen; head, when not nil, is the start of the member's
// data, read already.
func (m *Member) readHeader(ctx context.Context, maxLen int, head []byte) (*npy.Header, error) {
	var r io.Reader
	var err error
	if head != nil && m.e.Method == zip.Stored {
		var dataOff int64
		if dataOff, err = m.dataOffset(ctx); err != nil {
			return nil, err
		}
		n := int64(len(head))
		r = io.MultiReader(bytes.NewReader(head), io.NewSectionReader(m.a.r.at(ctx), dataOff+n, m.e.Size-n))
	} else if r, err = m.stream(ctx); err != nil {
		return nil, err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close() // a deflated member's decoder goes back to the pool
	}
	return npy.ReadHeader(r, m.e.Size, &npy.Options{MaxHeaderLen: maxLen})
}

// readNPY reads and checks the member's npy header: it must parse and its
// array data must fit in the member.
func (m *Member) readNPY(ctx context.Context) (*npy.Header, error) { return m.readNPYFrom(ctx, nil) }

// readNPYFrom is readNPY for a member whose first bytes of data are head,
// read already (nil when none are).
func (m *Member) readNPYFrom(ctx context.Context, head []byte) (*npy.Header, error) {
	if !m.IsNPY() {
		return nil, errors.New("npz: not a .npy member")
	}
	h, err := m.readHeader(ctx, min(shortHeaderLen, m.a.opts.MaxHeaderLen), head)
	if errors.Is(err, npy.ErrHeaderTooLong) && m.a.opts.MaxHeaderLen > shortHeaderLen {
		m.a.longHeaders.Lock()
		h, err = m.readHeader(ctx, m.a.opts.MaxHeaderLen, head)
		m.a.longHeaders.Unlock()
	}
	if err != nil {
		return nil, err
	}
	if h.DType == nil {
		return nil, errors.New("npz: npy header has no dtype")
	}
	if h.DataOffset < 0 || h.DataOffset > m.e.Size {
		return nil, fmt.Errorf("npz: npy header ends at byte %d, past the %s's %d bytes", h.DataOffset, m.a.what(), m.e.Size)
	}
	dl := h.DataLength(m.e.Size)
	if dl < 0 || dl > m.e.Size-h.DataOffset {
		return nil, &TruncatedError{What: m.a.what(), Need: dl, Start: h.DataOffset, End: m.e.Size}
	}
	return h, nil
}
