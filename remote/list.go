package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
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
	// names joined by "/"): it gives add the objects and sub-folders
	// directly in it as it reads them, in any order, each name once, and
	// stops at add's first error, which it returns. A folder that holds
	// nothing is empty, not an error. A listing tried again starts
	// afresh: what it gave add before is forgotten.
	List(ctx context.Context, dir string, add func(Item) error) error
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
//
// Listings are kept compactly (Listing) and count against the bound of
// the block Cache the Folder is given (Options.Cache, a Group's), as its
// blocks do: blocks are pushed out to make room for them, and listings
// together may take at most 3/4 of it. A folder whose listing needs more
// than that has the least recently used of the others dropped (listed
// again at their next use), and fails when that is not enough, as soon
// as the listing being read passes it: a listing never takes more memory
// than the bound allows.
type Folder struct {
	l     Lister
	ttl   time.Duration
	opts  Options
	cache *Cache
	now   func() time.Time

	lists atomic.Int64 // listings made (each one or more requests)
	clock atomic.Int64 // counts uses of listings, for listing.used

	mu   sync.Mutex
	dirs map[string]*listing
}

// listing is one folder's listing, done when done is closed.
type listing struct {
	dir  string
	done chan struct{}
	at   time.Time
	l    *Listing
	err  error
	used atomic.Int64 // the Folder's clock at its last use

	// charged is what the listing counts against the cache (guarded by
	// the Folder's mu, once the listing is in dirs).
	charged int64
}

// NewFolder returns a Folder over l keeping each listing for ttl (0
// means DefaultListTTL; a negative ttl keeps none: every use lists
// again). Of opts, the retries, backoff, read and stall timeouts, Logf
// and Cache apply; without a Cache, listings count against a bound of
// CacheBytes of their own.
func NewFolder(l Lister, ttl time.Duration, opts *Options) *Folder {
	if ttl == 0 {
		ttl = DefaultListTTL
	}
	f := &Folder{l: l, ttl: ttl, opts: opts.withDefaults(), now: time.Now, dirs: map[string]*listing{}}
	f.cache = f.opts.Cache
	if f.cache == nil {
		f.cache = NewCache(f.opts.CacheBytes)
	}
	return f
}

// Lister is the Folder's Lister.
func (f *Folder) Lister() Lister { return f.l }

// String names the folder.
func (f *Folder) String() string { return f.l.String() }

// Listings is how many listings the Folder made.
func (f *Folder) Listings() int64 { return f.lists.Load() }

// List returns the listing of the folder at dir (see Lister.List), at
// most the TTL old.
func (f *Folder) List(ctx context.Context, dir string) (*Listing, error) {
	l, err := f.get(ctx, dir)
	if err != nil {
		return nil, err
	}
	return l.l, nil
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
	it, ok := l.l.Find(base)
	if !ok {
		return Item{}, fmt.Errorf("%s%s: %w", f.l, name, iofs.ErrNotExist)
	}
	return it, nil
}

// Forget drops the listing of dir, so that its next use lists it again:
// an object was found to be other than listed.
func (f *Folder) Forget(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.dirs[dir]; l != nil {
		select {
		case <-l.done:
			f.dropLocked(l)
		default: // being listed: that listing is new enough
		}
	}
}

// dropLocked takes l, done, out of the listings kept, and what it counts
// against the cache. f.mu is held.
func (f *Folder) dropLocked(l *listing) {
	if f.dirs[l.dir] == l {
		delete(f.dirs, l.dir)
	}
	f.cache.unkeep(l.charged)
	l.charged = 0
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
				f.dropLocked(l)
				l = nil
			}
		default:
		}
	}
	if l == nil {
		l = &listing{dir: dir, done: make(chan struct{})}
		f.dirs[dir] = l
		go f.list(l)
	}
	f.mu.Unlock()
	l.used.Store(f.clock.Add(1))
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

// chargeEvery is how many items a listing being read adds between
// checks of what it takes against the cache's bound.
const chargeEvery = 4096

// list makes the listing l, in the background: a caller that gives up
// leaves it to the others.
func (f *Folder) list(l *listing) {
	defer close(l.done)
	ctx, cancel := context.WithTimeout(WithStallTimeout(context.Background(), f.opts.StallTimeout), f.opts.ReadTimeout)
	defer cancel()
	f.lists.Add(1)
	what := "listing"
	if l.dir != "" {
		what = "listing " + l.dir + "/"
	}
	var b *listingBuilder
	l.err = retry(ctx, &f.opts, f.l, what, nil, func(ctx context.Context) error {
		b = &listingBuilder{}
		n := 0
		return f.l.List(ctx, l.dir, func(it Item) error {
			if err := b.add(it); err != nil {
				return Permanent(fmt.Errorf("%s%s: %w", f.l, strings.TrimPrefix(l.dir+"/", "/"), err))
			}
			if n++; n%chargeEvery == 0 {
				return f.charge(l, b.bytes())
			}
			return nil
		})
	})
	if l.err == nil {
		l.l = b.done()
		l.err = f.charge(l, l.l.Bytes())
	}
	if l.err != nil {
		f.mu.Lock()
		f.dropLocked(l)
		f.mu.Unlock()
		if !IsPermanent(l.err) {
			l.err = source.Transient(l.err)
		}
		return
	}
	l.at = f.now()
}

// charge has l, being read, count n bytes against the cache, making room
// by dropping the least recently used of the other listings kept when it
// must. Past what listings may take, it fails for good.
func (f *Folder) charge(l *listing, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		ok, out := f.cache.keep(n - l.charged)
		forget(out)
		if ok {
			l.charged = n
			return nil
		}
		var victim *listing
		for _, o := range f.dirs {
			select {
			case <-o.done:
				if o != l && o.charged > 0 && (victim == nil || o.used.Load() < victim.used.Load()) {
					victim = o
				}
			default:
			}
		}
		if victim == nil {
			may := fmt.Sprintf("%d MiB", f.cache.Max()/4*3>>20)
			if f.cache.Max() < 4<<20 {
				may = fmt.Sprintf("%d KiB", f.cache.Max()/4*3>>10)
			}
			return Permanent(fmt.Errorf("%s%s: the folder's listing takes more than the %s of memory a remote folder's listings may take (3/4 of --remote-cache-mb, by default a share of --memory-mb)",
				f.l, strings.TrimPrefix(l.dir+"/", "/"), may))
		}
		f.dropLocked(victim)
	}
}

// Walk calls fn for every object under the folder dir of l, sub-folders
// too, with its path under l's root, in lexical order of paths; it stops
// at the first error, fn's or a listing's.
func Walk(ctx context.Context, f *Folder, dir string, fn func(name string, it Item) error) error {
	l, err := f.List(ctx, dir)
	if err != nil {
		return err
	}
	for it := range l.All() {
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
