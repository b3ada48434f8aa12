package npz

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"sync"

	"github.com/npzfs/npzfs/cachedir"
	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/zip"
)

// An IndexStore keeps the indexes of deflated members in a folder, so
// that a later mount of the same archive (or of a copy of it, wherever it
// lies) reads anywhere in a member at once instead of inflating it from
// its start. It is bounded in bytes, the least recently used indexes
// going first, and may be shared by several archives and processes.
//
// A member's index is keyed by its content, not by a path or a time: a
// SHA-256 of its central directory record (name, CRC-32, sizes, method,
// local header offset), its local header, and the first and last 64 KiB
// of its compressed data. It is loaded at the first read of the member
// that its in-memory index does not cover, and saved once the member has
// been indexed to its end (a full read, npzfs index); an index is never
// trusted beyond what each span's CRC-32 confirms (see inflate.LoadIndex).
//
// Layout: DIR/v1/KK/KEY.idx, KEY the hex SHA-256 and KK its first two
// characters; each file is in the format package inflate documents.
type IndexStore struct {
	dir     *cachedir.Dir
	mu      sync.Mutex
	closing bool // Close was called: nothing more is saved
	saves   sync.WaitGroup
}

// startSave counts a save in the background, unless the store is
// closing; it reports whether to go on.
func (s *IndexStore) startSave() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.saves.Add(1)
	return true
}

// indexEdge is how much of a member's compressed data, at each end, goes
// into its index key.
const indexEdge = 64 << 10

// OpenIndexStore opens (and creates) the index folder dir, holding at
// most maxBytes of indexes.
func OpenIndexStore(dir string, maxBytes int64) (*IndexStore, error) {
	d, err := cachedir.Open(dir+"/v1", maxBytes)
	if err != nil {
		return nil, fmt.Errorf("index folder: %w", err)
	}
	return &IndexStore{dir: d}, nil
}

// Close waits for the indexes being saved, and leaves the folder within
// its bound.
func (s *IndexStore) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.saves.Wait()
	return s.dir.Close()
}

// Path is the folder the indexes are in (the one given, plus "v1").
func (s *IndexStore) Path() string { return s.dir.Path() }

// memberIndex links one deflated member's inflater to the store and the
// sidecar (either may be nil).
type memberIndex struct {
	s   *IndexStore
	sc  *IndexSidecar
	m   *Member
	off int64 // where the member's data starts
	inf *inflate.ReaderAt

	once sync.Once
	name string // in the store; "" when the key could not be made

	mu          sync.Mutex
	file        *os.File // the saved index loaded, read for its windows
	fromSidecar bool     // the index loaded came from the sidecar
	fromStore   bool     // an index was loaded from the store, or saved to it
	savedAt     int64    // how far the last partial index saved reached
	saving      int      // saves under way, which may read windows from file
	closed      bool     // close was called: file closes once saving is 0
}

// grew is the inflater's Options.Grew: past partialEvery since the last
// save, the index so far is saved, in the background.
func (x *memberIndex) grew(indexed int64) {
	if x.s == nil {
		return
	}
	x.mu.Lock()
	due := indexed-x.savedAt >= partialEvery
	if due {
		x.savedAt = indexed
	}
	x.mu.Unlock()
	if due && x.s.startSave() {
		go func() {
			defer x.s.saves.Done()
			x.savePartial()
		}()
	}
}

// minPartialSpans is the least a partial index covers to be saved: less
// is quickly indexed again.
const minPartialSpans = 4

// partialEvery is how far a member's index grows between two saves of it
// as a partial index while the archive is open (so that a daemon killed
// keeps most of what it indexed): about a second of inflation.
var partialEvery int64 = 256 << 20

// key computes (once) the member's name in the store.
func (x *memberIndex) key() string {
	x.once.Do(func() {
		e := &x.m.e
		h := sha256.New()
		h.Write([]byte("npzfs member index v1\x00"))
		h.Write([]byte(e.Name))
		var fixed [8 + 4 + 8 + 8 + 2 + 8]byte
		le := binary.LittleEndian
		le.PutUint64(fixed[0:], uint64(len(e.Name)))
		le.PutUint32(fixed[8:], e.CRC32)
		le.PutUint64(fixed[12:], uint64(e.CompressedSize))
		le.PutUint64(fixed[20:], uint64(e.Size))
		le.PutUint16(fixed[28:], e.Method)
		le.PutUint64(fixed[30:], uint64(e.HeaderOffset))
		h.Write(fixed[:])
		head := min(indexEdge, e.CompressedSize)
		tail := min(indexEdge, e.CompressedSize-head)
		lh := x.off - e.HeaderOffset // the local header, name and extra
		if lh < 0 || lh > 1<<17 {
			return
		}
		buf := make([]byte, lh+head+tail)
		if _, err := x.m.a.r.ReadAt(buf[:lh+head], e.HeaderOffset); err != nil {
			return
		}
		if tail > 0 {
			if _, err := x.m.a.r.ReadAt(buf[lh+head:], x.off+e.CompressedSize-tail); err != nil {
				return
			}
		}
		h.Write(buf)
		sum := hex.EncodeToString(h.Sum(nil))
		x.name = sum[:2] + "/" + sum + ".idx"
	})
	return x.name
}

// load is the inflater's Options.Load: the saved index's file is opened
// and kept open (its windows are read as spans need them) until close.
func (x *memberIndex) load() (io.ReaderAt, int64) {
	name := x.key()
	if name == "" {
		return nil, 0
	}
	if x.s == nil {
		return x.loadSidecar(name)
	}
	f, err := x.s.dir.Open(name)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) {
			x.m.a.notef("npz: %q: cannot read its saved index: %v", x.m.e.Name, err)
		}
		return x.loadSidecar(name)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0
	}
	x.mu.Lock()
	x.file, x.fromStore = f, true
	x.mu.Unlock()
	return f, fi.Size()
}

// loadSidecar finds the member's index in the sidecar, if any. (The
// store comes first: an index rebuilt after the sidecar's failed is
// there.)
func (x *memberIndex) loadSidecar(name string) (io.ReaderAt, int64) {
	if x.sc == nil {
		return nil, 0
	}
	src, size := x.sc.lookup(name)
	if src != nil {
		x.mu.Lock()
		x.fromSidecar = true
		x.mu.Unlock()
	}
	return src, size
}

// close closes the saved index's file, if one was opened, once no save
// of the index is under way (a save reads the windows it loaded from it).
func (x *memberIndex) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	x.closeFileLocked()
}

func (x *memberIndex) closeFileLocked() {
	if x.file != nil && x.closed && x.saving == 0 {
		x.file.Close()
		x.file = nil
	}
}

// save is the inflater's Options.Complete: the index is written in the
// background (the store's Close waits for it).
func (x *memberIndex) save() {
	if x.s == nil {
		return
	}
	snap, ok := x.inf.IndexSnapshot()
	name := x.key() // now: the archive may be closed once this returns
	if !ok || name == "" {
		return
	}
	x.put(name, snap)
}

// put writes the index snap as name in the store, in the background (the
// store's Close waits for it), straight from the windows in memory or in
// the index file they were loaded from, so that saving an index takes no
// memory of its size; once written, the store's index is ours to replace
// with a larger one.
func (x *memberIndex) put(name string, snap *inflate.IndexSnapshot) {
	if !x.s.startSave() {
		return
	}
	x.mu.Lock()
	x.saving++
	x.mu.Unlock()
	go func() {
		defer x.s.saves.Done()
		err := x.s.dir.PutFrom(name, snap)
		x.mu.Lock()
		x.saving--
		x.closeFileLocked()
		if err == nil {
			x.fromStore = true
		}
		x.mu.Unlock()
		if err != nil {
			x.m.a.notef("npz: %q: cannot save its index: %v", x.m.e.Name, err)
		}
	}()
}

// savePartial saves the member's index so far, when the archive closes
// before the member was indexed to its end, unless the store holds an
// index of it that this archive did not load (another process's, which
// may be complete).
func (x *memberIndex) savePartial() {
	if x.s == nil {
		return
	}
	snap, ok := x.inf.PartialIndexSnapshot(minPartialSpans)
	if !ok {
		return
	}
	name := x.key()
	if name == "" {
		return
	}
	x.mu.Lock()
	fromStore := x.fromStore
	x.mu.Unlock()
	if !fromStore && x.s.dir.Has(name) {
		return
	}
	x.put(name, snap)
}

// bad is the inflater's Options.BadIndex: the saved index is removed
// (the member is indexed afresh, and saved again once it is whole).
func (x *memberIndex) bad(err error) {
	if x.m.a.closed.Load() {
		return // its file was closed under a late read: not the index's fault
	}
	x.mu.Lock()
	sidecar := x.fromSidecar
	x.fromSidecar = false
	x.mu.Unlock()
	x.mu.Lock()
	x.fromStore = false
	x.mu.Unlock()
	if sidecar {
		x.m.a.notef("npz: %q: saved index in %s not used: %v", x.m.e.Name, x.sc.Path(), err)
		return
	}
	if x.s == nil {
		return
	}
	x.m.a.notef("npz: %q: saved index %s not used: %v", x.m.e.Name, x.s.dir.Path()+"/"+x.key(), err)
	if name := x.key(); name != "" {
		x.s.dir.Remove(name)
	}
}

// BuildIndex indexes a deflated member to its end (loading its saved
// index, when the archive has an IndexStore that holds one), checking its
// length and CRC-32 unless the index was loaded; the index is then saved,
// if the archive has an IndexStore. It runs in the calling goroutine and
// stops when ctx is done; reads of the member go on meanwhile. A stored
// member needs no index: BuildIndex returns nil.
func (m *Member) BuildIndex(ctx context.Context) error {
	return m.buildIndex(ctx, (*inflate.ReaderAt).IndexAll)
}

// BuildIndexParallel is BuildIndex with the first pass through a large
// member shared among up to workers goroutines (see
// inflate.ReaderAt.IndexAllParallel), and reports whether it was. A read
// of the member past its index waits for the whole pass: it is for
// building indexes ahead of time, as npzfs index does, not for a mounted
// archive.
func (m *Member) BuildIndexParallel(ctx context.Context, workers int) (bool, error) {
	var split bool
	err := m.buildIndex(ctx, func(r *inflate.ReaderAt, ctx context.Context) error {
		var err error
		split, err = r.IndexAllParallel(ctx, workers)
		return err
	})
	return split, err
}

func (m *Member) buildIndex(ctx context.Context, indexAll func(*inflate.ReaderAt, context.Context) error) error {
	if m.e.Method != zip.Deflated {
		return nil
	}
	l := m.locate()
	if l.err != nil {
		return l.err
	}
	if err := indexAll(l.inf, ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &FormatError{Offset: l.dataOff, Msg: fmt.Sprintf("cannot inflate %q", m.e.Name), Err: err}
	}
	return nil
}

// Indexed is how many bytes of a deflated member its index covers (all
// of them for a stored member).
func (m *Member) Indexed() int64 {
	if m.e.Method != zip.Deflated {
		return m.e.Size
	}
	l := m.loc.Load()
	if l == nil || l.inf == nil {
		return 0
	}
	return l.inf.Indexed()
}
