//go:build linux

// Package tree makes the trees a mount serves (fs.Entry) of what package
// dataset opens: an archive's, whose nodes are npz's (Archive), or a
// folder's, whose archives are opened as they are used (Folder).
package tree

import (
	"context"
	"io"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
)

// Tree is what a mount serves of a dataset.
type Tree struct {
	root    fs.Entry
	archive *npz.Archive // an archive's; nil for a folder
	folder  *Folder      // a folder's; nil for an archive
	size    int64        // bytes of archives, for statfs
	nodes   uint64       // nodes served at most, for statfs
}

// Of is the tree of d: its archive's, or its folder's, whose archives
// are opened with d's options (d.ArchiveOptions) and opts (whose Archive
// and Sidecars it sets). Closing the tree closes a folder's archives, not
// d.
func Of(ctx context.Context, d *dataset.Dataset, opts *Options) (*Tree, error) {
	if a := d.Archive(); a != nil {
		return &Tree{root: Archive(a), archive: a, size: a.Size(), nodes: a.MaxIno()}, nil
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Archive = d.ArchiveOptions()
	o.Sidecars, o.Archive.Sidecars = o.Archive.Sidecars, false
	f, err := NewFolder(ctx, d.Store(), &o)
	if err != nil {
		return nil, err
	}
	t := &Tree{root: f.Root(), folder: f}
	t.size, t.nodes = f.Usage(ctx)
	return t, nil
}

// Root is the tree's root folder.
func (t *Tree) Root() fs.Entry { return t.root }

// Size is the bytes of the archives served (for statfs).
func (t *Tree) Size() int64 { return t.size }

// Nodes is how many files and folders the tree serves at most (for
// statfs), counted without reading any npy header or opening any archive
// of a folder.
func (t *Tree) Nodes() uint64 { return t.nodes }

// ArchivesOpen is how many of a folder's archives are open now and how
// many of those are idle (see Folder.Open), and false for an archive's
// tree.
func (t *Tree) ArchivesOpen() (open, idle int, ok bool) {
	if t.folder == nil {
		return 0, 0, false
	}
	open, idle = t.folder.Open()
	return open, idle, true
}

// VerifyStats is what the tree's archives verified: its archive's, or
// a folder's archives', open and closed.
func (t *Tree) VerifyStats() npz.VerifyStats {
	if t.folder != nil {
		return t.folder.VerifyStats()
	}
	return t.archive.VerifyStats()
}

// Close closes a folder's archives.
func (t *Tree) Close() error {
	if t.folder != nil {
		return t.folder.Close()
	}
	return nil
}

var _ io.Closer = (*Tree)(nil)
