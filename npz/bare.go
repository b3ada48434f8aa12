package npz

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// NewNPY opens a bare .npy file of size bytes read from r as an archive of
// one member: the whole file, stored, named name (a base name ending in
// ".npy"), with its views as in any archive (raw.bin spliced when r is a
// source.FileBacked). It checks only the magic: a broken header leaves
// the member served with an empty views folder, as in an archive.
func NewNPY(ctx context.Context, r io.ReaderAt, size int64, name string, opts *Options) (*Archive, error) {
	if err := checkBareName(name); err != nil {
		return nil, err
	}
	a := newArchive(r, size, opts)
	magic := make([]byte, len(npy.Magic))
	if err := zip.ReadAtFull(a.r.at(ctx), magic, 0); err != nil || string(magic) != npy.Magic {
		return nil, &FormatError{Offset: 0, Msg: "not a .npy file (no \\x93NUMPY magic)", Err: err}
	}
	a.addBare(r, size, name)
	return a, nil
}

// BareNode is a node in the root of a bare .npy's archive, as BareNodes
// tells it.
type BareNode struct {
	Name string
	Ino  uint64
	Dir  bool
}

// BareNodes are the nodes in the root of the archive NewNPY makes of a
// .npy file served as name, and that archive's MaxIno, known without
// reading the file: which nodes an array makes goes by its name alone.
// A folder lists a .npy file with them, opening it only when one is
// used.
func BareNodes(name string) ([]BareNode, uint64, error) {
	if err := checkBareName(name); err != nil {
		return nil, 0, err
	}
	a := newArchive(nothing{}, 0, nil)
	a.addBare(nothing{}, 0, name)
	var out []BareNode
	for _, c := range a.Root().Children(context.Background()) { // reads nothing
		// A copy: a name may be a slice of the archive's names.
		out = append(out, BareNode{Name: strings.Clone(c.Name()), Ino: c.Ino(), Dir: c.IsDir()})
	}
	return out, a.MaxIno(), nil
}

// checkBareName refuses a name a bare .npy cannot be served under.
func checkBareName(name string) error {
	if path.Ext(name) != ".npy" || path.Base(name) != name {
		return fmt.Errorf("npz: a bare .npy is served under a base name ending in .npy, not %q", name)
	}
	return nil
}

// nothing is an empty file.
type nothing struct{}

func (nothing) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }

// addBare makes r, of size bytes, the archive's one member, named name.
func (a *Archive) addBare(r io.ReaderAt, size int64, name string) {
	m := a.addMember() // one member, in a chunk of one (chunkShift 0)
	m.e.name, m.e.nameLen = a.names.add(name, int64(len(name)))
	m.e.CompressedSize, m.e.Size, m.e.Method = size, size, zip.Stored
	if mt, ok := r.(source.ModTimer); ok {
		m.e.mtime = packTime(mt.ModTime().Unix())
	} else {
		m.e.mtime = packTime(0)
	}
	// Its data starts at byte 0: there is no local header.
	m.st.Or(flagBare | flagLocated)
	a.serve(r)
}
