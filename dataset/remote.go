package dataset

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/remote/httpsrc"
	"github.com/npzfs/npzfs/remote/s3src"
)

// Remote tunes remote sources.
type Remote struct {
	// Header is sent with every HTTP request (never logged or shown).
	Header http.Header
	// Endpoint is an S3-compatible server's URL; "" means AWS, or the
	// SDK's AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL.
	Endpoint string
	// NoSign sends S3 requests unsigned (public buckets).
	NoSign bool
	// CacheBytes bounds the fetched blocks kept in memory; 0 means
	// remote's default.
	CacheBytes int64
	// DiskCache, when set, is a folder where fetched blocks are kept too,
	// at most DiskCacheBytes of them (remote.DiskCache).
	DiskCache      string
	DiskCacheBytes int64
	// ListTTL is how long a remote folder's listing is kept
	// (remote.NewFolder); 0 means remote.DefaultListTTL.
	ListTTL time.Duration
	// PageSize is how many keys an S3 listing asks for a page; 0 means
	// the server's default.
	PageSize int
	// Timeout bounds a fetch or a listing, its retries included, and
	// StallTimeout is how long a request may go without a byte before it
	// is tried again; 0 means remote's defaults.
	Timeout, StallTimeout time.Duration
}

// options are the options of the dataset's remote sources and listings.
func (r *Remote) options(logf func(string, ...any)) *remote.Options {
	return &remote.Options{CacheBytes: r.CacheBytes, ReadTimeout: r.Timeout, StallTimeout: r.StallTimeout, Logf: logf}
}

// IsRemote reports a name that npzfs reads from a server: an https://,
// http:// or s3:// URL.
func IsRemote(name string) bool {
	for _, p := range []string{"http://", "https://", "s3://"} {
		if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
			return true
		}
	}
	return false
}

// Redact is name as it may be shown in mount tables, logs and messages:
// a URL without user info or query string (a presigned URL's signature
// is in its query); other names as they are.
func Redact(name string) string {
	switch {
	case IsRemote(name) && !isS3(name):
		return httpsrc.Redact(name)
	case strings.Contains(name, "://"):
		if u, err := url.Parse(name); err == nil && u.Scheme != "" {
			u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
			return u.String()
		}
	}
	return name
}

// openRemote opens a remote archive, fetching the tail of the object,
// or a remote folder (a URL ending in "/", a bucket alone), listing its
// top level.
func (d *Dataset) openRemote(ctx context.Context, url string, o *Options) error {
	d.name, d.remote = Redact(url), true
	g, err := d.remoteGroup(&o.Remote)
	if err != nil {
		return err
	}
	if IsRemoteFolder(url) {
		return d.openPrefix(ctx, url, g, o)
	}
	b, err := newBackend(ctx, url, &o.Remote)
	if err != nil {
		return err
	}
	src, err := g.Open(ctx, b, remote.Options{})
	if err != nil {
		return err
	}
	d.closers = append(d.closers, src)
	d.backend = b
	ao := o.Archive
	if o.Sidecars {
		ao.SidecarFinder = folder.SidecarFinder(g, b)
	}
	ao.LogName = cmp.Or(ao.LogName, path.Base(src.String()))
	a, err := npz.New(ctx, src, src.Size(), path.Base(src.String()), &ao)
	if err != nil {
		if fe := formatError(err); fe != nil {
			return fmt.Errorf("%s is not a readable .npz archive or .npy file (%v)", src, fe)
		}
		return fmt.Errorf("%s: %w", src, err)
	}
	if err := truncatedNPY(ctx, a); err != nil {
		a.Close()
		return fmt.Errorf("%s: %v", src, err)
	}
	d.setArchive(a)
	return nil
}

// IsRemoteFolder reports a URL of a remote folder: an s3:// prefix
// ending in "/" or a bucket alone, or an http(s):// URL whose path ends
// in "/".
func IsRemoteFolder(name string) bool {
	if !IsRemote(name) {
		return false
	}
	if isS3(name) {
		return s3src.IsFolder(name)
	}
	return httpsrc.IsFolder(name)
}

func isS3(url string) bool { return strings.HasPrefix(strings.ToLower(url), "s3://") }

// newBackend is the backend of a remote object's URL.
func newBackend(ctx context.Context, url string, r *Remote) (remote.Backend, error) {
	if isS3(url) {
		return s3src.New(ctx, url, &s3src.Options{Endpoint: r.Endpoint, NoSign: r.NoSign})
	}
	return httpsrc.New(url, &httpsrc.Options{Header: r.Header})
}

// newLister is the lister of a remote folder's URL.
func newLister(ctx context.Context, url string, r *Remote) (remote.Lister, error) {
	if isS3(url) {
		return s3src.NewLister(ctx, url, &s3src.Options{Endpoint: r.Endpoint, NoSign: r.NoSign, PageSize: r.PageSize})
	}
	return httpsrc.NewLister(url, &httpsrc.Options{Header: r.Header})
}

// remoteGroup makes the dataset's group of remote sources: one block
// cache, and the disk cache when asked for (closed with the dataset).
func (d *Dataset) remoteGroup(r *Remote) (*remote.Group, error) {
	var disk *remote.DiskCache
	if r.DiskCache != "" {
		var err error
		if disk, err = remote.OpenDiskCache(r.DiskCache, r.DiskCacheBytes, d.logf); err != nil {
			return nil, err
		}
		d.closers = append(d.closers, disk)
	}
	o := r.options(d.logf)
	o.Disk = disk
	d.group = remote.NewGroup(o)
	return d.group, nil
}
