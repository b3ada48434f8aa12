package npz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// DefaultSpanSize is the default distance between checkpoints in deflated
// members. A random read inflates half a span on average, and each
// checkpoint keeps the window bytes its span reads: shorter spans make
// random reads cheaper for a larger index (inflate's
// BenchmarkReadAtRandom4K and BenchmarkReadAtSequential128K compare
// spans; BENCHMARKS.md has the figures behind this one).
const DefaultSpanSize = 512 << 10

// DefaultCacheBytes is the default budget of inflated spans shared by the
// deflated members of an archive.
const DefaultCacheBytes = 16 << 20

// DefaultIndexBytes is the default bound on the memory the indexes of an
// archive's deflated members take: 64 MiB holds the full index of about
// 1 GiB of incompressible data, and of far more of typical arrays (about
// 30 KB per GiB of float32 noise).
const DefaultIndexBytes = 64 << 20

// DefaultMaxHeaderLen bounds a member's npy header unless
// Options.MaxHeaderLen says otherwise: npy's default of 1 MiB, far above
// the 10,000 characters np.load accepts by default, because numpy itself
// writes format 2.0 headers of more than 65,535 bytes for wide records.
const DefaultMaxHeaderLen = npy.DefaultMaxHeaderLen

// shortHeaderLen is the longest npy header read without taking
// Archive.longHeaders. Parsing a header costs about 40 times its length in
// memory (the parsed dtype and header.json), so headers longer than this
// (numpy's format 2.0 ones) are parsed one at a time.
const shortHeaderLen = 64 << 10

// maxDirectoryPrefetch bounds the central directory a source.Prefetcher
// is asked to fetch in one go: about 600,000 members' entries.
const maxDirectoryPrefetch = 64 << 20

// Options tune Open. The zero value is the default.
type Options struct {
	// MaxHeaderLen is passed to npy.ReadHeader; 0 means
	// DefaultMaxHeaderLen.
	MaxHeaderLen int
	// SpanSize is the inflated distance between checkpoints in deflated
	// members; 0 means DefaultSpanSize.
	SpanSize int64
	// CacheBytes is the budget of inflated spans shared by all members;
	// 0 means DefaultCacheBytes (16 MiB).
	CacheBytes int64
	// IndexBytes bounds the memory the deflated members' indexes take
	// (their checkpoints' windows; see inflate.WindowBudget): past it, a
	// member extending its index thins it. 0 means DefaultIndexBytes.
	IndexBytes int64
	// Cache and Windows, when set, are shared with other archives (the
	// archives of a folder mount) in place of the archive's own span
	// cache of CacheBytes and window budget of IndexBytes.
	Cache   *inflate.Cache
	Windows *inflate.WindowBudget
	// Indexes, when set, keeps the indexes of deflated members across
	// mounts (see IndexStore); the archive does not close it.
	Indexes *IndexStore
	// Sidecar, when set, is the archive's read-only file of saved indexes
	// (see IndexSidecar), looked in after Indexes; the archive does not
	// close it.
	Sidecar *IndexSidecar
	// Sidecars has Open look for the archive's sidecar beside its file
	// when Sidecar is not set.
	Sidecars bool
	// SidecarFinder, when set and Sidecar is not, finds the archive's
	// sidecar (a remote archive's, whose lookup is a request), in the
	// background, the first time a member needs a saved index the
	// IndexStore lacks; no read waits for it. A lookup that fails in a
	// way that may pass is made again later; the archive closes what it
	// finds.
	SidecarFinder SidecarFinder
	// Helpers is how many goroutines may help a first read deep into a
	// deflated member, indexing parts of it ahead at once (see
	// inflate.Options.Helpers); 0 means none.
	Helpers int
	// Verify says which members are verified before their first byte
	// is served (see VerifyMode); VerifyLimit is the largest member
	// VerifyAuto verifies: 0 means DefaultVerifyLimit, and a negative
	// limit none (a remote archive, whose members a pass would fetch
	// whole).
	Verify      VerifyMode
	VerifyLimit int64
	// Logf, when set, is told why a member or view is not served, and
	// what else goes wrong; LogName names the archive in those lines
	// ("" for its name).
	Logf    func(format string, args ...any)
	LogName string
}

// Archive is an open .npz archive. It is safe for concurrent use.
type Archive struct {
	input        // what the archive is read from
	opts         Options
	memberTable                // its members, from the central directory
	tree                       // its folders and inode numbers
	headerCaches               // what is kept of members' headers
	notesLog                   // what was logged of it
	side         sidecarLookup // the sidecar Options.SidecarFinder finds
	spanBudgets                // the span cache and window budget of its deflated members
	verifier                   // what was verified, and what failed

	modTime time.Time
	comment string
	prefix  int64 // bytes before the zip data (see Prefix)

	closed atomic.Bool
	done   chan struct{} // closed by Close: what runs for the archive ends
	opened atomic.Bool   // NewReader is done

	// Members resolve their local and npy headers under one of these
	// locks, picked by member index: exactly once per member, no lock
	// per member, and no single lock on the read path (reads of resolved
	// members take none).
	locks [64]sync.Mutex
	// longHeaders serialises the parsing of npy headers longer than
	// shortHeaderLen, so concurrent lookups cannot multiply their cost.
	longHeaders sync.Mutex
}

// input is what an archive is read from.
type input struct {
	closers []io.Closer // what Open opened, closed by Close
	r       *reader     // every read of the archive's bytes
	size    int64
	fd      uintptr // with hasFD: the archive's bytes are fd's from fdBase
	fdBase  int64
	hasFD   bool
	checker source.Checker // nil when the source cannot tell a change
}

// memberTable is an archive's members: chunks of 1<<chunkShift members,
// so that it grows without copying and never holds more than a chunk it
// does not use; an archive that declares few members gets small chunks.
type memberTable struct {
	chunks     [][]Member
	chunkShift uint8
	n          int              // members
	names      arena            // the members' names
	nameBytes  int64            // bytes of names so far, while the directory is read
	reasons    map[int32]string // static reasons (flagReason)
	paths      map[int32]string // served paths other than the name (flagPath)
	locs       locTable         // deflated members' locations, failed local headers
}

// tree is an archive's folders and inode numbers.
type tree struct {
	folders      []folder         // 0 is the root
	folderByPath map[string]int32 // when there are folders besides the root
	memberIno    uint64           // the first member's first inode number
	maxIno       uint64
}

// headerCaches are what an archive keeps of its members' npy headers.
type headerCaches struct {
	infos     infoCache     // what views need of npy headers, bounded
	facts     factsCache    // the same, by the headers' bytes
	ahead     atomic.Uint64 // the folder and kid of the last view asked for (see readAhead)
	jsonCache jsonCache     // long rendered header.json documents
}

// notesLog is what an archive logged of itself.
type notesLog struct {
	problems      []string
	notes         atomic.Int64 // per-member log lines written (see notef)
	notesMu       sync.Mutex
	changedLogged atomic.Bool // the source was found changed, and logged
}

// spanBudgets are an archive's span cache and window budget, its own or
// shared (Options.Cache, Options.Windows), made at first use.
type spanBudgets struct {
	cacheOnce sync.Once
	cache     *inflate.Cache
	windows   *inflate.WindowBudget
}

// A chunk of the member table holds 1<<maxChunkShift members, or for an
// archive that declares fewer, the power of two that holds them, but at
// least 1<<minChunkShift: a count that lies low costs more chunks, not
// more memory a member.
const (
	minChunkShift = 6
	maxChunkShift = 12
)

// chunkShift is the chunk size, as a shift, for n members declared.
func chunkShift(n int) uint8 {
	s := uint8(minChunkShift)
	for s < maxChunkShift && 1<<s < n {
		s++
	}
	return s
}

// member is the member of index i.
func (a *Archive) member(i int) *Member {
	return &a.chunks[i>>a.chunkShift][i&(1<<a.chunkShift-1)]
}

// addMember appends a member to the table and returns it.
func (a *Archive) addMember() *Member {
	if a.n&(1<<a.chunkShift-1) == 0 {
		a.chunks = append(a.chunks, make([]Member, 1<<a.chunkShift))
	}
	m := a.member(a.n)
	m.a = a
	m.e.Index = int32(a.n)
	a.n++
	return m
}

// setReason records a static reason on m (why it is not served or has no
// views).
func (a *Archive) setReason(m *Member, reason string) {
	if a.reasons == nil {
		a.reasons = map[int32]string{}
	}
	a.reasons[m.e.Index] = reason
	m.st.Or(flagReason)
}

// lock is the mutex that guards m's lazy resolution.
func (a *Archive) lock(m *Member) *sync.Mutex {
	return &a.locks[uint32(m.e.Index)%uint32(len(a.locks))]
}

// Open opens the file at path, a zip archive or a bare .npy file (see
// New), served under its base name; with Options.Sidecars, the archive's
// index sidecar beside it (SidecarPath), if there is one, is opened too.
// Close closes them. Every read fails once the file's size or
// modification time changes (source.File).
func Open(ctx context.Context, path string, opts *Options) (*Archive, error) {
	f, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	a, err := New(ctx, f, f.Size(), filepath.Base(path), opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a.closers = append(a.closers, f)
	if a.opts.Sidecars && !a.Bare() && a.opts.Sidecar == nil {
		sc, err := OpenIndexSidecar(SidecarPath(path))
		switch {
		case err == nil:
			a.opts.Sidecar = sc
			a.closers = append(a.closers, sc)
			a.tellSidecarDamage(sc)
		case !errors.Is(err, os.ErrNotExist):
			a.logf("npz: %v; not used", err)
		}
	}
	return a, nil
}

// New opens what r holds: a zip archive when it ends with a zip end
// record (NewReader), or else a bare .npy file when it starts with the
// .npy magic (NewNPY, served as name, with ".npy" added when name does
// not end so). This is how every archive npzfs opens is told apart, by
// its bytes and not its name: a zip's end is read first, since a remote
// source has fetched it already. A source that is neither fails with
// the zip reader's error, or, when name ends in ".npy", with what a .npy
// lacks.
func New(ctx context.Context, r io.ReaderAt, size int64, name string, opts *Options) (*Archive, error) {
	a, err := NewReader(ctx, r, size, opts)
	if err == nil {
		return a, nil
	}
	var magic [6]byte
	if size < int64(len(magic)) || zip.ReadAtFull(source.WithContext(ctx, r), magic[:], 0) != nil || string(magic[:]) != npy.Magic {
		if path.Ext(name) == ".npy" && string(magic[:2]) != "PK" {
			// Named .npy, and not a zip's first bytes either: what a
			// .npy lacks says more than a missing zip end record.
			return nil, &npy.FormatError{Msg: `not a .npy file: it does not start with the magic "\x93NUMPY", nor is it a zip archive`}
		}
		return nil, err
	}
	if path.Ext(name) != ".npy" {
		name += ".npy"
	}
	return NewNPY(ctx, r, size, name, opts)
}

// NewReader opens an archive of size bytes read from r and reads its
// central directory. It reads no local header and no member data: those
// are resolved lazily, once. It fails only when the archive itself is
// unreadable (no end record, no readable central directory); unusable
// members are listed with a reason.
//
// What else r can do is discovered through the optional interfaces of
// package source: reads carry the caller's context to a
// source.ContextReaderAt; a source.FileBacked source lets File.Extent
// report its stored files for splicing, after asking a source.Checker
// whether the source changed; a source.ModTimer gives folders and views
// their time (otherwise the latest of any member's). Close does not close
// r.
func NewReader(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Archive, error) {
	a := newArchive(r, size, opts)
	z, err := zip.NewReader(a.r.at(ctx), size)
	if err != nil {
		return nil, err
	}
	a.chunkShift = chunkShift(z.Declared())
	if p, ok := r.(source.Prefetcher); ok {
		// A remote source fetches the central directory in one request
		// rather than in the chunks it is read in, up to a bound, since
		// what the end record claims is not yet checked against anything.
		off, n := z.Directory()
		p.Prefetch(ctx, []source.Range{{Off: off, Len: min(n, maxDirectoryPrefetch, size-off)}})
	}
	left := 0 // entries past what the member table can hold
	err = z.Entries(func(e *zip.Entry) {
		if a.n >= math.MaxInt32/int(inoBlock) || len(a.names.blocks) >= 1<<(32-arenaShift) {
			left++ // member indexes, or names' places, would run out
			return
		}
		m := a.addMember()
		// The next block of names is sized for the names still to come,
		// at the share of the directory they took so far.
		done, total := z.Progress()
		a.nameBytes += int64(len(e.Name))
		m.e.name, m.e.nameLen = a.names.add(e.Name, (total-done)*a.nameBytes/max(done, 1)*17/16+int64(len(e.Name)))
		m.e.CompressedSize, m.e.Size, m.e.HeaderOffset = e.CompressedSize, e.Size, e.HeaderOffset
		m.e.CRC32, m.e.Method, m.e.mtime = e.CRC32, e.Method, packTime(e.Modified)
		if e.Encrypted() {
			m.st.Or(flagCrypt)
		}
		if e.Flags&zip.FlagUTF8 != 0 {
			m.st.Or(flagUTF8)
		}
		if e.Flags&zip.FlagDataDescriptor != 0 {
			m.st.Or(flagDescriptor)
		}
		m.skip(e.Unusable)
		if reason := e.ImpossibleSize(); reason != "" && !isDirName(e.Name) {
			m.skip(reason)
		}
	})
	if err != nil {
		return nil, err
	}
	if left > 0 {
		a.problemf("the central directory holds %d more entries than npzfs serves (%d, or 4 GiB of names)", left, a.n)
	}
	a.comment = z.Comment()
	a.prefix = z.Prefix()
	for _, p := range z.Problems() {
		a.problemf("%s", p)
	}
	if a.prefix > 0 {
		a.problemf("%d bytes precede the zip data (prepended without adjusting the archive's offsets, as a script or stub before the zip is): read with every offset shifted by them, as Info-ZIP and Go's archive/zip do", a.prefix)
	}
	a.serve(r)
	return a, nil
}

// newArchive sets up an archive read from r, before its members are
// known: the options' defaults and what r offers beyond reading.
func newArchive(r io.ReaderAt, size int64, opts *Options) *Archive {
	a := &Archive{input: input{size: size}, done: make(chan struct{})}
	a.r = &reader{a: a, src: r}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.SpanSize <= 0 {
		a.opts.SpanSize = DefaultSpanSize
	}
	if a.opts.MaxHeaderLen <= 0 {
		a.opts.MaxHeaderLen = DefaultMaxHeaderLen
	}
	if fb, ok := r.(source.FileBacked); ok {
		a.fd, a.fdBase = fb.FileExtent()
		a.hasFD = true
	}
	a.checker, _ = r.(source.Checker)
	return a
}

// serve decides which members are served and where, builds the tree, and
// notes what cannot be served or read.
func (a *Archive) serve(r io.ReaderAt) {
	var latest int64
	for i := range a.n {
		m := a.member(i)
		latest = max(latest, m.modified())
		if m.skipped() {
			a.notef("npz: %q: not served: %s", m.Name(), m.reason())
			continue
		}
		p, dir, reason := sanitize(m.Name())
		if dir {
			m.st.Or(flagDir)
		}
		if reason != "" {
			m.skip(reason)
			a.notef("npz: %q: not served: %s", m.Name(), reason)
			continue
		}
		if p != strings.TrimSuffix(m.Name(), "/") {
			if a.paths == nil {
				a.paths = map[int32]string{}
			}
			a.paths[m.e.Index] = p
			m.st.Or(flagPath)
		}
	}
	if mt, ok := r.(source.ModTimer); ok {
		a.modTime = mt.ModTime()
	}
	if a.modTime.IsZero() {
		a.modTime = time.Unix(latest, 0).UTC()
	}
	a.buildTree()
	for i := range a.n {
		m := a.member(i)
		if m.state() == memberServed && !m.IsDir() {
			if err := m.readable(); err != nil {
				a.notef("npz: %q: every read fails: %s", m.Name(), reasonText(err))
			}
		}
	}
	if n := a.notes.Load() - maxOpenNotes; n > 0 {
		a.logf("npz: and %d more members that are not served or cannot be read (npzfs ls lists them all); later notes are not logged", n)
	}
	a.opened.Store(true)
}

// isDirName reports a directory entry's name (ending in "/").
func isDirName(name string) bool { return len(name) > 0 && name[len(name)-1] == '/' }

// ErrChanged is the cause of every read of an archive whose source
// changed (a file's size or modification time, a remote object's
// identity) after it was opened: nothing more is read from it, so a
// truncated or rewritten archive is never served as a mix of old and new
// bytes. Bytes already read stay valid. It is source.ErrChanged.
var ErrChanged = source.ErrChanged

// Bare reports an archive that is a bare .npy file (NewNPY), not a zip.
func (a *Archive) Bare() bool { return a.n == 1 && a.member(0).st.Load()&flagBare != 0 }

// what is what messages call the member of a bare .npy: the file.
func (a *Archive) what() string {
	if a.Bare() {
		return "file"
	}
	return "member"
}

// Close closes the archive file (and its sidecar) when Open opened it. Reads after Close
// fail (those that would splice from its file with ErrClosed), and what
// its indexes took of a shared window budget (Options.Windows) is given
// back. Close it only when no read of it is under way: a read that had
// already been given the archive file's descriptor (File.Extent) would
// use a closed one.
func (a *Archive) Close() error {
	if !a.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(a.done)
	for _, l := range a.locs.all() {
		if l.inf != nil {
			l.inf.Release()
			if l.idx != nil {
				l.idx.closing()
				l.idx.close()
			}
		}
	}
	var err error
	for _, c := range a.closers {
		err = cmp.Or(err, c.Close())
	}
	return cmp.Or(err, a.closeSidecar())
}

// Own has Close close c too, after what the archive opened itself: what
// its bytes are read from, opened for it (a remote object's source). It
// is called before the archive is used.
func (a *Archive) Own(c io.Closer) { a.closers = append(a.closers, c) }

// ErrClosed is the error of reads of a closed Archive.
var ErrClosed = errors.New("npz: the archive is closed")

// MaxIno is the highest inode number of the archive's tree: every node's
// is between 1 (the root) and MaxIno.
func (a *Archive) MaxIno() uint64 { return a.maxIno }

// Root is the top folder of the served tree; its inode number is 1.
func (a *Archive) Root() *Node { return &Node{a: a, kind: kindDir} }

// Members lists every central directory entry in order, served or not.
func (a *Archive) Members() []*Member {
	out := make([]*Member, a.n)
	for i := range a.n {
		out[i] = a.member(i)
	}
	return out
}

// All yields every central directory entry in order, as Members lists
// them, without making a slice of a million pointers for an archive of a
// million members.
func (a *Archive) All() iter.Seq[*Member] {
	return func(yield func(*Member) bool) {
		for i := range a.n {
			if !yield(a.member(i)) {
				return
			}
		}
	}
}

// Len is how many central directory entries the archive has.
func (a *Archive) Len() int { return a.n }

// Member finds a member by its name in the archive or its served path:
// the one served, else the last of that name; nil if there is none.
func (a *Archive) Member(name string) *Member {
	var found *Member
	for i := a.n - 1; i >= 0; i-- {
		m := a.member(i)
		if m.Name() == name || (m.state() != memberSkipped && m.path() == name) {
			if m.state() == memberServed {
				return m
			}
			if found == nil {
				found = m
			}
		}
	}
	return found
}

// Prefix is how many bytes precede the zip data when they were prepended
// without adjusting the offsets the archive records (a script before the
// zip, without zip -A): every offset is read shifted by them. It is 0 for
// an ordinary archive.
func (a *Archive) Prefix() int64 { return a.prefix }

// Comment is the archive comment.
func (a *Archive) Comment() string { return a.comment }

// ModTime is the source's modification time (a file's), or where the
// source has none, the latest of its members'.
func (a *Archive) ModTime() time.Time { return a.modTime }

// Size is the archive file's size.
func (a *Archive) Size() int64 { return a.size }

// Identity is the identity of the archive's source when it was opened,
// when the source can tell (source.Identifier), else "".
func (a *Archive) Identity() string {
	if id, ok := a.r.src.(source.Identifier); ok {
		return id.Identity()
	}
	return ""
}

// Problems lists what is wrong with the archive as a whole but did not
// stop it from opening (an entry count that does not match, a central
// directory that ends early).
func (a *Archive) Problems() []string { return a.problems }

func (a *Archive) problemf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.problems = append(a.problems, msg)
	a.logf("npz: %s", msg)
}

// unsettle records that m's header could not be read for now.
func (m *Member) unsettle() { m.st.Or(flagUnsettled) }

// settle records that m's header was read (or found bad for good).
func (m *Member) settle() { m.st.And(^uint32(flagUnsettled)) }

// maxOpenNotes is how many member notes (not served, unreadable, no
// views, a failed read) an archive writes to the log; past it one line
// says that the rest are not logged, so that an archive of a million bad
// entries does not flood the log. npzfs ls lists them all.
const maxOpenNotes = 1000

// notef logs one member's note, the first maxOpenNotes times.
func (a *Archive) notef(format string, args ...any) {
	// Under a lock, so that the line saying the rest are not logged is
	// the last one, whichever goroutines write notes.
	a.notesMu.Lock()
	defer a.notesMu.Unlock()
	switch n := a.notes.Add(1); {
	case n <= maxOpenNotes:
		a.logf(format, args...)
	case n == maxOpenNotes+1 && a.opened.Load():
		a.logf("npz: more members are not served, cannot be read or have no views; they are not logged (npzfs ls lists them all)")
	}
}

// logf logs a line about the archive, named after the "npz: " every
// line starts with.
func (a *Archive) logf(format string, args ...any) {
	if a.opts.Logf == nil {
		return
	}
	if rest, ok := strings.CutPrefix(format, "npz: "); ok && a.opts.LogName != "" {
		a.opts.Logf("npz: %s: "+rest, append([]any{a.opts.LogName}, args...)...)
		return
	}
	a.opts.Logf(format, args...)
}

// spanCache is the archive's one cache of inflated spans, made on first use.
func (a *Archive) spanCache() *inflate.Cache {
	a.cacheOnce.Do(func() {
		o := a.opts
		o.ShareBudgets()
		a.cache, a.windows = o.Cache, o.Windows
	})
	return a.cache
}

// ShareBudgets sets Cache and Windows, where they are unset, to a span
// cache of CacheBytes and a window budget of IndexBytes (their defaults
// where 0): archives opened with the same Options then share them.
func (o *Options) ShareBudgets() {
	if o.Cache == nil {
		o.Cache = inflate.NewCache(cmp.Or(max(o.CacheBytes, 0), DefaultCacheBytes))
	}
	if o.Windows == nil {
		o.Windows = inflate.NewWindowBudget(cmp.Or(max(o.IndexBytes, 0), DefaultIndexBytes))
	}
}
