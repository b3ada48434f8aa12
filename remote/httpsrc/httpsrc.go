// Package httpsrc is a remote.Backend for an object on an HTTP(S) server,
// read with byte-range GETs. It trusts nothing but a 206 whose
// Content-Range is exactly the range asked for, and pins every request to
// the object seen first: If-Match on its strong ETag, else
// If-Unmodified-Since on its Last-Modified (never If-Range, which servers
// answer with the whole body when it does not match).
package httpsrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// Options for a Backend.
type Options struct {
	// Header is sent with every request (an Authorization header, say).
	Header http.Header
	// Client makes the requests; nil means a client of this package's
	// own: no compression asked for, up to 16 idle connections to the
	// host, 30 s to connect and to the answer's headers.
	Client *http.Client
}

// errRefused is a connection refused: nothing listens there.
var errRefused = errors.New("connection refused")

// Backend is one object on an HTTP server.
type Backend struct {
	url    string // as given: never shown
	shown  string // without user info, query or fragment
	header http.Header
	client *http.Client
}

// New returns a Backend for the object at rawURL (http or https).
func New(rawURL string, opts *Options) (*Backend, error) {
	u, err := parseHTTP(rawURL)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(u.Path, "/") {
		return nil, fmt.Errorf("%s names a folder (it ends in /), not an archive: give the URL of an archive in it", Redact(rawURL))
	}
	b := &Backend{url: rawURL, shown: Redact(rawURL), header: http.Header{}}
	if opts != nil {
		b.header = opts.Header.Clone()
		b.client = opts.Client
	}
	if b.header == nil {
		b.header = http.Header{}
	}
	if b.client == nil {
		b.client = NewClient()
	}
	return b, nil
}

// parseHTTP parses an http or https URL with a host.
func parseHTTP(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %s", Redact(rawURL))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: not an http or https URL", Redact(rawURL))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s: no host", Redact(rawURL))
	}
	return u, nil
}

// Sibling implements remote.Sibling: the object name beside b's, in the
// same folder of the same server, with the same headers and client (and
// query string, so a signed URL's signature is sent, and refused).
func (b *Backend) Sibling(name string) remote.Backend {
	u, err := url.Parse(b.url)
	if err != nil {
		return b
	}
	dir := u.EscapedPath()[:strings.LastIndex(u.EscapedPath(), "/")+1]
	u.Path, u.RawPath = "", ""
	if v, err := url.Parse(dir + url.PathEscape(name)); err == nil {
		u.Path, u.RawPath = v.Path, v.RawPath
	}
	s := u.String()
	return &Backend{url: s, shown: Redact(s), header: b.header, client: b.client}
}

// NewClient returns the client New uses by default: its requests keep
// the stall rule (remote.NewTransport), waiting for their answers'
// headers too.
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = 16
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: remote.NewTransport(t)}
}

// Redact is a URL as it may be shown: without user info, query string or
// fragment (a presigned URL's signature is in its query).
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Show no more than the part before any query.
		s, _, _ := strings.Cut(rawURL, "?")
		if i := strings.LastIndex(s, "@"); i >= 0 {
			s = s[i+1:]
		}
		return s
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

// String implements remote.Backend.
func (b *Backend) String() string { return b.shown }

// get makes a GET of b's URL with b's headers, asking for the bytes as
// they are: Go's transport would ask for gzip otherwise, and a compressed
// body's bytes are not the object's.
func (b *Backend) get(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return nil, remote.Permanent(fmt.Errorf("%s: %v", b.shown, b.clean(err)))
	}
	for k, vs := range b.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept-Encoding", "identity")
	return req, nil
}

// request is get of the range rng (a Range header's value).
func (b *Backend) request(ctx context.Context, rng string) (*http.Request, error) {
	req, err := b.get(ctx)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", rng)
	return req, nil
}

// do sends req; transport failures come back with the URL redacted,
// refusals and missing hosts marked permanent, and so are certificates
// that fail verification.
func (b *Backend) do(req *http.Request) (*http.Response, error) {
	resp, err := b.client.Do(req)
	if err == nil {
		return resp, nil
	}
	err = b.clean(err)
	if e := remote.CertificateError(b.shown, err); e != nil {
		return nil, e
	}
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return nil, remote.Permanent(fmt.Errorf("%s: no such host %s", b.shown, dns.Name))
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("%s: %w by %s", b.shown, errRefused, req.URL.Host)
	case errors.Is(err, context.Canceled):
		return nil, err
	}
	return nil, fmt.Errorf("%s: %v", b.shown, err)
}

// clean strips the URL from a *url.Error, which would show the query
// string; the cause remains.
func (b *Backend) clean(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Tail implements remote.Backend with a suffix range request.
func (b *Backend) Tail(ctx context.Context, n int64) (remote.Object, []byte, error) {
	return b.edge(ctx, n, false)
}

// Head implements remote.HeadReader with a range request from byte 0.
func (b *Backend) Head(ctx context.Context, n int64) (remote.Object, []byte, error) {
	return b.edge(ctx, n, true)
}

// edge fetches the object's last n bytes, or its first with head, and
// says what the object is.
func (b *Backend) edge(ctx context.Context, n int64, head bool) (remote.Object, []byte, error) {
	var obj remote.Object
	rng, which := "bytes=-"+strconv.FormatInt(n, 10), "last"
	if head {
		rng, which = "bytes=0-"+strconv.FormatInt(n-1, 10), "first"
	}
	req, err := b.request(ctx, rng)
	if err != nil {
		return obj, nil, err
	}
	resp, err := b.do(req)
	if errors.Is(err, errRefused) {
		// At open, a refusal is an answer: nothing listens there.
		return obj, nil, remote.Permanent(err)
	}
	if err != nil {
		return obj, nil, err
	}
	defer resp.Body.Close()
	if movedToFolder(req.URL, resp) {
		return obj, nil, b.errFolder()
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusRequestedRangeNotSatisfiable:
		// An empty object has no byte to give a range of.
		if _, _, total, err := remote.ParseContentRange(resp.Header.Get("Content-Range")); err == nil && total == 0 {
			return obj, nil, remote.Permanent(fmt.Errorf("%s: %w", b.shown, remote.ErrEmpty))
		}
		return obj, nil, remote.Permanent(fmt.Errorf("%s: the server refused a range of the %s %d bytes (HTTP 416)", b.shown, which, n))
	case http.StatusOK:
		return obj, nil, b.whole(resp)
	default:
		return obj, nil, b.statusError(resp, "")
	}
	first, last, total, err := remote.ParseContentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		if _, tot, _ := strings.Cut(resp.Header.Get("Content-Range"), "/"); tot == "0" {
			// Go's file server answers a suffix range of an empty
			// file with a 206 of "bytes 0--1/0".
			return obj, nil, remote.Permanent(fmt.Errorf("%s: %w", b.shown, remote.ErrEmpty))
		}
		return obj, nil, remote.Permanent(fmt.Errorf("%s: %v", b.shown, err))
	}
	if total < 0 {
		return obj, nil, remote.Permanent(fmt.Errorf("%s: the server does not say how large the object is (Content-Range %q)", b.shown, resp.Header.Get("Content-Range")))
	}
	if err := remote.CheckEdge(first, last, total, n, head); err != nil {
		return obj, nil, fmt.Errorf("%s: %v", b.shown, err)
	}
	obj = remote.Object{Size: total, ETag: strongETag(resp.Header.Get("ETag"))}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		obj.LastModified = t
	}
	buf := make([]byte, last-first+1)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return obj, nil, fmt.Errorf("%s: the end of the archive: %w", b.shown, err)
	}
	return obj, buf, nil
}

// whole says what a 200 to a range request at open means: an empty
// object (nginx and Go's file server answer a range of one so: there is
// no byte to give a range of), a folder's listing, another page, or a
// server that ignores byte ranges.
func (b *Backend) whole(resp *http.Response) error {
	switch {
	case resp.ContentLength == 0 || resp.ContentLength < 0 && emptyBody(resp.Body):
		return remote.Permanent(fmt.Errorf("%s: %w", b.shown, remote.ErrEmpty))
	case isListing(resp):
		return b.errFolder()
	case htmlPage(resp):
		return remote.Permanent(fmt.Errorf("%s: the server answered with an HTML page (HTTP 200), not the archive's bytes: a login or error page? (a folder is given with a trailing /)", b.shown))
	}
	return remote.Permanent(fmt.Errorf("%s: the server ignores byte ranges (it answered a range request with the whole object, HTTP 200): npzfs cannot read it without downloading all of it", b.shown))
}

// emptyBody reports a body that ends before its first byte.
func emptyBody(body io.Reader) bool {
	_, err := io.ReadFull(body, make([]byte, 1))
	return err == io.EOF
}

// Fetch implements remote.Backend.
func (b *Backend) Fetch(ctx context.Context, obj remote.Object, off, n int64) (io.ReadCloser, error) {
	last := off + n - 1
	req, err := b.request(ctx, fmt.Sprintf("bytes=%d-%d", off, last))
	if err != nil {
		return nil, err
	}
	switch {
	case obj.ETag != "":
		req.Header.Set("If-Match", obj.ETag)
	case !obj.LastModified.IsZero():
		req.Header.Set("If-Unmodified-Since", obj.LastModified.UTC().Format(http.TimeFormat))
	}
	resp, err := b.do(req)
	if err != nil {
		return nil, err
	}
	bad := func(err error) (io.ReadCloser, error) {
		resp.Body.Close()
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusPreconditionFailed:
		resp.Body.Close()
		return nil, remote.PinRefused(b.shown, obj, b.now(ctx, obj))
	case http.StatusOK:
		return bad(fmt.Errorf("%s: bytes %d-%d: the server answered with the whole object (HTTP 200), not the range", b.shown, off, last))
	case http.StatusNotFound, http.StatusGone:
		return bad(remote.Permanent(fmt.Errorf("%s: %w (HTTP %d: the object is gone)", b.shown, source.ErrChanged, resp.StatusCode)))
	default:
		return bad(b.statusError(resp, fmt.Sprintf("bytes %d-%d: ", off, last)))
	}
	first, l, total, err := remote.ParseContentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return bad(fmt.Errorf("%s: bytes %d-%d: %v", b.shown, off, last, err))
	}
	if total >= 0 && total != obj.Size {
		same := obj.ETag != "" && strongETag(resp.Header.Get("ETag")) == obj.ETag
		return bad(remote.WrongTotal(b.shown, obj, total, same))
	}
	if first != off || l != last {
		return bad(fmt.Errorf("%s: asked for bytes %d-%d, got %d-%d", b.shown, off, last, first, l))
	}
	if e := strongETag(resp.Header.Get("ETag")); obj.ETag != "" && e != "" && e != obj.ETag {
		return bad(remote.Permanent(fmt.Errorf("%s: %w (ETag %s, was %s)", b.shown, source.ErrChanged, e, obj.ETag)))
	}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); obj.ETag == "" && !obj.LastModified.IsZero() && err == nil && !t.Equal(obj.LastModified) {
		// Pinned by its time alone, as the answer says it, whether or
		// not the server honours If-Unmodified-Since.
		return bad(remote.Permanent(fmt.Errorf("%s: %w (Last-Modified %s, was %s)", b.shown, source.ErrChanged, remote.HTTPDate(t), remote.HTTPDate(obj.LastModified))))
	}
	if resp.ContentLength >= 0 && resp.ContentLength != n {
		return bad(fmt.Errorf("%s: bytes %d-%d: a body of %d bytes", b.shown, off, last, resp.ContentLength))
	}
	return resp.Body, nil
}

// statusError describes an answer that is not data: permanent unless a
// retry could help (5xx, 429, 408).
func (b *Backend) statusError(resp *http.Response, what string) error {
	code := resp.StatusCode
	var err error
	switch code {
	case http.StatusNotFound, http.StatusGone:
		err = fmt.Errorf("%s: %s%w (HTTP %d)", b.shown, what, remote.ErrNotFound, code)
	case http.StatusUnauthorized, http.StatusForbidden:
		err = fmt.Errorf("%s: %s%w (HTTP %d)", b.shown, what, remote.ErrDenied, code)
	default:
		err = fmt.Errorf("%s: %sthe server answered %s (HTTP %d)", b.shown, what, http.StatusText(code), code)
	}
	if code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout {
		return err
	}
	return remote.Permanent(err)
}

// now asks, with a HEAD and no condition, for the size and
// Last-Modified of an object pinned by its time, for remote.PinRefused;
// nil for one pinned by its ETag, or when the server does not say.
func (b *Backend) now(ctx context.Context, obj remote.Object) *remote.Object {
	if obj.ETag != "" {
		return nil
	}
	req, err := b.get(ctx)
	if err != nil {
		return nil
	}
	req.Method = http.MethodHead
	resp, err := b.do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	t, err := http.ParseTime(resp.Header.Get("Last-Modified"))
	if resp.StatusCode != http.StatusOK || resp.ContentLength < 0 || err != nil {
		return nil
	}
	return &remote.Object{Size: resp.ContentLength, LastModified: t}
}

// strongETag is a strong entity tag as sent, or "" for a weak or missing
// one (a weak tag may name different bytes, so it pins nothing).
func strongETag(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "W/") || len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return ""
	}
	return s
}
