// Package dataset opens what npzfs serves: a .npz archive, a bare .npy
// file, a folder of them, or a remote archive, and adapts it to the tree
// package fs serves.
package dataset

import (
	"time"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
)

// fromNPZ adapts a node of an npz archive's tree (normally Archive.Root())
// to fs.Entry. It returns nil for a nil node.
func fromNPZ(n *npz.Node) fs.Entry {
	if n == nil {
		return nil
	}
	return npzEntry{n}
}

type npzEntry struct{ n *npz.Node }

func (e npzEntry) Name() string       { return e.n.Name() }
func (e npzEntry) Ino() uint64        { return e.n.Ino() }
func (e npzEntry) IsDir() bool        { return e.n.IsDir() }
func (e npzEntry) ModTime() time.Time { return e.n.ModTime() }
func (e npzEntry) DiskUsage() int64   { return e.n.DiskUsage() }
func (e npzEntry) Unsettled() bool    { return e.n.Unsettled() }

func (e npzEntry) Lookup(name string) fs.Entry { return fromNPZ(e.n.Lookup(name)) }

func (e npzEntry) Children() []fs.Entry {
	kids := e.n.Children()
	out := make([]fs.Entry, 0, len(kids))
	for _, k := range kids {
		if k != nil {
			out = append(out, npzEntry{k})
		}
	}
	return out
}

func (e npzEntry) File() fs.Content {
	// A nil *npz.File must become a nil interface, not a non-nil
	// interface holding a nil pointer.
	if f := e.n.File(); f != nil {
		return f
	}
	return nil
}
