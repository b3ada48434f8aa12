package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/remote"
)

// remoteFlags are the flags of remote archives, taken by mount, ls and
// inspect.
type remoteFlags struct {
	headers     []string
	endpoint    string
	noSign      bool
	diskCache   string
	diskCacheMB int
	timeout     time.Duration
	stall       time.Duration
}

// defaultDiskCacheMB bounds --disk-cache.
const defaultDiskCacheMB = 10 << 10

func (rf *remoteFlags) add(fl *pflag.FlagSet) {
	fl.StringArrayVar(&rf.headers, "header", nil, "for an http(s):// archive: send the header `'NAME: VALUE'` with every request (repeatable; never logged)")
	fl.StringVar(&rf.endpoint, "endpoint", "", "for an s3:// archive: the `URL` of an S3-compatible server (MinIO, Ceph, R2...), buckets addressed by path")
	fl.BoolVar(&rf.noSign, "no-sign-request", false, "for an s3:// archive: send requests unsigned (public buckets)")
	fl.StringVar(&rf.diskCache, "disk-cache", "", "for a remote archive: keep fetched blocks in `DIR` too, so a later mount of the unchanged object does not fetch them again")
	fl.IntVar(&rf.diskCacheMB, "disk-cache-mb", defaultDiskCacheMB, "bound of --disk-cache, in `MiB` (blocks used least recently go first)")
	fl.DurationVar(&rf.timeout, "remote-timeout", remote.DefaultReadTimeout, "for a remote archive: give a request up after `TIME` (a duration: 90s, 5m), its retries included (the read that waits for it fails: EIO); 0 is the default")
	fl.DurationVar(&rf.stall, "stall-timeout", remote.DefaultStallTimeout, "for a remote archive: try a request again when it goes `TIME` without a byte; 0 is the default")
}

// check takes the headers given in the environment (headerEnv) and
// refuses values that cannot work, in one line.
func (rf *remoteFlags) check() error {
	if h := os.Getenv(headerEnv); h != "" {
		rf.headers = append(rf.headers, strings.Split(h, "\n")...)
	}
	if err := checkSize("disk-cache-mb", rf.diskCacheMB); err != nil {
		return err
	}
	switch {
	case rf.timeout < 0:
		return errors.New("--remote-timeout must not be negative")
	case rf.stall < 0:
		return errors.New("--stall-timeout must not be negative")
	}
	if rf.diskCache != "" {
		abs, err := filepath.Abs(rf.diskCache)
		if err != nil {
			return fmt.Errorf("--disk-cache: %v", err)
		}
		rf.diskCache = abs
	}
	return nil
}

// headerEnv holds headers, one a line, taken as if given with --header,
// so that they need not be in a command line, which every user can read:
// npzfs mount passes its --header values to its daemon so, and the
// Python package its header= argument.
const headerEnv = "NPZFS_HEADERS"

// sourceEnv holds a remote archive's whole URL when it has a query string
// or user info (a presigned URL's signature), for the same reason: the
// command line then has the URL as shown, without them. npzfs mount
// passes such a URL to its daemon so.
const sourceEnv = "NPZFS_SOURCE_URL"

// fromSourceEnv is the URL sourceEnv holds, if url shows as it does
// (url is its shown form, or another spelling of it), else url.
func fromSourceEnv(url string) string {
	if u := os.Getenv(sourceEnv); u != "" && dataset.IsRemote(url) && dataset.Redact(u) == dataset.Redact(url) {
		return u
	}
	return url
}

// parseHeaders turns NAME: VALUE strings into a header; an error names
// the header, never its value.
func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("--header %q...: want 'NAME: VALUE'", name)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	return h, nil
}

// options are the dataset options these flags make, with cacheBytes of
// memory for fetched blocks (0: remote's default).
func (rf *remoteFlags) options(cacheBytes int64) (dataset.Remote, error) {
	if rf == nil {
		return dataset.Remote{CacheBytes: cacheBytes}, nil
	}
	h, err := parseHeaders(rf.headers)
	if err != nil {
		return dataset.Remote{}, err
	}
	return dataset.Remote{
		Header:         h,
		Endpoint:       rf.endpoint,
		NoSign:         rf.noSign,
		CacheBytes:     cacheBytes,
		DiskCache:      rf.diskCache,
		DiskCacheBytes: int64(rf.diskCacheMB) << 20,
		Timeout:        rf.timeout,
		StallTimeout:   rf.stall,
	}, nil
}

// openArchive opens what ls and inspect are given: an archive or a .npy
// file, local or remote (dataset.Open), not a folder.
func openArchive(ctx context.Context, name string, rf *remoteFlags) (*dataset.Dataset, error) {
	name = fromSourceEnv(name)
	ro, err := rf.options(0)
	if err != nil {
		return nil, err
	}
	d, err := dataset.Open(ctx, name, &dataset.Options{Remote: ro})
	if err != nil {
		return nil, err
	}
	if d.Kind() == dataset.Folder {
		d.Close()
		return nil, fmt.Errorf("%s is a folder: give an archive in it, as %sNAME.npz", d.Name(), strings.TrimSuffix(d.Name(), "/")+"/")
	}
	return d, nil
}
