//go:build linux

package tree

import (
	"context"
	"errors"
	"syscall"

	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// fromNPZ adapts a node of an npz archive's tree to fs.Entry. It returns
// nil for a nil node.
func fromNPZ(n *npz.Node) npzfs.Entry {
	if n == nil {
		return nil
	}
	return npzEntry{n}
}

// Archive is the tree of archive a, its nodes npz's: an archive never
// changes while mounted, so the mount finds its nodes by inode number
// (fs.Finder).
func Archive(a *npz.Archive) npzfs.Entry { return npzTree{npzEntry{a.Root()}, a} }

type npzTree struct {
	npzEntry
	a *npz.Archive
}

func (t npzTree) Find(ino uint64) (npzfs.Entry, uint64) {
	n, parent := t.a.Node(ino)
	return fromNPZ(n), parent
}

// errUnsettled is what a views folder or view says while its array's npy
// header cannot be read for now (npz.Node.Unsettled): EIO, which nothing
// remembers, rather than an answer made without the header.
var errUnsettled = source.Transient(errors.New("the array's npy header cannot be read for now"))

type npzEntry struct{ n *npz.Node }

func (e npzEntry) Name() string    { return e.n.Name() }
func (e npzEntry) Ino() uint64     { return e.n.Ino() }
func (e npzEntry) IsDir() bool     { return e.n.IsDir() }
func (e npzEntry) Unsettled() bool { return e.n.Unsettled() }

func (e npzEntry) Attr(ctx context.Context) (npzfs.Attr, error) {
	a := npzfs.Attr{ModTime: e.n.ModTime(), DiskUsage: e.n.DiskUsage()}
	if f := e.n.File(ctx); f != nil {
		a.Size = f.Size()
	}
	if e.n.Unsettled() {
		return npzfs.Attr{}, errUnsettled
	}
	return a, nil
}

func (e npzEntry) Lookup(ctx context.Context, name string) (npzfs.Entry, error) {
	if c := e.n.Lookup(ctx, name); c != nil {
		return npzEntry{c}, nil
	}
	return nil, notFound(ctx, e.n)
}

func (e npzEntry) List(ctx context.Context) (npzfs.Listing, error) {
	if !e.n.IsDir() {
		return nil, syscall.ENOTDIR
	}
	l := e.n.Listing(ctx)
	if e.n.Unsettled() {
		return nil, errUnsettled
	}
	return npzListing{l}, nil
}

func (e npzEntry) File(ctx context.Context) (npzfs.Content, error) {
	// A nil *npz.File must become an error, not a non-nil interface
	// holding a nil pointer.
	if f := e.n.File(ctx); f != nil {
		return f, nil
	}
	return nil, syscall.EISDIR
}

// npzListing adapts a folder's npz.Listing: nothing is copied.
type npzListing struct{ l npz.Listing }

func (l npzListing) Len() int             { return l.l.Len() }
func (l npzListing) At(i int) npzfs.Entry { return fromNPZ(l.l.At(i)) }
func (l npzListing) Prepare(ctx context.Context, from, to int) {
	l.l.Prepare(ctx, from, to)
}
func (l npzListing) Prepared(i int) bool { return l.l.Prepared(i) }
