package npz

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"

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
// What the inflater did with its index is looked at after each read
// (memberIndex.note): the inflater never calls up into npz.
//
// Layout: DIR/v1/KK/KEY.idx, KEY the hex SHA-256 and KK its first two
// characters; each file is in the format package inflate documents.
type IndexStore struct {
	dir     *cachedir.Dir
	mu      sync.Mutex
	closing bool // Close was called: nothing more is saved
	saves   sync.WaitGroup

	// Counts, for Stats.
	loaded, refused, saved atomic.Int64
}

// IndexStoreStats count what the archives using a store did with it.
type IndexStoreStats struct {
	Loaded  int64 // saved indexes handed to a member's inflater (a sidecar's too)
	Refused int64 // those the inflater found not to belong, or damaged, and dropped
	Saved   int64 // complete indexes written
}

// Stats reports what the archives using the store did with it so far.
func (s *IndexStore) Stats() IndexStoreStats {
	return IndexStoreStats{Loaded: s.loaded.Load(), Refused: s.refused.Load(), Saved: s.saved.Load()}
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

// memberIndex links one deflated member's inflater to the store (which
// may be nil) and the archive's sidecar, if any: it is the inflater's
// inflate.IndexSource, and acts on the inflater's inflate.Progress (see
// note).
type memberIndex struct {
	s   *IndexStore
	m   *Member
	off int64 // where the member's data starts
	inf *inflate.ReaderAt

	storeName             // its name in the store
	look      indexLookup // the look for its saved index (see OpenIndex)
	noted                 // what note has acted on

	damageLogged atomic.Bool

	mu        sync.Mutex
	file      *os.File       // the saved index loaded, read for its windows
	sidecar   *IndexSidecar  // the sidecar the index loaded came from, or nil
	fromStore bool           // an index was loaded from the store, or saved to it
	saved     bool           // the complete index was written to the store
	saveErr   error          // why the last save failed
	saveWG    sync.WaitGroup // saves under way, for BuildIndex to wait for
	saving    int            // saves under way, which may read windows from file
	closed    bool           // close was called: file closes once saving is 0
}

// storeName is a member's name in an IndexStore, made once (see key).
type storeName struct {
	keyMu sync.Mutex
	name  string      // in the store; "" when the key could not be made
	keyed atomic.Bool // name is made, or could not be for good
}

// noted is what note has acted on: a complete index saved, a discarded
// one removed, and how far the last partial index saved reached.
type noted struct {
	completeSaved atomic.Bool
	dropSeen      atomic.Bool
	savedAt       atomic.Int64
	noteMu        sync.Mutex // one note acts at a time
}

// note acts on what became of the member's index, after each read of it
// and after BuildIndex: a saved index the inflater discarded is removed
// (before anything is saved in its place), a complete index it made is
// saved, and a growing one is saved every partialEvery bytes, in the
// background (so that a daemon killed keeps most of what it indexed).
// ctx is the context of the read or indexing that grew the index, with
// which the member's key is made if it was not.
func (x *memberIndex) note(ctx context.Context) {
	p := x.inf.Progress()
	if p.ChunksDropped != nil {
		x.chunksDropped(p.ChunksDropped)
	}
	drop := p.Dropped != nil && !x.dropSeen.Load()
	complete := p.Complete && !p.Loaded && !x.completeSaved.Load()
	// (An index from the member's SOZip index is not saved.)
	partial := !p.Complete && !p.Chunks && p.Indexed-x.savedAt.Load() >= partialEvery
	if !drop && (x.s == nil || (!complete && !partial)) {
		return
	}
	x.noteMu.Lock()
	defer x.noteMu.Unlock()
	if drop && !x.dropSeen.Swap(true) {
		x.bad(p.Dropped)
	}
	switch {
	case x.s == nil:
	case complete && !x.completeSaved.Swap(true):
		x.save(ctx)
	case partial && p.Indexed-x.savedAt.Load() >= partialEvery:
		x.savedAt.Store(p.Indexed)
		if name, err := x.key(ctx); err == nil && name != "" && x.s.startSave() {
			go func() {
				defer x.s.saves.Done()
				x.savePartial(ctx)
			}()
		}
	}
}

// minIndexSpans is the least an index covers to be worth saving or
// loading: a member (or the part of one indexed so far) of no more spans
// is inflated again from its start sooner than an index is loaded, and
// saving one is a file write (and a file kept) per member, which for an
// archive of many small arrays costs more than the reads themselves.
const minIndexSpans = 4

// NeedsIndex reports whether the member is deflated and larger than
// minIndexSpans spans inflated: only such members have indexes saved,
// loaded or built.
func (m *Member) NeedsIndex() bool {
	return m.e.Method == zip.Deflated && m.e.Size > minIndexSpans*m.a.opts.SpanSize
}

// partialEvery is how far a member's index grows between two saves of it
// as a partial index while the archive is open (so that a daemon killed
// keeps most of what it indexed): about a second of inflation.
var partialEvery int64 = 256 << 20

// key is the member's name in the store (and in a sidecar), made the
// first time with ctx: a SHA-256 of its directory record, its local
// header and the ends of its compressed data, which it reads. A read
// that fails in a way that may pass is an error, and the next call reads
// again; a member whose key cannot be made (a local header that makes no
// sense) has the name "", for good.
func (x *memberIndex) key(ctx context.Context) (string, error) {
	if x.keyed.Load() {
		return x.name, nil
	}
	x.keyMu.Lock()
	defer x.keyMu.Unlock()
	if x.keyed.Load() {
		return x.name, nil
	}
	name, err := x.makeKey(ctx)
	if err != nil && passing(err) {
		return "", err
	}
	x.name = name
	x.keyed.Store(true)
	return name, nil
}

// makeKey reads what the member's key is made of, and makes it.
func (x *memberIndex) makeKey(ctx context.Context) (string, error) {
	return x.m.contentKey(ctx, x.off, "npzfs member index v1\x00", ".idx")
}

// contentKey is the name, in an IndexStore, of what is saved of the
// member whose data starts at archive byte dataOff, of a kind told by
// domain and ext: a SHA-256 of domain, its directory record, its local
// header and the ends of its compressed data, which it reads.
func (m *Member) contentKey(ctx context.Context, dataOff int64, domain, ext string) (string, error) {
	e := &m.e
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte(m.Name()))
	var fixed [8 + 4 + 8 + 8 + 2 + 8]byte
	le := binary.LittleEndian
	le.PutUint64(fixed[0:], uint64(len(m.Name())))
	le.PutUint32(fixed[8:], e.CRC32)
	le.PutUint64(fixed[12:], uint64(e.CompressedSize))
	le.PutUint64(fixed[20:], uint64(e.Size))
	le.PutUint16(fixed[28:], e.Method)
	le.PutUint64(fixed[30:], uint64(e.HeaderOffset))
	h.Write(fixed[:])
	head := min(indexEdge, e.CompressedSize)
	tail := min(indexEdge, e.CompressedSize-head)
	lh := dataOff - e.HeaderOffset // the local header, name and extra
	if lh < 0 || lh > 1<<17 {
		return "", errors.New("npz: the local header makes no sense")
	}
	buf := make([]byte, lh+head+tail)
	r := m.a.r.at(ctx)
	if _, err := r.ReadAt(buf[:lh+head], e.HeaderOffset); err != nil {
		return "", err
	}
	if tail > 0 {
		if _, err := r.ReadAt(buf[lh+head:], dataOff+e.CompressedSize-tail); err != nil {
			return "", err
		}
	}
	h.Write(buf)
	sum := hex.EncodeToString(h.Sum(nil))
	return sum[:2] + "/" + sum + ext, nil
}

// changed reports an archive whose source changed (ErrChanged): its
// indexes are of what it held before, and none is saved.
func (x *memberIndex) changed() bool { return x.m.a.changedLogged.Load() }

// forgetIndexes removes from the index store the indexes of the
// archive's members whose keys it made (to look for an index, or to
// save one): the archive changed (ErrChanged), so they index content
// that is gone. It is called once, when the change is found; nothing is
// saved after.
func (a *Archive) forgetIndexes() {
	if a.opts.Indexes == nil {
		return
	}
	for _, l := range a.locs.all() {
		if l.idx != nil {
			l.idx.forget()
		}
	}
}

// forget removes the member's index from the store, if its key was
// made. (It does not make it: the archive it reads changed.)
func (x *memberIndex) forget() {
	if x.keyed.Load() && x.name != "" {
		x.s.dir.Remove(x.name)
	}
}

// damaged logs, once, that the archive is damaged where err, a read's
// error, says (see inflate.DamageError), and reports whether it did.
func (x *memberIndex) damaged(err error) bool {
	var de *inflate.DamageError
	if !errors.As(err, &de) {
		return false
	}
	if !x.damageLogged.Swap(true) {
		x.m.a.notef("npz: %q: the archive is damaged: bytes %d to %d of the member (from archive byte %d) do not inflate to what its saved index records (%v); reads of them and of every later byte fail (the index is kept)",
			x.m.Name(), de.Offset, de.End, x.off+de.CompOffset, de.Err)
	}
	return true
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

// save writes the complete index in the background (the store's Close
// waits for it).
func (x *memberIndex) save(ctx context.Context) {
	if x.s == nil || x.changed() {
		return
	}
	snap, ok := x.inf.IndexSnapshot()
	name, err := x.key(ctx) // now: the archive may be closed once this returns
	if err != nil {
		x.m.a.notef("npz: %q: its index is not saved: cannot read what names it: %v", x.m.Name(), err)
		return
	}
	if !ok || name == "" {
		return
	}
	x.put(name, snap, true)
}

// put writes the index snap (complete or not) as name in the store, in
// the background (the store's Close waits for it, and BuildIndex for its
// member's), straight from the windows in memory or in the index file
// they were loaded from, so that saving an index takes no memory of its
// size; once written, the store's index is ours to replace with a larger
// one.
func (x *memberIndex) put(name string, snap *inflate.IndexSnapshot, complete bool) {
	if !x.s.startSave() {
		return
	}
	x.mu.Lock()
	x.saving++
	x.mu.Unlock()
	x.saveWG.Add(1)
	go func() {
		defer x.s.saves.Done()
		defer x.saveWG.Done()
		err := x.s.dir.PutFrom(name, snap)
		if err != nil {
			x.m.a.notef("npz: %q: cannot save its index: %v", x.m.Name(), err)
		}
		changed := x.changed()
		if changed && err == nil {
			x.s.dir.Remove(name) // the archive changed while it was written
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		x.saving--
		x.closeFileLocked()
		if changed {
			return
		}
		x.saveErr = err
		if err == nil {
			x.fromStore = true
			x.saved = x.saved || complete
			if complete {
				x.s.saved.Add(1)
			}
		}
	}()
}

// closing saves what the member's index became (note), and, if it is
// not complete, the index so far as a partial index: the archive
// closes.
func (x *memberIndex) closing() {
	x.note(context.Background())
	x.savePartial(context.Background())
}

// savePartial saves the member's index so far, when the member was not
// indexed to its end, unless the store holds an index of it that this
// archive did not load (another process's, which may be complete).
func (x *memberIndex) savePartial(ctx context.Context) {
	if x.s == nil || x.changed() {
		return
	}
	snap, ok := x.inf.PartialIndexSnapshot(minIndexSpans)
	if !ok {
		return
	}
	name, err := x.key(ctx)
	if err != nil || name == "" {
		return
	}
	x.mu.Lock()
	fromStore := x.fromStore
	x.mu.Unlock()
	if !fromStore && x.s.dir.Has(name) {
		return
	}
	x.put(name, snap, false)
}

// bad removes a saved index the inflater refused or discarded (the
// member is indexed afresh, and saved again once it is whole).
func (x *memberIndex) bad(err error) {
	if x.m.a.closed.Load() {
		return // its file was closed under a late read: not the index's fault
	}
	x.mu.Lock()
	sidecar := x.sidecar
	x.sidecar, x.fromStore = nil, false
	x.mu.Unlock()
	if x.s != nil {
		x.s.refused.Add(1)
	}
	if sidecar != nil {
		x.m.a.notef("npz: %q: saved index in %s not used: %v", x.m.Name(), sidecar.Path(), err)
		return
	}
	if x.s == nil {
		return
	}
	name := x.name // made: the index was loaded from the store under it
	x.m.a.notef("npz: %q: saved index %s not used: %v", x.m.Name(), x.s.dir.Path()+"/"+name, err)
	if name != "" {
		x.s.dir.Remove(name)
	}
}

// indexKey is a deflated member's index and its key in a store or
// sidecar, or "" where it has none (not deflated, not locatable, its key
// not readable now).
func (m *Member) indexKey(ctx context.Context) (*memberIndex, string) {
	if m.e.Method != zip.Deflated {
		return nil, ""
	}
	l := m.locate(ctx)
	if l.err != nil || l.idx == nil {
		return nil, ""
	}
	name, _ := l.idx.key(ctx)
	return l.idx, name
}

// IndexResult is what BuildIndex did for a member.
type IndexResult struct {
	Loaded  bool  // its saved index (store or sidecar), or its SOZip index, was loaded, not built
	SOZip   bool  // it is read through its SOZip index: nothing is built or saved
	Split   bool  // its first pass was shared among goroutines
	Saved   bool  // the index was written to the archive's IndexStore
	SaveErr error // why it could not be written there
}

// SavesIndex reports whether the member has an index saved for it, in
// an IndexStore or a sidecar: a deflated member that NeedsIndex (its
// checkpoints), or a stored one of 16 MiB or more (its block CRC-32s,
// which verify it; see VerifyMode).
func (m *Member) SavesIndex() bool {
	return m.NeedsIndex() || m.e.Method == zip.Stored && m.e.Size >= minSavedBlocks && m.HasCRC()
}

// BuildIndex indexes a stored member that SavesIndex by verifying it,
// which saves its block CRC-32s, unless they are saved already. It
// indexes a deflated member to its end (loading its saved
// index, when the archive has an IndexStore or sidecar that holds one),
// checking its length and CRC-32 unless the index was loaded; the index
// is then saved, if the archive has an IndexStore, and BuildIndex waits
// for that. With workers above 1 the first pass through a large member
// is shared among that many goroutines (see
// inflate.ReaderAt.IndexAllParallel), and a read of the member past its
// index waits for the whole pass: that is for building indexes ahead of
// time, as npzfs index does; with 0 or 1 it runs in the calling
// goroutine, a part at a time so that the index is saved as it grows,
// and reads of the member go on meanwhile, each waiting for at most a
// span (a mount's background indexing). It stops when ctx is done. A
// member that needs no index (NeedsIndex: stored, or small) is left as
// it is.
func (m *Member) BuildIndex(ctx context.Context, workers int) (IndexResult, error) {
	var res IndexResult
	if m.e.Method == zip.Stored && m.SavesIndex() {
		return m.buildSums(ctx)
	}
	if !m.NeedsIndex() {
		return res, nil
	}
	l := m.locate(ctx)
	if l.err != nil {
		return res, l.err
	}
	x := l.idx
	var err error
	switch {
	case workers > 1:
		res.Split, err = l.inf.IndexAllParallel(ctx, workers)
	case x == nil:
		err = l.inf.IndexAll(ctx)
	default:
		for {
			off := l.inf.Indexed() + partialEvery
			err = l.inf.IndexTo(ctx, off)
			x.note(ctx)
			if err != nil || off >= l.inf.Size() {
				break
			}
		}
	}
	if x != nil {
		x.note(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, newInflateError(m.Name(), l.dataOff, m.e.Size, err)
	}
	p := l.inf.Progress()
	res.Loaded, res.SOZip = p.Loaded, p.Chunks
	if x != nil {
		x.saveWG.Wait()
		x.mu.Lock()
		res.Saved, res.SaveErr = x.saved, x.saveErr
		x.mu.Unlock()
	}
	return res, nil
}

// Indexed is how many bytes of a deflated member its index covers (all
// of them for a stored member).
func (m *Member) Indexed() int64 {
	if m.e.Method != zip.Deflated {
		return m.e.Size
	}
	l := m.loaded()
	if l == nil || l.inf == nil {
		return 0
	}
	return l.inf.Indexed()
}

// HasSavedIndex reports whether a deflated member has an index where
// the archive looks for one, without loading it: its SOZip index (see
// SOZip), which it reads after the member's local header; else a saved
// index in its IndexStore, then its sidecar, for which it reads the ends
// of its compressed data, which make the index's key, and the sidecar's
// start or its directory. A sidecar Options.SidecarFinder finds is
// looked for now, and waited for as long as ctx allows: for a remote
// archive, the requests the member's first read past its first span
// would make, made sooner.
func (m *Member) HasSavedIndex(ctx context.Context) bool {
	if st, _ := m.sozip(ctx); st != nil && st.x != nil {
		return true
	}
	if !m.a.keepsIndexes() {
		return false
	}
	x, name := m.indexKey(ctx)
	if name == "" {
		return false
	}
	if x.s != nil && x.s.dir.Has(name) {
		return true
	}
	head := inflate.IndexHeadLen(m.e.Size, m.a.opts.SpanSize)
	sc, err := m.a.sidecarWait(ctx, int64(zip.LocalHeaderLen+len(path.Base(name)))+head)
	if sc == nil || err != nil {
		return false
	}
	src, _, err := sc.lookup(ctx, name, head)
	return err == nil && src != nil
}
