package npz

import (
	"fmt"
	"io"
	"path"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// NewNPY opens a bare .npy file of size bytes read from r as an archive of
// one member: the whole file, stored, named name (a base name ending in
// ".npy"), with its views as in any archive (raw.bin spliced when r is a
// source.FileBacked). It checks only the magic: a broken header leaves
// the member served with an empty views folder, as in an archive.
func NewNPY(r io.ReaderAt, size int64, name string, opts *Options) (*Archive, error) {
	if path.Ext(name) != ".npy" || path.Base(name) != name {
		return nil, fmt.Errorf("npz: a bare .npy is served under a base name ending in .npy, not %q", name)
	}
	a := newArchive(r, size, opts)
	magic := make([]byte, len(npy.Magic))
	if err := zip.ReadAtFull(a.r, magic, 0); err != nil || string(magic) != npy.Magic {
		return nil, &FormatError{Offset: 0, Msg: "not a .npy file (no \\x93NUMPY magic)", Err: err}
	}
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
	return a, nil
}
