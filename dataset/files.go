package dataset

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
)

// FolderFile is a .npz archive or .npy file under a folder dataset,
// local or remote (see Dataset.Files); or, with Err, a folder under it
// that could not be listed.
type FolderFile struct {
	Path  string // its path in the folder, parts joined by "/"
	Err   error  // why a folder could not be listed
	entry folder.Entry
}

// Files lists the .npz and .npy files under a folder dataset, in its
// sub-folders too, as a mount of it shows them (folder.Entry.Shown:
// links followed as a mount follows them, loops and npzfs mounts left
// out), in lexical order. A sub-folder that cannot be listed is an entry
// with its error, and the walk goes on, as a mount shows its
// npzfs-error.txt and goes on.
func (d *Dataset) Files(ctx context.Context) ([]FolderFile, error) {
	if d.folder == nil {
		return nil, errors.New("not a folder")
	}
	var out []FolderFile
	err := d.walk(ctx, "", &out)
	return out, err
}

// walk lists the folder rel and those under it into out.
func (d *Dataset) walk(ctx context.Context, rel string, out *[]FolderFile) error {
	ents, err := d.folder.List(ctx, rel)
	if err != nil {
		if rel == "" || ctx.Err() != nil {
			return err
		}
		*out = append(*out, FolderFile{Path: rel, Err: err})
		return nil
	}
	slices.SortFunc(ents, func(a, b folder.Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range ents {
		p := path.Join(rel, e.Name)
		switch e.Shown() {
		case folder.ShownFolder:
			if err := d.walk(ctx, p, out); err != nil {
				return err
			}
		case folder.ShownArchive, folder.ShownNPY:
			*out = append(*out, FolderFile{Path: p, entry: e})
		}
	}
	return nil
}

// OpenFile opens a file Files listed, with the options the dataset was
// opened with (its index store and sidecars too): closing the archive
// closes what it opened. It is served, or refused, as a mount of the
// folder serves or refuses it.
func (d *Dataset) OpenFile(ctx context.Context, f FolderFile) (*npz.Archive, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	ao := d.ArchiveOptions()
	a, err := d.folder.Open(ctx, f.Path, f.entry, &ao)
	if err != nil {
		if p, ok := d.LocalPath(f); ok {
			return nil, describe(p, err)
		}
		return nil, err
	}
	if err := folder.KindError(path.Base(f.Path), a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// LocalPath is where a file of a local folder lies, and false for a
// remote folder's.
func (d *Dataset) LocalPath(f FolderFile) (string, bool) {
	if dir, ok := d.folder.(*folder.Dir); ok {
		return filepath.Join(dir.Path(), filepath.FromSlash(f.Path)), true
	}
	return "", false
}

// Object is the object a file of a remote folder is, nil for a local
// folder's.
func (d *Dataset) Object(f FolderFile) remote.Backend {
	if r, ok := d.folder.(*folder.Remote); ok {
		return r.Object(f.Path)
	}
	return nil
}

// Backend is a remote archive's object, nil for another dataset.
func (d *Dataset) Backend() remote.Backend { return d.backend }

// Group is a remote dataset's group of sources, nil for a local one.
func (d *Dataset) Group() *remote.Group { return d.group }
