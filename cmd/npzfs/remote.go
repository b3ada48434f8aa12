package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/remote/httpsrc"
	"github.com/npzfs/npzfs/remote/s3src"
)

// remoteFlags are the flags of remote archives, taken by mount, ls and
// inspect.
type remoteFlags struct {
	headers     []string
	endpoint    string
	noSign      bool
	diskCache   string
	diskCacheMB int
}

// defaultDiskCacheMB bounds --disk-cache.
const defaultDiskCacheMB = 10 << 10

func (rf *remoteFlags) add(fl *pflag.FlagSet) {
	fl.StringArrayVar(&rf.headers, "header", nil, "for an http(s):// archive: send the header `'NAME: VALUE'` with every request (repeatable; never logged)")
	fl.StringVar(&rf.endpoint, "endpoint", "", "for an s3:// archive: the `URL` of an S3-compatible server (MinIO, Ceph, R2...), buckets addressed by path")
	fl.BoolVar(&rf.noSign, "no-sign-request", false, "for an s3:// archive: send requests unsigned (public buckets)")
	fl.StringVar(&rf.diskCache, "disk-cache", "", "for a remote archive: keep fetched blocks in `DIR` too, so a later mount of the unchanged object does not fetch them again")
	fl.IntVar(&rf.diskCacheMB, "disk-cache-mb", defaultDiskCacheMB, "bound of --disk-cache, in `MiB` (blocks used least recently go first)")
}

// check takes the headers given in the environment (headerEnv) and
// refuses values that cannot work, in one line.
func (rf *remoteFlags) check() error {
	if h := os.Getenv(headerEnv); h != "" {
		rf.headers = append(rf.headers, strings.Split(h, "\n")...)
	}
	if rf.diskCacheMB < 1 {
		return errors.New("--disk-cache-mb must be at least 1")
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
	if u := os.Getenv(sourceEnv); u != "" && isRemote(url) && shown(u) == shown(url) {
		return u
	}
	return url
}

// isRemote reports an archive named by a URL npzfs reads remotely.
func isRemote(s string) bool {
	for _, p := range []string{"http://", "https://", "s3://"} {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// shown is how a source is shown in mount tables, logs and messages: a
// URL without user info or query string.
func shown(src string) string {
	if isRemote(src) && !strings.HasPrefix(strings.ToLower(src), "s3://") {
		return httpsrc.Redact(src)
	}
	return src
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

// remoteSource is a remote archive's source and its disk cache, if any.
type remoteSource struct {
	*remote.Source
	disk *remote.DiskCache
}

func (rs *remoteSource) Close() error {
	err := rs.Source.Close()
	if rs.disk != nil {
		rs.disk.Close()
	}
	return err
}

// openRemote opens a remote archive's source: the tail of the object is
// fetched at once.
func openRemote(ctx context.Context, url string, rf *remoteFlags, cacheBytes int64, logf func(string, ...any)) (*remoteSource, error) {
	url = fromSourceEnv(url)
	var b remote.Backend
	var err error
	if strings.HasPrefix(strings.ToLower(url), "s3://") {
		b, err = s3src.New(ctx, url, &s3src.Options{Endpoint: rf.endpoint, NoSign: rf.noSign})
	} else {
		var h http.Header
		if h, err = parseHeaders(rf.headers); err == nil {
			b, err = httpsrc.New(url, &httpsrc.Options{Header: h})
		}
	}
	if err != nil {
		return nil, err
	}
	rs := &remoteSource{}
	if rf.diskCache != "" {
		if rs.disk, err = remote.OpenDiskCache(rf.diskCache, int64(rf.diskCacheMB)<<20, logf); err != nil {
			return nil, err
		}
	}
	rs.Source, err = remote.Open(ctx, b, &remote.Options{CacheBytes: cacheBytes, Disk: rs.disk, Logf: logf})
	if err != nil {
		if rs.disk != nil {
			rs.disk.Close()
		}
		return nil, err
	}
	return rs, nil
}

// opened is an archive and, for a remote one, its source, closed with it.
type opened struct {
	*npz.Archive
	src io.Closer
}

func (o *opened) Close() error {
	err := o.Archive.Close()
	if o.src != nil {
		o.src.Close()
	}
	return err
}

// openArchive opens what a command line names: a remote archive (by URL;
// a .npy when its path ends so), else the .npz archive at path, or, when
// the file is a .npy (by its magic, whatever its name), that file as an
// archive of one array (npz.OpenNPY).
func openArchive(name string, opts *npz.Options, rf *remoteFlags) (*opened, error) {
	if !isRemote(name) {
		var a *npz.Archive
		var err error
		if kind, _ := sniff(name); kind == kindNPY {
			a, err = npz.OpenNPY(name, opts)
		} else {
			a, err = npz.Open(name, opts)
		}
		if err != nil {
			return nil, err
		}
		return &opened{Archive: a}, nil
	}
	if rf == nil {
		rf = &remoteFlags{}
	}
	var logf func(string, ...any)
	if opts != nil {
		logf = opts.Logf
	}
	src, err := openRemote(context.Background(), name, rf, 0, logf)
	if err != nil {
		return nil, err
	}
	a, err := newRemoteArchive(src.Source, opts)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return &opened{Archive: a, src: src}, nil
}

// newRemoteArchive opens the archive src holds (a bare .npy when its
// name ends so).
func newRemoteArchive(src *remote.Source, opts *npz.Options) (*npz.Archive, error) {
	if base := path.Base(src.String()); strings.HasSuffix(base, ".npy") {
		return npz.NewNPY(src, src.Size(), base, opts)
	}
	return npz.NewReader(src, src.Size(), opts)
}

// daemonArgs are the daemon's arguments: args without --header (given
// in headerEnv instead) and with a URL's secrets replaced (the whole URL
// in sourceEnv), plus what to add to its environment.
func daemonArgs(args []string, archive string, headers []string) (out, env []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--header":
			i++
			continue
		case strings.HasPrefix(a, "--header="):
			continue
		case a == archive && shown(a) != a:
			a = shown(a)
			env = append(env, sourceEnv+"="+archive)
		}
		out = append(out, a)
	}
	if len(headers) > 0 {
		env = append(env, headerEnv+"="+strings.Join(headers, "\n"))
	}
	return out, env
}

// fromDaemonEnv restores in the daemon what daemonArgs moved to its
// environment (the headers remoteFlags.check took already), and clears
// it there.
func fromDaemonEnv(ma *mountArgs) {
	ma.archive = fromSourceEnv(ma.archive)
	os.Unsetenv(headerEnv)
	os.Unsetenv(sourceEnv)
}
