package folder

import (
	"context"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// A Store is what a Tree serves: files in folders, listed and opened by
// their paths ("" for the root, else names joined by "/"). Dir, a folder
// on local disk, is one; package dataset has one for a remote folder (an
// S3 prefix, an HTTP folder with a listing). The Tree decides what is
// shown, and how (a .npz file as a folder, a .npy file with its views),
// hands out inode numbers, and keeps archives open within its budget; a
// Store only says what is there and opens it. Its methods are called
// concurrently.
type Store interface {
	// List lists the folder at rel: its sub-folders and regular files,
	// each name once, in any order. An entry the store does not serve is
	// listed with Skip saying why (the Tree logs it once, and leaves it
	// out).
	List(ctx context.Context, rel string) ([]Entry, error)
	// Stat describes the file or folder at rel ("" for the root); one
	// that is not there, or not a folder or regular file, is an error
	// wrapping fs.ErrNotExist.
	Stat(ctx context.Context, rel string) (Entry, error)
	// Open opens the file at rel, which e describes (as List or Stat
	// gave it), as an archive with opts (npz.New tells a zip archive
	// from a bare .npy file; opts.Sidecars asks for the archive's index
	// sidecar too); a file that is no longer e, or is gone, is an error
	// wrapping source.ErrChanged, and one that failed for now (a
	// network error) an error wrapping source.ErrTransient.
	Open(ctx context.Context, rel string, e Entry, opts *npz.Options) (*npz.Archive, error)
}

// Entry is what a Store says of a file or folder.
type Entry struct {
	Name string
	Dir  bool
	Size int64
	// ModTime is the modification time, or zero when the store does
	// not know it (a remote folder's).
	ModTime time.Time
	// Version is what, besides size and time, tells a file from one
	// before it at the same path (an object's ETag; a local file's
	// identity, source.FileIdentity), or "".
	Version string
	// Skip, when not "", says why the entry is not served.
	Skip string
}

// Same reports whether e and o are the same file.
func (e Entry) Same(o Entry) bool {
	return e.Size == o.Size && e.ModTime.Equal(o.ModTime) && e.Version == o.Version
}

// Shown is what a folder of archives shows for an entry of its store:
// the one rule that mounts, ls and index follow.
type Shown int

const (
	NotShown     Shown = iota // left out: Skip says why, or not a .npz or .npy file
	ShownFolder               // a sub-folder
	ShownArchive              // NAME.npz: a folder of the archive's tree
	ShownNPY                  // NAME.npy: the array, with its views beside it
)

// Shown is what a folder shows for e.
func (e Entry) Shown() Shown {
	switch {
	case e.Skip != "":
		return NotShown
	case e.Dir:
		return ShownFolder
	case strings.HasSuffix(e.Name, ".npz"):
		return ShownArchive
	case strings.HasSuffix(e.Name, ".npy") && e.Name != ".npy":
		return ShownNPY
	}
	return NotShown
}

// Dir is a folder on local disk as a Store. It follows symbolic links,
// but never to what lies on an npzfs mount (this one's, whose daemon
// would then read its own files, or another's, which may read this
// one's: on Linux, the only system with mounts), nor to a folder that is the folder it is found in or one above
// it in the served tree, or holds one (a loop: a tree without end).
type Dir struct {
	root string

	mu      sync.Mutex
	folders map[string]localFolder // by path: folders served so far

	mountsMu sync.Mutex
	mountsAt time.Time         // when npzfs's mounts were read
	npzfs    map[string]string // device (major:minor) -> mount point, of npzfs mounts
}

// localFolder is a folder served: its path with symbolic links
// resolved, and the device it is on.
type localFolder struct {
	real string
	dev  uint64
}

// NewDir returns the folder root as a Store. It fails when root is not a
// folder.
func NewDir(root string) (*Dir, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, folders: map[string]localFolder{"": {real: real, dev: devOf(fi)}}}, nil
}

// Path is the folder's path, as given.
func (d *Dir) Path() string { return d.root }

func (d *Dir) abs(rel string) string { return filepath.Join(d.root, filepath.FromSlash(rel)) }

// List implements Store.
func (d *Dir) List(_ context.Context, rel string) ([]Entry, error) {
	parent, ok := d.folder(rel)
	if !ok {
		return nil, fmt.Errorf("%s: %w", rel, iofs.ErrNotExist)
	}
	ents, err := os.ReadDir(d.abs(rel))
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ents))
	for _, de := range ents {
		if e, ok := d.stat(parent, rel, de.Name()); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// Stat implements Store.
func (d *Dir) Stat(_ context.Context, rel string) (Entry, error) {
	if rel == "" {
		fi, err := os.Stat(d.root)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Dir: true, ModTime: fi.ModTime()}, nil
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	parent, ok := d.folder(dir)
	if !ok {
		return Entry{}, fmt.Errorf("%s: %w", rel, iofs.ErrNotExist)
	}
	e, ok := d.stat(parent, dir, name)
	if !ok {
		return Entry{}, fmt.Errorf("%s: %w", rel, iofs.ErrNotExist)
	}
	return e, nil
}

// Open implements Store. The file opened must be the one e describes,
// by its identity (source.FileIdentity): one renamed over it since, even
// with the same size and modification time, is another archive.
func (d *Dir) Open(ctx context.Context, rel string, e Entry, opts *npz.Options) (*npz.Archive, error) {
	a, err := npz.Open(ctx, d.abs(rel), opts)
	if err != nil {
		return nil, err
	}
	if a.Identity() != e.Version {
		a.Close()
		return nil, errStale
	}
	return a, nil
}

// folder is the folder at rel as served, found from its parent's when
// it was not yet (false when it is not served).
func (d *Dir) folder(rel string) (localFolder, bool) {
	d.mu.Lock()
	f, ok := d.folders[rel]
	d.mu.Unlock()
	if ok || rel == "" {
		return f, ok
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	parent, ok := d.folder(dir)
	if !ok {
		return f, false
	}
	e, ok := d.stat(parent, dir, name)
	if !ok || !e.Dir || e.Skip != "" {
		return f, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok = d.folders[rel]
	return f, ok
}

// stat finds name in the folder dir (which is parent), following a
// symbolic link: an entry, which is skipped when it lies on an npzfs
// mount or would make a loop, or false for one that is not there or is
// neither a folder nor a regular file. A folder served is remembered.
func (d *Dir) stat(parent localFolder, dir, name string) (Entry, bool) {
	rel := name
	if dir != "" {
		rel = dir + "/" + name
	}
	abs := d.abs(rel)
	fi, err := os.Lstat(abs)
	if err != nil {
		return Entry{}, false
	}
	link := fi.Mode()&os.ModeSymlink != 0
	if link {
		if fi, err = os.Stat(abs); err != nil {
			return Entry{}, false
		}
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return Entry{}, false
	}
	e := Entry{Name: name, Dir: fi.IsDir(), Size: fi.Size(), ModTime: fi.ModTime()}
	if e.Dir {
		e.Size = 0
	} else {
		e.Version = source.FileIdentity(fi)
	}
	if dev := devOf(fi); dev != parent.dev {
		if mnt, on := d.npzfsMount(dev); on {
			e.Skip = "it is on the npzfs mount " + mnt
			return e, true
		}
	}
	if !e.Dir {
		return e, true
	}
	real := filepath.Join(parent.real, name)
	if link {
		if real, err = filepath.EvalSymlinks(abs); err != nil {
			return Entry{}, false
		}
	}
	for up := dir; ; up = parentOf(up) {
		a, _ := d.folder(up)
		switch {
		case a.real == real:
			e.Skip = fmt.Sprintf("a symbolic link to %s, a folder it is in (a loop)", real)
		case inside(a.real, real):
			e.Skip = fmt.Sprintf("a symbolic link to %s, which holds %s, a folder it is in (a loop)", real, a.real)
		}
		if e.Skip != "" {
			return e, true
		}
		if up == "" {
			break
		}
	}
	d.mu.Lock()
	d.folders[rel] = localFolder{real: real, dev: devOf(fi)}
	d.mu.Unlock()
	return e, true
}

// parentOf is the path of the folder holding rel ("" for the root's
// children).
func parentOf(rel string) string {
	dir, _ := path.Split(rel)
	return strings.TrimSuffix(dir, "/")
}

// Walk calls fn for every entry under the folder, sub-folders too,
// without following links to folders: a cheap count of what a mount of
// it serves (its size, for statfs), not what it serves.
func (d *Dir) Walk(fn func(e Entry)) {
	filepath.WalkDir(d.root, func(p string, de iofs.DirEntry, err error) error {
		if err != nil || p == d.root {
			return nil
		}
		fi, err := de.Info()
		if err != nil || (!fi.IsDir() && !fi.Mode().IsRegular()) {
			return nil
		}
		fn(Entry{Name: de.Name(), Dir: fi.IsDir(), Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
}

// inside reports whether path is dir or inside it.
func inside(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

var errStale = fmt.Errorf("the archive was replaced: %w", source.ErrChanged)

// KindError says why archive a, the file name in a folder, cannot be
// served as its name says: a folder's listing goes by the names, showing
// NAME.npz as a folder of an archive and NAME.npy as an array, so the
// bytes must agree. It is nil when they do, and for other names.
func KindError(name string, a *npz.Archive) error {
	switch {
	case strings.HasSuffix(name, ".npy") && !a.Bare():
		return fmt.Errorf("%s is named .npy but holds a zip archive (name it .npz)", name)
	case strings.HasSuffix(name, ".npz") && a.Bare():
		return fmt.Errorf("%s is named .npz but holds a .npy file (name it .npy)", name)
	}
	return nil
}
