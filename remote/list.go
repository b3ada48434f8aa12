package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/source"
)

// An Item is one entry of a remote folder's listing: an object, with
// what the listing says of it, or a sub-folder.
type Item struct {
	Name string // in its folder: never "", ".", ".." or holding "/"
	Dir  bool
	// Object is what the listing says of an object (its size, and its
	// ETag and modification time when given); zero for a folder.
	Object
}

// A Lister reads a remote folder (an S3 prefix, an HTTP folder with a
// listing) one level at a time, and gives Backends for its objects.
// Errors that retrying cannot fix are marked with Permanent, as a
// Backend's are; String and errors never show credentials or signed
// query strings.
type Lister interface {
	// List lists the folder at dir ("" for the root, else sub-folder
	// names joined by "/"): the objects and sub-folders directly in it,
	// in any order, each name once. A folder that holds nothing is
	// empty, not an error.
	List(ctx context.Context, dir string) ([]Item, error)
	// Object is a Backend for the object at name (a path under the
	// root, as List's names joined by "/"), sharing the Lister's client
	// and credentials.
	Object(name string) Backend
	// String names the folder, ending in "/".
	String() string
}

// A Sibling backend gives the backend of another object in its object's
// folder (the same bucket and prefix, or host and path), with the same
// client and credentials: an archive's sidecar (npz.SidecarPath).
type Sibling interface {
	Sibling(name string) Backend
}

// PutCondition says when a Put may write: IfNoneMatch only where no
// object is, IfMatch only over the object of that ETag.
type PutCondition struct {
	IfNoneMatch bool
	IfMatch     string
}

// ErrNotFound and ErrDenied are wrapped by a Backend's errors for an
// object that is not there (404) and one it may not read (401, 403), so
// that a caller may tell them apart: a sidecar that is not there is no
// error.
var (
	ErrNotFound = errors.New("not found")
	ErrDenied   = errors.New("access denied")
)

// ErrEmpty is wrapped by a Backend's error at open for an object of no
// bytes, which servers answer a range request for with a 416 or with a
// 200 and an empty body.
var ErrEmpty = errors.New("the object is empty (0 bytes): not an archive")

// ErrConflict is the error of a Put whose condition failed: another
// writer put an object there (IfNoneMatch), or replaced the one that was
// (IfMatch).
var ErrConflict = errors.New("the object was written by someone else meanwhile")

// A Putter writes its object whole, in one request, so that a reader
// never sees part of it: an S3 object.
type Putter interface {
	// Put writes size bytes from body as the object, under c; a failed
	// condition is an error wrapping ErrConflict. A server that does
	// not support conditions may write regardless.
	Put(ctx context.Context, body io.ReadSeeker, size int64, c PutCondition) error
}

// Same reports whether o, an object as opened, is the one listed (what a
// listing said of it): the same size, and the same ETag, or else the
// same modification time to the second, when both say.
func (o Object) Same(listed Object) bool {
	switch {
	case o.Size != listed.Size:
		return false
	case o.ETag != "" && listed.ETag != "":
		return o.ETag == listed.ETag
	case !o.LastModified.IsZero() && !listed.LastModified.IsZero():
		return o.LastModified.Unix() == listed.LastModified.Unix()
	}
	return true
}

// DefaultListTTL is how long a Folder keeps a listing unless told
// otherwise.
const DefaultListTTL = 60 * time.Second

// A Folder is a Lister's folders as a mount sees them: each folder is
// listed on first use and its listing kept for a while (the TTL), then
// listed again at the next use after it, so that objects added appear,
// objects removed vanish, and replaced ones are seen as new. Concurrent
// users of a folder being listed wait for that one listing. Failed
// requests are retried as a Source retries its fetches; a listing that
// fails is not kept. It is safe for concurrent use.
type Folder struct {
	l    Lister
	ttl  time.Duration
	opts Options
	now  func() time.Time

	lists atomic.Int64 // listings made (each one or more requests)

	mu   sync.Mutex
	dirs map[string]*listing
}

// listing is one folder's listing, done when done is closed.
type listing struct {
	done  chan struct{}
	at    time.Time
	items []Item
	index map[string]int // by name
	err   error
}

// NewFolder returns a Folder over l keeping each listing for ttl (0
// means DefaultListTTL; a negative ttl keeps none: every use lists
// again). Of opts, the retries, backoff, read and stall timeouts and
// Logf apply.
func NewFolder(l Lister, ttl time.Duration, opts *Options) *Folder {
	if ttl == 0 {
		ttl = DefaultListTTL
	}
	return &Folder{l: l, ttl: ttl, opts: opts.withDefaults(), now: time.Now, dirs: map[string]*listing{}}
}

// Lister is the Folder's Lister.
func (f *Folder) Lister() Lister { return f.l }

// String names the folder.
func (f *Folder) String() string { return f.l.String() }

// Listings is how many listings the Folder made.
func (f *Folder) Listings() int64 { return f.lists.Load() }

// List returns the items of the folder at dir (see Lister.List), sorted
// by name, from a listing at most the TTL old.
func (f *Folder) List(ctx context.Context, dir string) ([]Item, error) {
	l, err := f.get(ctx, dir)
	if err != nil {
		return nil, err
	}
	return l.items, nil
}

// Stat returns the item at name (a path under the root), from its
// folder's listing; one that is not there is an error wrapping
// fs.ErrNotExist.
func (f *Folder) Stat(ctx context.Context, name string) (Item, error) {
	dir, base := path.Split(name)
	l, err := f.get(ctx, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return Item{}, err
	}
	i, ok := l.index[base]
	if !ok {
		return Item{}, fmt.Errorf("%s%s: %w", f.l, name, iofs.ErrNotExist)
	}
	return l.items[i], nil
}

// Forget drops the listing of dir, so that its next use lists it again:
// an object was found to be other than listed.
func (f *Folder) Forget(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.dirs[dir]; l != nil {
		select {
		case <-l.done:
			delete(f.dirs, dir)
		default: // being listed: that listing is new enough
		}
	}
}

// get returns dir's listing: the one kept, if fresh, or a new one (which
// a concurrent caller may have started).
func (f *Folder) get(ctx context.Context, dir string) (*listing, error) {
	f.mu.Lock()
	l := f.dirs[dir]
	if l != nil {
		select {
		case <-l.done:
			if l.err != nil || f.now().Sub(l.at) >= f.ttl {
				l = nil
			}
		default:
		}
	}
	if l == nil {
		l = &listing{done: make(chan struct{})}
		f.dirs[dir] = l
		go f.list(dir, l)
	}
	f.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// list makes the listing l of dir, in the background: a caller that
// gives up leaves it to the others.
func (f *Folder) list(dir string, l *listing) {
	defer close(l.done)
	ctx, cancel := context.WithTimeout(WithStallTimeout(context.Background(), f.opts.StallTimeout), f.opts.ReadTimeout)
	defer cancel()
	f.lists.Add(1)
	what := "listing"
	if dir != "" {
		what = "listing " + dir + "/"
	}
	var items []Item
	l.err = retry(ctx, &f.opts, f.l, what, nil, func(ctx context.Context) error {
		var err error
		items, err = f.l.List(ctx, dir)
		return err
	})
	if l.err != nil {
		if !IsPermanent(l.err) {
			l.err = source.Transient(l.err)
		}
		return
	}
	l.at = f.now()
	items = sortItems(items)
	l.items, l.index = items, make(map[string]int, len(items))
	for i, it := range items {
		l.index[it.Name] = i
	}
}

// sortItems sorts items by name, a folder before an object of the same
// name, and drops the later of two items of one name (an object KEY and
// the prefix KEY/: the folder is kept).
func sortItems(items []Item) []Item {
	slices.SortFunc(items, func(a, b Item) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Dir == b.Dir {
			return 0
		}
		if a.Dir {
			return -1
		}
		return 1
	})
	out := items[:0]
	for i, it := range items {
		if i > 0 && it.Name == items[i-1].Name {
			continue
		}
		out = append(out, it)
	}
	return out
}

// Walk calls fn for every object under the folder dir of l, sub-folders
// too, with its path under l's root, in lexical order of paths; it stops
// at the first error, fn's or a listing's.
func Walk(ctx context.Context, f *Folder, dir string, fn func(name string, it Item) error) error {
	items, err := f.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, it := range items {
		name := it.Name
		if dir != "" {
			name = dir + "/" + name
		}
		if it.Dir {
			err = Walk(ctx, f, name, fn)
		} else {
			err = fn(name, it)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ValidName reports whether a name from a listing can be served as one
// file or folder name: not empty, ".", "..", no "/" or NUL, at most 255
// bytes.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 && !strings.ContainsAny(name, "/\x00")
}
