package folder

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// NewRemote is the remote folder f as a Store, its objects opened as
// sources of g.
func NewRemote(f *remote.Folder, g *remote.Group) *Remote { return &Remote{f: f, group: g} }

// smallTail is what is fetched of an archive of a remote folder, or of a
// sidecar, when it is opened: its end records (whose search reads its
// last 64 KiB) and a central directory of up to 64 KiB (some 600
// members), in one request (a larger one takes one more). A remote
// archive mounted alone gets remote.DefaultTailBytes, for up to some
// 60,000 members.
const smallTail = 128 << 10

// Remote is a remote folder as a Store: its listings are a
// remote.Folder's (kept for the list TTL), and its objects are opened as
// sources of a remote.Group (sharing its block and disk caches), each
// with its sidecar found when a member first needs a saved index.
type Remote struct {
	f     *remote.Folder
	group *remote.Group
}

// Object is the object at rel.
func (p *Remote) Object(rel string) remote.Backend { return p.f.Lister().Object(rel) }

// RemoteEntry is what a remote folder's listing item says, as an Entry.
func RemoteEntry(it remote.Item) Entry {
	if it.Dir {
		return Entry{Name: it.Name, Dir: true}
	}
	return Entry{Name: it.Name, Size: it.Size, ModTime: it.LastModified, Version: it.ETag}
}

// List implements Store.
func (p *Remote) List(ctx context.Context, rel string) ([]Entry, error) {
	l, err := p.f.List(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, l.Len())
	for i := range out {
		out[i] = RemoteEntry(l.At(i))
	}
	return out, nil
}

// Stat implements Store, from the listing of rel's folder.
func (p *Remote) Stat(ctx context.Context, rel string) (Entry, error) {
	if rel == "" {
		return Entry{Dir: true}, nil
	}
	it, err := p.f.Stat(ctx, rel)
	if err != nil {
		return Entry{}, err
	}
	return RemoteEntry(it), nil
}

// Open implements Store: the object's tail is fetched, and must
// be the object listed; one that is not, or is gone, has its folder
// listed again at the next look. A failure says of the object what is
// true of it until its listing changes (access denied, not an archive)
// or is one that may pass (source.ErrTransient): everything the server
// may answer otherwise another time (a refused or reset connection, a
// 5xx, a 200 to a range, a size that does not add up), however final the
// same answer is when a mount is made.
func (p *Remote) Open(ctx context.Context, rel string, e Entry, opts *npz.Options) (*npz.Archive, error) {
	b := p.Object(rel)
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
		o.SidecarFinder = SidecarFinder(p.group, b)
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

// sidecarBlock is a remote sidecar's block: a read of one span needs
// its window, a few KiB, from it.
const sidecarBlock = 64 << 10

// SidecarBeside is the object of the sidecar beside b's archive
// (npz.SidecarPath), or nil where b has no siblings (a backend of one
// URL alone).
func SidecarBeside(b remote.Backend) remote.Backend {
	sib, ok := b.(remote.Sibling)
	if !ok {
		return nil
	}
	name := b.String()
	return sib.Sibling(npz.SidecarPath(name[strings.LastIndex(name, "/")+1:]))
}

// SidecarFinder is what finds the sidecar beside the archive b is, one
// of the group g (npz.Options.SidecarFinder): the sidecar beside it
// (npz.SidecarPath), looked for with one request, for the head bytes at
// its start when told them (the lookup's local header and table), else
// for its end (its central directory). One that is not there, or may
// not be read, is none; one that cannot be had now is a failure that may
// pass.
func SidecarFinder(g *remote.Group, b remote.Backend) npz.SidecarFinder {
	return remoteSidecar{g, b}
}

type remoteSidecar struct {
	g *remote.Group
	b remote.Backend
}

func (r remoteSidecar) FindSidecar(ctx context.Context, head int64) (*npz.IndexSidecar, error) {
	sb := SidecarBeside(r.b)
	if sb == nil {
		return nil, iofs.ErrNotExist
	}
	o := remote.Options{TailBytes: smallTail, BlockSize: sidecarBlock}
	if head > 0 {
		o.TailBytes, o.Head = head, true
	}
	src, err := r.g.Open(ctx, sb, o)
	switch {
	case errors.Is(err, remote.ErrNotFound) || errors.Is(err, remote.ErrDenied):
		return nil, fmt.Errorf("%s: %w", sb, iofs.ErrNotExist)
	case err != nil:
		return nil, err
	}
	return npz.NewIndexSidecar(src, src.Size(), src.String()), nil
}
