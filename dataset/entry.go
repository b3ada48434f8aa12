// Package dataset opens what npzfs serves: a .npz archive, a bare .npy
// file, a folder of them, or a remote archive, and adapts it to the tree
// package fs serves.
package dataset

import (
	"time"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
)

// fromNPZ adapts a node of an npz archive's tree to fs.Entry. It returns
// nil for a nil node.
func fromNPZ(n *npz.Node) fs.Entry {
	if n == nil {
		return nil
	}
	return npzEntry{n}
}

// npzRoot adapts an archive's root: an archive never changes while
// mounted, so the mount finds its nodes by inode number (fs.Finder).
func npzRoot(a *npz.Archive) fs.Entry { return npzTree{npzEntry{a.Root()}, a} }

type npzTree struct {
	npzEntry
	a *npz.Archive
}

func (t npzTree) Find(ino uint64) (fs.Entry, uint64) {
	n, parent := t.a.Node(ino)
	return fromNPZ(n), parent
}

type npzEntry struct{ n *npz.Node }

func (e npzEntry) Name() string       { return e.n.Name() }
func (e npzEntry) Ino() uint64        { return e.n.Ino() }
func (e npzEntry) IsDir() bool        { return e.n.IsDir() }
func (e npzEntry) ModTime() time.Time { return e.n.ModTime() }
func (e npzEntry) DiskUsage() int64   { return e.n.DiskUsage() }
func (e npzEntry) Unsettled() bool    { return e.n.Unsettled() }

func (e npzEntry) Lookup(name string) fs.Entry { return fromNPZ(e.n.Lookup(name)) }

func (e npzEntry) List() fs.Listing {
	if !e.n.IsDir() {
		return nil
	}
	return npzListing{e.n.Listing()}
}

func (e npzEntry) File() fs.Content {
	// A nil *npz.File must become a nil interface, not a non-nil
	// interface holding a nil pointer.
	if f := e.n.File(); f != nil {
		return f
	}
	return nil
}

// npzListing adapts a folder's npz.Listing: nothing is copied.
type npzListing struct{ l npz.Listing }

func (l npzListing) Len() int             { return l.l.Len() }
func (l npzListing) At(i int) fs.Entry    { return fromNPZ(l.l.At(i)) }
func (l npzListing) Prepare(from, to int) { l.l.Prepare(from, to) }
