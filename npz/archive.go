package npz

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz/inflate"
)

// DefaultSpanSize is the default distance between checkpoints in deflated
// members. A random read inflates half a span on average; with the sparse
// windows the index keeps, halving the span from 1 MiB cost no sequential
// throughput and about 30 KB of index per GiB, and made random 4 KiB reads
// of a 256 MiB member about a quarter faster (inflate's
// BenchmarkReadAtRandom4K and BenchmarkReadAtSequential128K compare spans).
const DefaultSpanSize = 512 << 10

// DefaultCacheBytes is the default budget of inflated spans shared by the
// deflated members of an archive.
const DefaultCacheBytes = 16 << 20

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

// Options tune Open. The zero value is the default.
type Options struct {
	// MaxHeaderLen is passed to npy.ReadHeader; 0 means
	// DefaultMaxHeaderLen.
	MaxHeaderLen int
	// ViewBytes bounds the memory the archive's views hold (parsed npy
	// headers and header.json documents, counted as three times the
	// length of header.json); a member whose views would pass it has
	// none. 0 means 64 MiB plus four times the archive's size, at most
	// 160 MiB: a 100,000-array archive from np.savez needs about 100 MiB,
	// while headers of many record fields can make views hold hundreds of
	// times the bytes they take in the archive.
	ViewBytes int64
	// SpanSize is the inflated distance between checkpoints in deflated
	// members; 0 means DefaultSpanSize.
	SpanSize int64
	// CacheBytes is the budget of inflated spans shared by all members;
	// 0 means DefaultCacheBytes (16 MiB).
	CacheBytes int64
	// Logf, when set, is told why a member or view is not served.
	Logf func(format string, args ...any)
}

// Archive is an open .npz archive. It is safe for concurrent use.
type Archive struct {
	f       *os.File // the file Open opened, closed by Close
	r       io.ReaderAt
	size    int64
	fd      uintptr
	hasFD   bool
	opts    Options
	modTime time.Time
	comment string

	members  []Member
	root     *Node
	problems []string
	notes    int // per-member log lines written while opening (see notef)

	cacheOnce sync.Once
	cache     *inflate.Cache

	viewBytes       atomic.Int64 // held by views, against opts.ViewBytes
	viewBudgetSpent atomic.Bool  // a member was refused views for it

	// Members resolve their local and npy headers under one of these
	// locks, picked by member index: exactly once per member, no lock
	// per member, and no single lock on the read path (reads of resolved
	// members take none).
	locks [64]sync.Mutex

	// longHeaders serialises the parsing of npy headers longer than
	// shortHeaderLen, so concurrent lookups cannot multiply their cost.
	longHeaders sync.Mutex
}

// lock is the mutex that guards m's lazy resolution.
func (a *Archive) lock(m *Member) *sync.Mutex { return &a.locks[uint32(m.index)%uint32(len(a.locks))] }

// Open opens the archive at path and reads its central directory. It reads
// no local header and no member data: those are resolved lazily, once.
// It fails only when the archive itself is unreadable (no end record, no
// readable central directory); unusable members are listed with a reason.
func Open(path string, opts *Options) (*Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("npz: %s is not a regular file", path)
	}
	a, err := openReader(f, fi.Size(), opts, fi.ModTime())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a.f = f
	return a, nil
}

// OpenReader opens an archive of size bytes read from r. File.Extent
// reports ok only when r is an *os.File (which Close does not close).
// Folders and views take the latest modification time of any member.
func OpenReader(r io.ReaderAt, size int64, opts *Options) (*Archive, error) {
	return openReader(r, size, opts, time.Time{})
}

func openReader(r io.ReaderAt, size int64, opts *Options, modTime time.Time) (*Archive, error) {
	a := &Archive{r: r, size: size}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.SpanSize <= 0 {
		a.opts.SpanSize = DefaultSpanSize
	}
	if a.opts.MaxHeaderLen <= 0 {
		a.opts.MaxHeaderLen = DefaultMaxHeaderLen
	}
	if a.opts.ViewBytes <= 0 {
		a.opts.ViewBytes = min(64<<20+4*max(size, 0), 160<<20)
	}
	if f, ok := r.(*os.File); ok {
		a.fd, a.hasFD = f.Fd(), true
		g, err := newFileGuard(f, a)
		if err != nil {
			return nil, err
		}
		a.r = g
	}
	if size < 0 {
		return nil, &FormatError{Offset: 0, Msg: "negative archive size"}
	}
	d, err := findDirectory(r, size)
	if err != nil {
		return nil, err
	}
	a.comment = d.comment
	if err := a.parseDirectory(d); err != nil {
		return nil, err
	}
	var latest int64
	for i := range a.members {
		m := &a.members[i]
		m.file = File{m: m, kind: fileMember, size: m.size}
		latest = max(latest, m.mtime)
		if m.skipped() {
			a.notef("npz: %q: not served: %s", m.name, m.reason)
			continue
		}
		p, dir, reason := sanitize(m.name)
		m.path, m.dir = p, dir
		if reason != "" {
			m.skip(reason)
			a.notef("npz: %q: not served: %s", m.name, reason)
		}
		if m.dir {
			m.file.size = 0
		}
	}
	if modTime.IsZero() {
		modTime = time.Unix(latest, 0).UTC()
	}
	a.modTime = modTime
	a.buildTree()
	for i := range a.members {
		m := &a.members[i]
		if m.state == memberServed && !m.dir {
			if err := m.readable(); err != nil {
				a.notef("npz: %q: every read fails: %s", m.name, reasonText(err))
			}
		}
	}
	if n := a.notes - maxOpenNotes; n > 0 {
		a.logf("npz: and %d more members that are not served or cannot be read (npzfs ls lists them all)", n)
	}
	return a, nil
}

// ErrChanged is the cause of every read of an archive file that changed
// (its size or modification time) after it was opened: nothing more is
// read from it, so a truncated or rewritten archive is never served as a
// mix of old and new bytes. Bytes already read stay valid.
var ErrChanged = errors.New("the archive file changed after it was opened (truncated or rewritten)")

// fileGuard reads the archive file after checking that its size and
// modification time are still those it had when opened.
type fileGuard struct {
	f       *os.File
	a       *Archive
	size    int64
	modTime time.Time
	logged  atomic.Bool
}

func newFileGuard(f *os.File, a *Archive) (*fileGuard, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &fileGuard{f: f, a: a, size: fi.Size(), modTime: fi.ModTime()}, nil
}

// check reports ErrChanged (as a *FormatError) once the file has changed.
func (g *fileGuard) check() error {
	fi, err := g.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == g.size && fi.ModTime().Equal(g.modTime) {
		return nil
	}
	if !g.logged.Swap(true) {
		g.a.logf("npz: %v: was %d bytes, now %d; every read that needs the file fails from now on", ErrChanged, g.size, fi.Size())
	}
	return &FormatError{Offset: min(fi.Size(), g.size), Msg: "cannot read the archive", Err: ErrChanged}
}

func (g *fileGuard) ReadAt(p []byte, off int64) (int, error) {
	if err := g.check(); err != nil {
		return 0, err
	}
	return g.f.ReadAt(p, off)
}

// Close closes the archive file (when Open opened it). Reads after Close
// fail.
func (a *Archive) Close() error {
	if a.f != nil {
		return a.f.Close()
	}
	return nil
}

// Root is the top folder of the served tree; its inode number is 1.
func (a *Archive) Root() *Node { return a.root }

// Members lists every central directory entry in order, served or not.
func (a *Archive) Members() []*Member {
	out := make([]*Member, len(a.members))
	for i := range a.members {
		out[i] = &a.members[i]
	}
	return out
}

// Member finds a member by its name in the archive or its served path:
// the one served, else the last of that name; nil if there is none.
func (a *Archive) Member(name string) *Member {
	var found *Member
	for i := len(a.members) - 1; i >= 0; i-- {
		m := &a.members[i]
		if m.name == name || (m.path == name && m.state != memberSkipped) {
			if m.state == memberServed {
				return m
			}
			if found == nil {
				found = m
			}
		}
	}
	return found
}

// Comment is the archive comment.
func (a *Archive) Comment() string { return a.comment }

// Size is the archive file's size.
func (a *Archive) Size() int64 { return a.size }

// Problems lists what is wrong with the archive as a whole but did not
// stop it from opening (an entry count that does not match, a central
// directory that ends early).
func (a *Archive) Problems() []string { return a.problems }

func (a *Archive) problemf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.problems = append(a.problems, msg)
	a.logf("npz: %s", msg)
}

// maxOpenNotes is how many members Open names in the log (not served,
// unreadable); past it one line says how many more there are, so that an
// archive of a million bad entries does not flood the log.
const maxOpenNotes = 1000

// notef logs one member's note while opening, the first maxOpenNotes times.
func (a *Archive) notef(format string, args ...any) {
	a.notes++
	if a.notes <= maxOpenNotes {
		a.logf(format, args...)
	}
}

func (a *Archive) logf(format string, args ...any) {
	if a.opts.Logf != nil {
		a.opts.Logf(format, args...)
	}
}

// spanCache is the archive's one cache of inflated spans, made on first use.
func (a *Archive) spanCache() *inflate.Cache {
	a.cacheOnce.Do(func() {
		budget := a.opts.CacheBytes
		if budget <= 0 {
			budget = DefaultCacheBytes
		}
		a.cache = inflate.NewCache(budget)
	})
	return a.cache
}
