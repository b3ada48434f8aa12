package httpsrc

import (
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

// maxListing bounds a listing's body: about a million entries.
const maxListing = 256 << 20

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

// List implements remote.Lister.
func (l *Lister) List(ctx context.Context, dir string) ([]remote.Item, error) {
	folder := ""
	if dir != "" {
		folder = dir + "/"
	}
	if l.manifest.Load() != 1 {
		items, ok, err := l.get(ctx, l.url(folder), true)
		if err != nil || ok {
			if ok {
				l.manifest.Store(2)
			}
			return items, err
		}
		if l.manifest.Load() == 2 {
			return nil, remote.Permanent(fmt.Errorf("%s%s: the server gives no JSON listing of this folder", l.shown, folder))
		}
	}
	items, ok, err := l.get(ctx, l.url(folder+ManifestName), false)
	if err != nil || ok {
		if ok {
			l.manifest.Store(1)
		}
		return items, err
	}
	return nil, remote.Permanent(fmt.Errorf("%s%s: the server gives no listing npzfs can read: it must answer the folder's URL with a JSON listing (nginx: autoindex on; autoindex_format json;) or serve %s in the folder (its format: see README.md)", l.shown, folder, ManifestName))
}

// get asks u for a listing; ok is false, with no error, when the answer
// is not one (for the folder's URL: not found, forbidden, or not JSON;
// for a manifest: not found or forbidden).
func (l *Lister) get(ctx context.Context, u string, folder bool) (items []remote.Item, ok bool, err error) {
	b := &Backend{url: u, shown: Redact(u), client: l.client, header: l.header}
	req, err := b.get(ctx)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.do(req)
	if errors.Is(err, errRefused) {
		return nil, false, remote.Permanent(err)
	}
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusGone:
		return nil, false, nil
	default:
		return nil, false, b.statusError(resp, "the listing: ")
	}
	if folder {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "application/json" {
			return nil, false, nil
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListing+1))
	if err != nil {
		return nil, false, fmt.Errorf("%s: the listing: %w", b.shown, err)
	}
	if len(body) > maxListing {
		return nil, false, remote.Permanent(fmt.Errorf("%s: a listing of more than %d MiB", b.shown, maxListing>>20))
	}
	items, err = ParseListing(body)
	if err != nil {
		return nil, false, remote.Permanent(fmt.Errorf("%s: %v", b.shown, err))
	}
	return items, true, nil
}

// listEntry is one entry of a JSON listing.
type listEntry struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Size  *int64 `json:"size"`
	MTime string `json:"mtime"`
}

// ParseListing reads a JSON listing (see Lister): files and folders
// whose names can be file names; entries of another type, or a file
// without a size, are left out.
func ParseListing(b []byte) ([]remote.Item, error) {
	var ents []listEntry
	if err := json.Unmarshal(b, &ents); err != nil {
		return nil, fmt.Errorf("not a JSON listing (an array of {\"name\", \"type\", \"size\", \"mtime\"}): %v", err)
	}
	items := make([]remote.Item, 0, len(ents))
	for _, e := range ents {
		if !remote.ValidName(e.Name) {
			continue
		}
		switch e.Type {
		case "directory":
			items = append(items, remote.Item{Name: e.Name, Dir: true})
		case "file":
			if e.Size == nil || *e.Size < 0 {
				continue
			}
			it := remote.Item{Name: e.Name, Object: remote.Object{Size: *e.Size}}
			if t, err := http.ParseTime(e.MTime); err == nil {
				it.LastModified = t
			} else if t, err := time.Parse(time.RFC3339, e.MTime); err == nil {
				it.LastModified = t
			}
			items = append(items, it)
		}
	}
	return items, nil
}
