package httpsrc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/remote"
)

// ManifestName is the listing a folder may hold for servers that list
// no folder themselves: FOLDER/index.json.
const ManifestName = "index.json"

// Lister is a remote.Lister of a folder on an HTTP server, one level at
// a time, from a listing in JSON the server gives without guessing: the
// folder's own URL answered in JSON (nginx's "autoindex on;
// autoindex_format json;"), or else a file index.json in the folder, in
// the same format: an array of objects, each with "name", "type"
// ("file" or "directory"), and for a file "size" (bytes) and optionally
// "mtime" (an HTTP date, as nginx writes it). Entries of another type,
// and names that cannot be file names, are left out. Whichever of the
// two answers first is the one asked from then on.
type Lister struct {
	base   *url.URL // the folder, its path ending in "/"
	shown  string
	header http.Header
	client *http.Client
	// manifest: the server answered with index.json (1), with the
	// folder's URL (2), or neither yet (0).
	manifest atomic.Int32
}

// NewLister returns a Lister of the folder at rawURL (ending in "/").
// No request is made.
func NewLister(rawURL string, opts *Options) (*Lister, error) {
	u, err := parseHTTP(rawURL)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, "/") {
		return nil, fmt.Errorf("%s names a file, not a folder: a folder's URL ends in /", Redact(rawURL))
	}
	l := &Lister{base: u, shown: Redact(rawURL), header: http.Header{}, client: NewClient()}
	if opts != nil {
		if opts.Header != nil {
			l.header = opts.Header.Clone()
		}
		if opts.Client != nil {
			l.client = opts.Client
		}
	}
	return l, nil
}

// IsFolder reports an http(s) URL whose path ends in "/": a folder.
func IsFolder(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.HasSuffix(u.Path, "/")
}

// String implements remote.Lister.
func (l *Lister) String() string { return l.shown }

// url is the URL of name under the folder (each part escaped), with the
// folder's query.
func (l *Lister) url(name string) string {
	u := *l.base
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	u.Path = l.base.Path + name
	u.RawPath = l.base.EscapedPath() + strings.Join(parts, "/")
	return u.String()
}

// Object implements remote.Lister.
func (l *Lister) Object(name string) remote.Backend {
	u := l.url(name)
	return &Backend{url: u, shown: Redact(u), header: l.header, client: l.client}
}

// List implements remote.Lister: the listing is read as it comes, an
// entry at a time, never whole.
func (l *Lister) List(ctx context.Context, dir string, add func(remote.Item) error) error {
	folder := ""
	if dir != "" {
		folder = dir + "/"
	}
	if l.manifest.Load() != 1 {
		ok, err := l.get(ctx, l.url(folder), true, add)
		if err != nil || ok {
			if ok {
				l.manifest.Store(2)
			}
			return err
		}
		if l.manifest.Load() == 2 {
			return remote.Permanent(fmt.Errorf("%s%s: the server gives no JSON listing of this folder", l.shown, folder))
		}
	}
	ok, err := l.get(ctx, l.url(folder+ManifestName), false, add)
	if err != nil || ok {
		if ok {
			l.manifest.Store(1)
		}
		return err
	}
	return remote.Permanent(fmt.Errorf("%s%s: the server gives no listing npzfs can read: it must answer the folder's URL with a JSON listing (nginx: autoindex on; autoindex_format json;) or serve %s in the folder (its format: see README.md)", l.shown, folder, ManifestName))
}

// get asks u for a listing and gives add its entries; ok is false, with
// no error, when the answer is not one (for the folder's URL: not found,
// forbidden, or not JSON; for a manifest: not found or forbidden).
func (l *Lister) get(ctx context.Context, u string, folder bool, add func(remote.Item) error) (ok bool, err error) {
	b := &Backend{url: u, shown: Redact(u), client: l.client, header: l.header}
	req, err := b.get(ctx)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.do(req)
	if errors.Is(err, errRefused) {
		return false, remote.Permanent(err)
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusGone:
		return false, nil
	default:
		return false, b.statusError(resp, "the listing: ")
	}
	if folder {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "application/json" {
			return false, nil
		}
	}
	body := &readErr{r: resp.Body}
	err = ParseListing(body, add)
	switch {
	case err == nil:
		return true, nil
	case body.err != nil:
		return true, fmt.Errorf("%s: the listing: %w", b.shown, body.err)
	case errors.Is(err, errNotListing):
		return true, remote.Permanent(fmt.Errorf("%s: %v", b.shown, err))
	}
	return true, err // add's
}

// readErr is a reader that keeps the error its reader gave, but for
// io.EOF: a listing cut short by the network, not one that is not JSON.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// listEntry is one entry of a JSON listing.
type listEntry struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Size  *int64 `json:"size"`
	MTime string `json:"mtime"`
}

// errNotListing is wrapped by ParseListing's errors for what is not a
// JSON listing.
var errNotListing = errors.New("not a JSON listing (an array of {\"name\", \"type\", \"size\", \"mtime\"})")

// ParseListing reads a JSON listing (see Lister) from r, an entry at a
// time, and gives add its files and folders whose names can be file
// names; entries of another type, or a file without a size, are left
// out. It stops at add's first error, which it returns; what is not a
// listing is an error wrapping errNotListing.
func ParseListing(r io.Reader, add func(remote.Item) error) error {
	d := json.NewDecoder(r)
	if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("%w: %v", errNotListing, cmp.Or(err, fmt.Errorf("it starts with %v", tok)))
	}
	for d.More() {
		var e listEntry
		if err := d.Decode(&e); err != nil {
			return fmt.Errorf("%w: %v", errNotListing, err)
		}
		if it, ok := e.item(); ok {
			if err := add(it); err != nil {
				return err
			}
		}
	}
	if _, err := d.Token(); err != nil {
		return fmt.Errorf("%w: %v", errNotListing, err)
	}
	return nil
}

// item is the entry as an item, if it is a file or folder whose name
// can be a file name.
func (e *listEntry) item() (remote.Item, bool) {
	if !remote.ValidName(e.Name) {
		return remote.Item{}, false
	}
	switch e.Type {
	case "directory":
		return remote.Item{Name: e.Name, Dir: true}, true
	case "file":
		if e.Size == nil || *e.Size < 0 {
			return remote.Item{}, false
		}
		it := remote.Item{Name: e.Name, Object: remote.Object{Size: *e.Size}}
		if t, err := http.ParseTime(e.MTime); err == nil {
			it.LastModified = t
		} else if t, err := time.Parse(time.RFC3339, e.MTime); err == nil {
			it.LastModified = t
		}
		return it, true
	}
	return remote.Item{}, false
}
