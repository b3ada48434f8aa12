package dataset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

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
	case IsRemote(name) && !strings.HasPrefix(strings.ToLower(name), "s3://"):
		return httpsrc.Redact(name)
	case strings.Contains(name, "://"):
		if u, err := url.Parse(name); err == nil && u.Scheme != "" {
			u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
			return u.String()
		}
	}
	return name
}

// openRemote opens a remote archive, fetching the tail of the object.
func (d *Dataset) openRemote(ctx context.Context, url string, o *Options) error {
	d.name, d.remote = Redact(url), true
	src, err := openSource(ctx, url, &o.Remote, d.logf)
	if err != nil {
		return err
	}
	d.src = src
	d.closers = append(d.closers, src)
	a, err := npz.New(src, src.Size(), path.Base(src.String()), &o.Archive)
	if err != nil {
		var fe *npz.FormatError
		if errors.As(err, &fe) {
			return fmt.Errorf("%s is not a readable .npz archive or .npy file (%v)", src, fe)
		}
		return fmt.Errorf("%s: %w", src, err)
	}
	d.setArchive(a)
	return nil
}

// source is a remote object's source and its disk cache, if any.
type source struct {
	*remote.Source
	disk *remote.DiskCache
}

func (s *source) Close() error {
	err := s.Source.Close()
	if s.disk != nil {
		s.disk.Close()
	}
	return err
}

// openSource opens a remote object's source: its tail is fetched at once.
func openSource(ctx context.Context, url string, r *Remote, logf func(string, ...any)) (*source, error) {
	var b remote.Backend
	var err error
	if strings.HasPrefix(strings.ToLower(url), "s3://") {
		b, err = s3src.New(ctx, url, &s3src.Options{Endpoint: r.Endpoint, NoSign: r.NoSign})
	} else {
		b, err = httpsrc.New(url, &httpsrc.Options{Header: r.Header})
	}
	if err != nil {
		return nil, err
	}
	s := &source{}
	if r.DiskCache != "" {
		if s.disk, err = remote.OpenDiskCache(r.DiskCache, r.DiskCacheBytes, logf); err != nil {
			return nil, err
		}
	}
	s.Source, err = remote.Open(ctx, b, &remote.Options{CacheBytes: r.CacheBytes, Disk: s.disk, Logf: logf})
	if err != nil {
		if s.disk != nil {
			s.disk.Close()
		}
		return nil, err
	}
	return s, nil
}
