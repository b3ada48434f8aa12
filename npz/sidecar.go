package npz

import (
	stdzip "archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// An IndexSidecar is a read-only file of saved indexes that ships beside
// an archive, so that a dataset's users read anywhere in its deflated
// members from their first mount. It is a zip archive of stored entries,
// each named KEY.idx after a member's index key (see IndexStore) and
// holding that member's index in the format of package inflate. A mount
// looks in it before the IndexStore; nothing is ever written to it but by
// WriteIndexSidecar.
type IndexSidecar struct {
	f     *source.File
	path  string
	files map[string]sidecarEntry // by entry name, KEY.idx
}

type sidecarEntry struct{ off, size int64 }

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
	s := &IndexSidecar{f: f, path: name, files: map[string]sidecarEntry{}}
	z, err := zip.NewReader(f, f.Size())
	if err == nil {
		var bad error
		err = z.Entries(func(e *zip.Entry) {
			if bad != nil || e.Method != zip.Stored || e.Unusable != "" || !strings.HasSuffix(e.Name, ".idx") {
				return
			}
			off, err := zip.DataOffset(f, f.Size(), e)
			if err != nil {
				bad = err
				return
			}
			s.files[strings.Clone(e.Name)] = sidecarEntry{off: off, size: e.Size}
		})
		if err == nil {
			err = bad
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("index sidecar %s: %w", name, err)
	}
	return s, nil
}

// Close closes the sidecar's file.
func (s *IndexSidecar) Close() error { return s.f.Close() }

// Path is the sidecar's file name.
func (s *IndexSidecar) Path() string { return s.path }

// Len is how many indexes the sidecar holds.
func (s *IndexSidecar) Len() int { return len(s.files) }

// lookup returns the index saved under key name (as IndexStore names it:
// KK/KEY.idx), or nil.
func (s *IndexSidecar) lookup(name string) (io.ReaderAt, int64) {
	e, ok := s.files[path.Base(name)]
	if !ok {
		return nil, 0
	}
	return io.NewSectionReader(s.f, e.off, e.size), e.size
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
	w := stdzip.NewWriter(tmp)
	for _, m := range members {
		key, b, err := m.SavedIndex()
		if err != nil {
			tmp.Close()
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		fw, err := w.CreateHeader(&stdzip.FileHeader{Name: path.Base(key), Method: stdzip.Store})
		if err == nil {
			_, err = fw.Write(b)
		}
		if err != nil {
			tmp.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
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
