package dataset

import (
	"context"
	"path"
	"path/filepath"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
)

// FolderFile is a .npz archive or .npy file under a folder dataset, local
// or remote (see Dataset.Files).
type FolderFile struct {
	Path  string       // its path in the folder, parts joined by "/"
	file  string       // a local one's path
	entry folder.Entry // a remote one's, as listed
}

// Files lists the .npz and .npy files under a folder dataset, in its
// sub-folders too, as a mount of it shows them, in lexical order: a
// local folder is walked (regular files; links are not followed), a
// remote one listed one folder at a time.
func (d *Dataset) Files(ctx context.Context) ([]FolderFile, error) {
	var out []FolderFile
	if d.listing == nil {
		names, err := localFiles(d.name)
		for _, n := range names {
			rel, _ := filepath.Rel(d.name, n)
			out = append(out, FolderFile{Path: filepath.ToSlash(rel), file: n})
		}
		return out, err
	}
	err := remote.Walk(ctx, d.listing, "", func(name string, it remote.Item) error {
		if isServedFile(it.Name) {
			out = append(out, FolderFile{Path: name, entry: folder.RemoteEntry(it)})
		}
		return nil
	})
	return out, err
}

// OpenFile opens a file Files listed, with the options the dataset was
// opened with (its index store and sidecars too): closing the archive
// closes what it opened.
func (d *Dataset) OpenFile(ctx context.Context, f FolderFile) (*npz.Archive, error) {
	ao := d.opts.Archive
	ao.Sidecars = d.opts.Sidecars
	var a *npz.Archive
	var err error
	if f.file != "" {
		if a, err = npz.Open(ctx, f.file, &ao); err != nil {
			return nil, describe(f.file, err)
		}
	} else if a, err = d.folder.Open(ctx, f.Path, f.entry, &ao); err != nil {
		return nil, err
	}
	// As a mount of the folder serves it, or does not.
	if err := folder.KindError(path.Base(f.Path), a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}
