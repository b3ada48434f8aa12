package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"strings"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// openPrefix opens a remote folder, which a mount serves as it serves a
// local one: its top level is listed now, one request a page, and nothing
// else is asked for until it is looked at.
func (d *Dataset) openPrefix(ctx context.Context, url string, g *remote.Group, o *Options) error {
	l, err := newLister(ctx, url, &o.Remote)
	if err != nil {
		return err
	}
	f := remote.NewFolder(l, o.Remote.ListTTL, o.Remote.options(d.logf))
	items, err := f.List(ctx, "")
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("%s holds no object (check the prefix, or the folder's listing)", l)
	}
	d.kind, d.folder, d.listing = Folder, &prefixStore{f: f, group: g}, f
	return nil
}

// smallTail is what is fetched of an archive of a remote folder, or of a
// sidecar, when it is opened: its end records (whose search reads its
// last 64 KiB) and a central directory of up to 64 KiB (some 600
// members), in one request (a larger one takes one more). A remote
// archive mounted alone gets remote.DefaultTailBytes, for up to some
// 60,000 members.
const smallTail = 128 << 10

// prefixStore is a remote folder as a folder.Store: its listings are a
// remote.Folder's (kept for the list TTL), and its objects are opened as
// sources sharing the dataset's block and disk caches, each with its
// sidecar found when a member first needs a saved index.
type prefixStore struct {
	f     *remote.Folder
	group *remote.Group
}

// entry is what a listing item says, for the folder.
func entry(it remote.Item) folder.Entry {
	if it.Dir {
		return folder.Entry{Name: it.Name, Dir: true}
	}
	return folder.Entry{Name: it.Name, Size: it.Size, ModTime: it.LastModified, Version: it.ETag}
}

// List implements folder.Store.
func (p *prefixStore) List(ctx context.Context, rel string) ([]folder.Entry, error) {
	items, err := p.f.List(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := make([]folder.Entry, len(items))
	for i, it := range items {
		out[i] = entry(it)
	}
	return out, nil
}

// Stat implements folder.Store, from the listing of rel's folder.
func (p *prefixStore) Stat(ctx context.Context, rel string) (folder.Entry, error) {
	if rel == "" {
		return folder.Entry{Dir: true}, nil
	}
	it, err := p.f.Stat(ctx, rel)
	if err != nil {
		return folder.Entry{}, err
	}
	return entry(it), nil
}

// Open implements folder.Store: the object's tail is fetched, and must
// be the object listed; one that is not, or is gone, has its folder
// listed again at the next look. A failure says of the object what is
// true of it until its listing changes (access denied, not an archive)
// or is one that may pass (source.ErrTransient): everything the server
// may answer otherwise another time (a refused or reset connection, a
// 5xx, a 200 to a range, a size that does not add up), however final the
// same answer is when a mount is made.
func (p *prefixStore) Open(ctx context.Context, rel string, e folder.Entry, opts *npz.Options) (*npz.Archive, error) {
	b := p.f.Lister().Object(rel)
	src, err := p.group.Open(ctx, b, remote.Options{TailBytes: smallTail})
	if err != nil {
		switch {
		case errors.Is(err, remote.ErrNotFound):
			p.f.Forget(parent(rel))
			return nil, fmt.Errorf("%w: %w", iofs.ErrNotExist, err)
		case errors.Is(err, remote.ErrDenied), errors.Is(err, source.ErrChanged):
			return nil, err
		}
		return nil, source.Transient(err)
	}
	if !src.Object().Same(remote.Object{Size: e.Size, ETag: e.Version, LastModified: e.ModTime}) {
		src.Close()
		p.f.Forget(parent(rel))
		return nil, fmt.Errorf("%s: %w (since it was listed)", src, source.ErrChanged)
	}
	o := *opts
	if o.Sidecars {
		o.FindSidecar = findSidecar(p.group, b)
	}
	o.Sidecars = false
	a, err := npz.New(ctx, src, src.Size(), e.Name, &o)
	if err != nil {
		src.Close()
		var fe *npz.FormatError
		if errors.As(err, &fe) && !errors.Is(err, source.ErrTransient) && ctx.Err() == nil {
			return nil, fmt.Errorf("not a readable .npz archive or .npy file (%w)", fe)
		}
		return nil, err
	}
	a.Own(src)
	return a, nil
}

// parent is the folder holding rel.
func parent(rel string) string {
	dir, _ := path.Split(rel)
	return strings.TrimSuffix(dir, "/")
}

// putSidecar puts the sidecar of x, a remote archive, beside it, in one
// request, and returns its name and whether it was written. A sidecar
// there already that holds a complete index of every member picked is
// kept (nothing is rebuilt or uploaded). Otherwise the put is
// conditional: where there was none, on there being none still
// (If-None-Match), so that of two machines indexing at once one puts it;
// over one, on its being the one seen (If-Match). A put that loses is no
// failure when the sidecar put meanwhile holds every index.
func putSidecar(ctx context.Context, x *indexed) (string, bool, error) {
	sb := sidecarBeside(x.backend)
	if sb == nil {
		return x.backend.String(), false, errors.New("no sidecar can be put beside it")
	}
	name := sb.String()
	p, ok := sb.(remote.Putter)
	if !ok {
		return name, false, fmt.Errorf("%s: an HTTP server takes no upload: give --sidecar-file FILE to write the sidecar, and put it beside the archive by hand", name)
	}
	old := x.a.IndexSidecar()
	if holdsAll(ctx, old, x.members) {
		return name, false, nil
	}
	var cond remote.PutCondition
	if old == nil {
		cond.IfNoneMatch = true
	} else if o, ok := old.Source().(interface{ Object() remote.Object }); ok {
		cond.IfMatch = o.Object().ETag
	}
	tmp, err := os.CreateTemp("", "npzfs-sidecar-*")
	if err != nil {
		return name, false, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := npz.WriteIndexSidecarTo(ctx, tmp, x.members); err != nil {
		return name, false, err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		return name, false, err
	}
	err = p.Put(ctx, tmp, size, cond)
	if !errors.Is(err, remote.ErrConflict) {
		return name, err == nil, err
	}
	// Another machine put one meanwhile: kept if it holds every index.
	if x.group != nil {
		if sc, _ := findSidecar(x.group, x.backend)(0); sc != nil {
			defer sc.Close()
			if holdsAll(ctx, sc, x.members) {
				return name, false, nil
			}
		}
	}
	return name, false, fmt.Errorf("%s: %w, and it lacks some of the indexes: run again to replace it", name, remote.ErrConflict)
}

// holdsAll reports whether sc holds a complete index of every member.
func holdsAll(ctx context.Context, sc *npz.IndexSidecar, members []*npz.Member) bool {
	if sc == nil {
		return false
	}
	for _, m := range members {
		if !sc.Holds(ctx, m) {
			return false
		}
	}
	return true
}
