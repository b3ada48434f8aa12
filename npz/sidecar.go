package npz

import (
	stdzip "archive/zip"
	"context"
	"errors"
	"fmt"
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
// WriteIndexSidecar. Opening one reads its central directory only; an
// entry's local header is read when its index is first looked up, and
// the index's windows as spans need them, so a remote sidecar costs the
// requests a read needs, not the file.
type IndexSidecar struct {
	r     io.ReaderAt
	size  int64
	c     io.Closer // r, when it is one
	path  string
	files map[string]*sidecarEntry // by entry name, KEY.idx
}

// sidecarEntry is an entry of the sidecar, located on first lookup.
type sidecarEntry struct {
	e    zip.Entry
	once sync.Once
	off  int64 // where its data starts, once located
	err  error
}

// SidecarPath is where an archive's sidecar lies: beside it, its name
// with .npzidx in place of .npz (data.npz: data.npzidx), or appended.
func SidecarPath(archive string) string {
	return strings.TrimSuffix(archive, ".npz") + ".npzidx"
}

// OpenIndexSidecar opens a sidecar file and reads its directory.
func OpenIndexSidecar(name string) (*IndexSidecar, error) {
	f, err := source.OpenFile(name)
	if err != nil {
		return nil, err
	}
	s, err := NewIndexSidecar(f, f.Size(), name)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// NewIndexSidecar reads the directory of the sidecar that r holds (size
// bytes), named name in messages. Close closes r when it is an
// io.Closer. A source.Prefetcher r is told, at each first lookup of an
// index, the bytes its local header and table take, so that a remote
// sidecar gives them in one request.
func NewIndexSidecar(r io.ReaderAt, size int64, name string) (*IndexSidecar, error) {
	s := &IndexSidecar{r: r, size: size, path: name, files: map[string]*sidecarEntry{}}
	if c, ok := r.(io.Closer); ok {
		s.c = c
	}
	z, err := zip.NewReader(r, size)
	if err == nil {
		err = z.Entries(func(e *zip.Entry) {
			if e.Method != zip.Stored || e.Unusable != "" || !strings.HasSuffix(e.Name, ".idx") {
				return
			}
			se := &sidecarEntry{e: *e}
			se.e.Name = strings.Clone(e.Name) // e's name is the reader's buffer
			s.files[se.e.Name] = se
		})
	}
	if err != nil {
		return nil, fmt.Errorf("index sidecar %s: %w", name, err)
	}
	return s, nil
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

// Len is how many indexes the sidecar holds.
func (s *IndexSidecar) Len() int { return len(s.files) }

// localHeaderSlack is what a sidecar entry's local header is assumed to
// take beyond its fixed part and name, when its bytes are prefetched.
const localHeaderSlack = 1 << 10

// lookup returns the index saved under key name (as IndexStore names it:
// KK/KEY.idx), or nil; head is about how many of its first bytes a
// reader reads at once (inflate.IndexHeadLen), to prefetch.
func (s *IndexSidecar) lookup(name string, head int64) (io.ReaderAt, int64, error) {
	se, ok := s.files[path.Base(name)]
	if !ok {
		return nil, 0, nil
	}
	se.once.Do(func() {
		if p, ok := s.r.(source.Prefetcher); ok && head > 0 {
			n := int64(zip.LocalHeaderLen+len(se.e.Name)+localHeaderSlack) + min(head, se.e.Size)
			p.Prefetch(context.Background(), []source.Range{{Off: se.e.HeaderOffset, Len: n}})
		}
		se.off, se.err = zip.DataOffset(s.r, s.size, &se.e)
	})
	if se.err != nil {
		return nil, 0, fmt.Errorf("index sidecar %s: %w", s.path, se.err)
	}
	return io.NewSectionReader(s.r, se.off, se.e.Size), se.e.Size, nil
}

// Holds reports whether the sidecar holds a complete index of the
// deflated member m whose header and table hold (see
// inflate.CheckIndex): one a mount would load.
func (s *IndexSidecar) Holds(m *Member) bool {
	if m.e.Method != zip.Deflated {
		return false
	}
	l := m.locate()
	if l.err != nil || l.idx == nil {
		return false
	}
	name := l.idx.key()
	if name == "" {
		return false
	}
	src, size, err := s.lookup(name, inflate.IndexHeadLen(m.e.Size, m.a.opts.SpanSize))
	if src == nil || err != nil {
		return false
	}
	partial, err := inflate.CheckIndex(src, size, m.e.CompressedSize, m.e.Size, m.e.CRC32)
	return err == nil && !partial
}

// SavedIndex returns the complete index of a deflated member (after
// BuildIndex, say) as an index file, and the name the IndexStore gives
// it, for WriteIndexSidecar.
func (m *Member) SavedIndex() (name string, b []byte, err error) {
	if m.e.Method != zip.Deflated {
		return "", nil, fmt.Errorf("%s is not deflated", m.Name())
	}
	l := m.locate()
	if l.err != nil {
		return "", nil, l.err
	}
	if l.idx == nil {
		return "", nil, errors.New("the archive keeps no indexes")
	}
	name = l.idx.key()
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
func WriteIndexSidecar(name string, members []*Member) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".npzidx-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	if err := WriteIndexSidecarTo(tmp, members); err != nil {
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
func WriteIndexSidecarTo(w io.Writer, members []*Member) error {
	zw := stdzip.NewWriter(w)
	for _, m := range members {
		key, b, err := m.SavedIndex()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		fw, err := zw.CreateHeader(&stdzip.FileHeader{Name: path.Base(key), Method: stdzip.Store})
		if err == nil {
			_, err = fw.Write(b)
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}
