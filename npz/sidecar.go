package npz

import (
	stdzip "archive/zip"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// An IndexSidecar is a read-only file of saved indexes that ships beside
// an archive, so that a dataset's users read anywhere in its deflated
// members from their first mount. It is a zip archive of stored entries,
// each named KEY.idx after a member's index key (see IndexStore) and
// holding that member's index in the format of package inflate. A mount
// looks in it after the IndexStore; nothing is ever written to it but by
// WriteIndexSidecar, which puts each entry's sizes in its local header.
// What is read of it is what a lookup needs: the local header at its
// start, whose entry is found without the central directory when it is
// the one wanted; else the central directory, read once; then the
// entry's local header, and the index's windows as spans need them. So a
// remote sidecar costs the requests a read needs, not the file.
//
// What is read is read under the context of whoever looks, and kept once
// read; a read that fails in a way that may pass (a network failing, the
// look given up) is kept by nothing, so the next look reads again.
//
// A sidecar whose zip frame is damaged (its end record or central
// directory unreadable, cut short, or not listing its first entry as that
// entry's local header has it) is still used for what can be found in it:
// its first index, by its local header, and the indexes its directory
// still lists. Each index is checked by its own checksums when loaded, so
// no wrong byte can come of it. The damage is known once the directory is
// read (at open, for a local sidecar; at the first look past its first
// index, for a remote one), and the archive logs it once (Damage).
type IndexSidecar struct {
	r    io.ReaderAt
	size int64
	c    io.Closer // r, when it is one
	path string

	mu         sync.Mutex
	firstRead  bool                     // the local header at byte 0 was read
	first      *sidecarEntry            // its entry, when that header says all
	dirRead    bool                     // the central directory was read
	damage     error                    // why its frame is damaged, once dirRead
	damageTold bool                     // Damage has returned it
	files      map[string]*sidecarEntry // by entry name, KEY.idx or KEY.crc
}

// sidecarEntry is an entry of the sidecar, located on first lookup.
type sidecarEntry struct {
	e       zip.Entry
	located bool
	off     int64 // where its data starts, once located
	err     error
}

// SidecarPath is where an archive's sidecar lies: beside it, its name
// with .npzidx in place of .npz (data.npz: data.npzidx), or appended.
func SidecarPath(archive string) string {
	return strings.TrimSuffix(archive, ".npz") + ".npzidx"
}

// OpenIndexSidecar opens a sidecar file and reads its directory (a
// damaged one is kept for what can be found in it: see Damage).
func OpenIndexSidecar(name string) (*IndexSidecar, error) {
	f, err := source.OpenFile(name)
	if err != nil {
		return nil, err
	}
	s := NewIndexSidecar(f, f.Size(), name)
	if err := s.dir(context.Background()); err != nil { // a local file
		f.Close()
		return nil, err
	}
	return s, nil
}

// NewIndexSidecar is the sidecar that r holds (size bytes), named name in
// messages; nothing is read until a lookup. Close closes r when it is an
// io.Closer. A source.Prefetcher r is told, at each first lookup of an
// index by way of the central directory, the bytes of its local header
// and table, so that a remote sidecar gives them in one request.
func NewIndexSidecar(r io.ReaderAt, size int64, name string) *IndexSidecar {
	s := &IndexSidecar{r: r, size: size, path: name}
	if c, ok := r.(io.Closer); ok {
		s.c = c
	}
	return s
}

// dir reads the sidecar's central directory, once it is read whole, and
// finds whether its frame is damaged. It fails only where the reading
// may pass (and is done again at the next call); a damaged frame is no
// failure: what it lists is kept, and the damage recorded.
func (s *IndexSidecar) dir(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirRead {
		return nil
	}
	r := source.WithContext(ctx, s.r)
	files := map[string]*sidecarEntry{}
	z, err := zip.NewReader(r, s.size)
	if err == nil {
		err = z.Entries(func(e *zip.Entry) {
			if e.Method != zip.Stored || e.Unusable != "" || !savedName(e.Name) {
				return
			}
			se := &sidecarEntry{e: *e}
			se.e.Name = strings.Clone(e.Name) // e's name is the reader's buffer
			files[se.e.Name] = se
		})
	}
	switch {
	case err == nil && len(z.Problems()) > 0:
		err = errors.New(z.Problems()[0])
	case err == nil:
		err = s.firstListed(r, files)
	}
	if err != nil && passing(err) {
		return fmt.Errorf("index sidecar %s: %w", s.path, err)
	}
	if err != nil {
		s.damage = fmt.Errorf("index sidecar %s is damaged (%v)", s.path, err)
	}
	s.files, s.dirRead = files, true
	return nil
}

// firstListed checks that the central directory lists the entry whose
// local header opens the sidecar, as that header has it (sizes, CRC-32),
// where the header says all: files are the entries it lists. A frame
// whose directory lost or changed it is damaged, even where the directory
// reads. s.mu is held.
func (s *IndexSidecar) firstListed(r io.ReaderAt, files map[string]*sidecarEntry) error {
	first, err := s.readFirst(r)
	if first == nil {
		return err // none the sidecar finds by its local header, or a failure that may pass
	}
	e := &first.e
	d, ok := files[e.Name]
	if !ok || d.e.HeaderOffset != 0 || d.e.Size != e.Size || d.e.CompressedSize != e.CompressedSize || d.e.CRC32 != e.CRC32 {
		return fmt.Errorf("its central directory does not list its first entry, %q, as the entry's local header has it", e.Name)
	}
	return nil
}

// Damage says, the first time it is asked once it is known, why the
// sidecar's frame is damaged (see IndexSidecar), for its archive to log
// once; else nil.
func (s *IndexSidecar) Damage() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.damage == nil || s.damageTold {
		return nil
	}
	s.damageTold = true
	return s.damage
}

// damaged reports a sidecar whose frame is known to be damaged.
func (s *IndexSidecar) damaged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.damage != nil
}

// errDamagedFrame is what a lookup answers for an index a damaged
// sidecar does not list: its damage, logged once, says why.
var errDamagedFrame = errors.New("not listed by the sidecar's damaged directory")

// savedName reports an entry name a sidecar holds: a deflated member's
// index, KEY.idx, or a stored member's block CRC-32s, KEY.crc.
func savedName(name string) bool {
	return strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, ".crc")
}

// firstEntry is the entry at the sidecar's start, from its local header
// alone, or nil when that does not say all (a sidecar another writer
// made) or is not a stored index, or cannot be read now.
func (s *IndexSidecar) firstEntry(ctx context.Context) *sidecarEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, _ := s.readFirst(source.WithContext(ctx, s.r))
	return first
}

// readFirst is firstEntry, read from r once; a failure that may pass is
// returned, and the header read again at the next call. s.mu is held.
func (s *IndexSidecar) readFirst(r io.ReaderAt) (*sidecarEntry, error) {
	if s.firstRead {
		return s.first, nil
	}
	e, off, err := zip.LocalEntry(r, s.size, 0)
	if err != nil && passing(err) {
		return nil, err
	}
	s.firstRead = true
	if err != nil || e.Method != zip.Stored || e.CompressedSize != e.Size || !savedName(e.Name) {
		return nil, nil
	}
	s.first = &sidecarEntry{e: e, off: off, located: true}
	return s.first, nil
}

// Close closes the sidecar's source, when it is an io.Closer.
func (s *IndexSidecar) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// Source is what the sidecar is read from.
func (s *IndexSidecar) Source() io.ReaderAt { return s.r }

// Path is the sidecar's file name, or URL.
func (s *IndexSidecar) Path() string { return s.path }

// Len is how many indexes the sidecar's central directory lists (it is
// read for it), 0 for one that cannot be read.
func (s *IndexSidecar) Len(ctx context.Context) int {
	if s.dir(ctx) != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files)
}

// localHeaderSlack is what a sidecar entry's local header is assumed to
// take beyond its fixed part and name, when its bytes are prefetched.
const localHeaderSlack = 1 << 10

// lookup returns the index saved under key name (as IndexStore names it:
// KK/KEY.idx), or nil; head is about how many of its first bytes a
// reader reads at once (inflate.IndexHeadLen), to prefetch.
func (s *IndexSidecar) lookup(ctx context.Context, name string, head int64) (io.ReaderAt, int64, error) {
	base := path.Base(name)
	if f := s.firstEntry(ctx); f != nil && f.e.Name == base {
		return source.NewSection(s.r, f.off, f.e.Size), f.e.Size, nil
	}
	if err := s.dir(ctx); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	se, ok := s.files[base]
	damaged := s.damage != nil
	s.mu.Unlock()
	switch {
	case !ok && damaged:
		return nil, 0, errDamagedFrame
	case !ok:
		return nil, 0, nil
	}
	off, err := s.locate(ctx, se, head)
	if err != nil {
		return nil, 0, fmt.Errorf("index sidecar %s: %w", s.path, err)
	}
	return source.NewSection(s.r, off, se.e.Size), se.e.Size, nil
}

// locate finds where se's data starts, from its local header, once it
// is read; a source.Prefetcher is first told the header's bytes and the
// first head bytes of the index, to fetch at once.
func (s *IndexSidecar) locate(ctx context.Context, se *sidecarEntry, head int64) (int64, error) {
	s.mu.Lock()
	if se.located {
		s.mu.Unlock()
		return se.off, se.err
	}
	s.mu.Unlock()
	if p, ok := s.r.(source.Prefetcher); ok && head > 0 {
		n := int64(zip.LocalHeaderLen+len(se.e.Name)+localHeaderSlack) + min(head, se.e.Size)
		p.Prefetch(ctx, []source.Range{{Off: se.e.HeaderOffset, Len: n}})
	}
	off, err := zip.DataOffset(source.WithContext(ctx, s.r), s.size, &se.e)
	if err != nil && passing(err) {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se.off, se.err, se.located = off, err, true
	return off, err
}

// Holds reports whether the sidecar holds a complete index of the
// deflated member m whose header and table hold (see
// inflate.CheckIndex), or the block CRC-32s of the stored member m: one
// a mount would load. A sidecar whose frame is damaged holds none (its
// directory is read for it), so that npzfs index --sidecar writes it
// again.
func (s *IndexSidecar) Holds(ctx context.Context, m *Member) bool {
	if s.dir(ctx) != nil || s.damaged() {
		return false // to be written again whole
	}
	if m.e.Method == zip.Stored {
		name := m.sumsKey(ctx)
		if name == "" || !m.SavesIndex() {
			return false
		}
		head := int64(sumsHeader + 4*blockCount(m.e.Size) + 4)
		src, size, err := s.lookup(ctx, name, head)
		if src == nil || err != nil || size != head {
			return false
		}
		data := make([]byte, size)
		if _, err := source.ReadAt(ctx, src, data, 0); err != nil {
			return false
		}
		_, err = parseSums(data, m.e.Size, m.e.CRC32)
		return err == nil
	}
	_, name := m.indexKey(ctx)
	if name == "" {
		return false
	}
	src, size, err := s.lookup(ctx, name, inflate.IndexHeadLen(m.e.Size, m.a.opts.SpanSize))
	if src == nil || err != nil {
		return false
	}
	partial, err := inflate.CheckIndex(source.WithContext(ctx, src), size, m.e.CompressedSize, m.e.Size, m.e.CRC32)
	return err == nil && !partial
}

// SavedIndex returns the complete index of a deflated member, or the
// block CRC-32s of a stored one that SavesIndex (after BuildIndex, say),
// as a file, and the name the IndexStore gives it, for
// WriteIndexSidecar.
func (m *Member) SavedIndex(ctx context.Context) (name string, b []byte, err error) {
	if m.e.Method == zip.Stored && m.SavesIndex() {
		sums := m.blockSumsOf()
		if sums == nil {
			return "", nil, errors.New("the member is not verified")
		}
		if name = m.sumsKey(ctx); name == "" {
			return "", nil, errors.New("cannot read the member to name its block CRC-32s")
		}
		return name, marshalSums(sums, m.e.CRC32), nil
	}
	if m.e.Method != zip.Deflated {
		return "", nil, fmt.Errorf("%s is not deflated", m.Name())
	}
	l := m.locate(ctx)
	if l.err != nil {
		return "", nil, l.err
	}
	if l.idx == nil {
		return "", nil, errors.New("the archive keeps no indexes")
	}
	name, err = l.idx.key(ctx)
	if err != nil {
		return "", nil, err
	}
	if name == "" {
		return "", nil, errors.New("cannot read the member to name its index")
	}
	b, ok := l.inf.MarshalIndex()
	if !ok {
		return "", nil, errors.New("the member is not indexed to its end")
	}
	return name, b, nil
}

// WriteIndexSidecar writes the saved indexes of members (see SavedIndex)
// to the file name as a sidecar, whole or not at all (a temporary file
// renamed into place).
func WriteIndexSidecar(ctx context.Context, name string, members []*Member) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".npzidx-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	if err := WriteIndexSidecarTo(ctx, tmp, members); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// WriteIndexSidecarTo writes the saved indexes of members (see
// SavedIndex) to w, as a sidecar.
func WriteIndexSidecarTo(ctx context.Context, w io.Writer, members []*Member) error {
	zw := stdzip.NewWriter(w)
	for _, m := range members {
		key, b, err := m.SavedIndex(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		// Sizes and CRC-32 in the local header (no data descriptor), so
		// that a reader finds an entry from its local header alone.
		fw, err := zw.CreateRaw(&stdzip.FileHeader{
			Name: path.Base(key), Method: stdzip.Store,
			CRC32: crc32.ChecksumIEEE(b), CompressedSize64: uint64(len(b)), UncompressedSize64: uint64(len(b)),
		})
		if err == nil {
			_, err = fw.Write(b)
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}
