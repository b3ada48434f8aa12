package s3src

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testserver"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

func TestParseURL(t *testing.T) {
	for in, want := range map[string][2]string{
		"s3://b/k.npz":       {"b", "k.npz"},
		"s3://b/dir/k.npz":   {"b", "dir/k.npz"},
		"s3://b/":            {"b", ""},
		"s3://b":             {"b", ""},
		"s3://b/dir/":        {"b", "dir/"},
		"https://b/k.npz":    {},
		"s3:///k.npz":        {},
		"s3://b/a?b=c/d.npz": {"b", "a?b=c/d.npz"},
	} {
		b, k, err := ParseURL(in)
		if (want == [2]string{}) != (err != nil) || [2]string{b, k} != want && err == nil {
			t.Errorf("ParseURL(%q) = %q, %q, %v", in, b, k, err)
		}
	}
}

func data(n int) []byte {
	r := rand.New(rand.NewPCG(9, 9))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestAgainstVersityGW reads an object back exactly from a real S3
// gateway, pinned to its ETag, and checks what a replaced object, a
// missing one, a missing bucket and wrong credentials give.
func TestAgainstVersityGW(t *testing.T) {
	srv, _ := s3Setup(t, nil)
	srv.Bucket(t, "bkt")
	want := data(3 << 20)
	srv.Put(t, "bkt", "dir/a.npz", want)
	ctx := context.Background()
	open := func(u string, o *Options) (*remote.Source, error) {
		if o == nil {
			o = &Options{Endpoint: srv.Endpoint}
		}
		b, err := New(ctx, u, o)
		if err != nil {
			return nil, err
		}
		s, err := remote.Open(ctx, b, &remote.Options{Backoff: time.Millisecond, BlockSize: 64 << 10, TailBytes: 64 << 10})
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	s, err := open("s3://bkt/dir/a.npz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != int64(len(want)) || s.Object().ETag == "" {
		t.Fatalf("object %+v", s.Object())
	}
	got := make([]byte, len(want))
	for off := 0; off < len(want); off += 200000 {
		end := min(off+200000, len(want))
		if n, err := s.ReadAt(got[off:end], int64(off)); n != end-off || (err != nil && err != io.EOF) {
			t.Fatalf("read at %d: %d, %v", off, n, err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}
	// Replaced: bytes not yet fetched fail, never mix.
	s2, err := open("s3://bkt/dir/a.npz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "bkt", "dir/a.npz", data(3<<20 + 1)[1:])
	if _, err := s2.ReadAt(make([]byte, 10), 2<<20); !errors.Is(err, source.ErrChanged) {
		t.Errorf("read after the object was replaced: %v", err)
	}
	for _, tc := range []struct {
		url  string
		opts *Options
		want string
	}{
		{"s3://bkt/missing.npz", nil, "not found"},
		{"s3://bkt/dir", nil, "s3://bkt/dir is not an object but a prefix"},
		{"s3://nobucket/a.npz", nil, "no such bucket"},
		{"s3://bkt/dir/a.npz", &Options{Endpoint: srv.Endpoint, NoSign: true}, "access denied"},
	} {
		_, err := open(tc.url, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), srv.Secret) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.url, err, tc.want)
		}
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	if _, err := open("s3://bkt/dir/a.npz", nil); err == nil || !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), "credentials: Env") {
		t.Errorf("wrong secret: %v", err)
	}
}

// TestNoCredentials: where the SDK's chain finds no credentials, New says
// so in one line, naming where it looked and how to give some, and marks
// it permanent (not retried).
func TestNoCredentials(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	_, err := New(context.Background(), "s3://bkt/a.npz", &Options{CredentialTimeout: time.Second})
	if err == nil || !remote.IsPermanent(err) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("New without credentials: %v", err)
	}
	for _, want := range []string{"no AWS credentials found", `profile "default"`, "/nonexistent/credentials (absent)", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "--no-sign-request"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %q: %v", want, err)
		}
	}
	if _, err := New(context.Background(), "s3://bkt/a.npz", &Options{NoSign: true}); err != nil {
		t.Errorf("unsigned requests need no credentials: %v", err)
	}
}

// TestUnreachable: a host that does not exist or refuses connections is
// one permanent line; AWS's own host suggests --endpoint.
func TestUnreachable(t *testing.T) {
	aws := (&Client{}).Object("b", "k.npz")
	own := (&Client{endpoint: true}).Object("b", "k.npz")
	for _, tc := range []struct {
		b    *Backend
		err  error
		want string
	}{
		{aws, &net.DNSError{Name: "b.s3.us-east-1.amazonaws.com", IsNotFound: true}, "for an S3-compatible server of your own give --endpoint"},
		{own, &net.DNSError{Name: "minio.lab", IsNotFound: true}, "no such host minio.lab (check --endpoint)"},
		{own, &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, "connection refused"},
	} {
		err := tc.b.explain(context.Background(), fmt.Errorf("operation error S3: GetObject: %w", tc.err), "")
		if err == nil || !remote.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "operation error") {
			t.Errorf("%v: %v, want one permanent line with %q", tc.err, err, tc.want)
		}
	}
}

// s3Setup starts versitygw with the test's credentials in the
// environment, and a client to it.
func s3Setup(t *testing.T, o *Options) (*testserver.S3, *Client) {
	srv := testserver.StartS3(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	oo := Options{Endpoint: srv.Endpoint}
	if o != nil {
		oo.PageSize = o.PageSize
	}
	c, err := NewClient(context.Background(), srv.Endpoint, &oo)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// list is what l lists of dir, in the order it lists it.
func list(ctx context.Context, l *Lister, dir string) (items []remote.Item, err error) {
	err = l.List(ctx, dir, func(it remote.Item) error {
		items = append(items, it)
		return nil
	})
	return items, err
}

// TestListerAgainstVersityGW lists a prefix one level at a time, in
// pages of 2 keys: objects with their size and ETag, sub-prefixes as
// folders, keys that cannot be file names and folder markers left out; a
// bucket alone lists from its root; a missing bucket is one line.
func TestListerAgainstVersityGW(t *testing.T) {
	srv, c := s3Setup(t, &Options{PageSize: 2})
	srv.Bucket(t, "lst")
	keys := []string{"ds/a.npz", "ds/b.npy", "ds/c.txt", "ds/sub/d.npz", "ds/sub/deeper/e.npz", "ds/other/f.npz", "top.npz"}
	for i, k := range keys {
		srv.Put(t, "lst", k, data(100+i))
	}
	ctx := context.Background()
	show := func(items []remote.Item) string {
		var parts []string
		for _, it := range items {
			if it.Dir {
				parts = append(parts, it.Name+"/")
			} else {
				parts = append(parts, fmt.Sprintf("%s:%d", it.Name, it.Size))
				if it.ETag == "" || it.LastModified.IsZero() {
					t.Errorf("%s: no ETag or time in the listing: %+v", it.Name, it)
				}
			}
		}
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct{ prefix, dir, want string }{
		{"ds/", "", "a.npz:100 b.npy:101 c.txt:102 other/ sub/"},
		{"ds/", "sub", "d.npz:103 deeper/"},
		{"ds/", "sub/deeper", "e.npz:104"},
		{"ds/", "nothing", ""},
		{"", "", "ds/ top.npz:106"},
	} {
		items, err := list(ctx, c.Lister("lst", tc.prefix), tc.dir)
		if got := show(items); err != nil || got != tc.want {
			t.Errorf("list %q %q: %q, %v; want %q", tc.prefix, tc.dir, got, err, tc.want)
		}
	}
	// What the listing says is what an opened object is.
	l := c.Lister("lst", "ds/")
	items, _ := list(ctx, l, "")
	for _, head := range []bool{false, true} {
		s, err := remote.Open(ctx, l.Object("a.npz"), &remote.Options{Head: head, TailBytes: 50})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Object().Same(items[0].Object) {
			t.Errorf("opened %+v, listed %+v", s.Object(), items[0].Object)
		}
		got := make([]byte, 100)
		if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, data(100)) {
			t.Errorf("head %v: read back: %v", head, err)
		}
		s.Close()
	}
	if _, err := list(ctx, c.Lister("nobucket", ""), ""); err == nil || !strings.Contains(err.Error(), "no such bucket") || !remote.IsPermanent(err) {
		t.Errorf("listing a missing bucket: %v", err)
	}
	if _, err := NewLister(ctx, "s3://lst/ds", &Options{Endpoint: srv.Endpoint}); err == nil {
		t.Error("NewLister of an object's URL: no error")
	}
}

// TestPutIsConditional: If-None-Match puts only where no object is, so
// of two writers one wins and the other is told; If-Match only over the
// object it names; Sibling names an object beside another.
func TestPutIsConditional(t *testing.T) {
	srv, c := s3Setup(t, nil)
	srv.Bucket(t, "put")
	srv.Put(t, "put", "ds/a.npz", data(10))
	ctx := context.Background()
	side := c.Object("put", "ds/a.npz").Sibling("a.npzidx").(*Backend)
	if side.String() != "s3://put/ds/a.npzidx" {
		t.Fatalf("sibling %s", side)
	}
	put := func(b []byte, cond remote.PutCondition) error {
		return side.Put(ctx, bytes.NewReader(b), int64(len(b)), cond)
	}
	if err := put([]byte("first"), remote.PutCondition{IfNoneMatch: true}); err != nil {
		t.Fatalf("first put: %v", err)
	}
	if err := put([]byte("second"), remote.PutCondition{IfNoneMatch: true}); !errors.Is(err, remote.ErrConflict) {
		t.Errorf("second put where an object is: %v, want ErrConflict", err)
	}
	s, err := remote.Open(ctx, side, nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := s.Object().ETag
	s.Close()
	if err := put([]byte("third"), remote.PutCondition{IfMatch: `"0123"`}); !errors.Is(err, remote.ErrConflict) {
		t.Errorf("put over another ETag: %v, want ErrConflict", err)
	}
	if err := put([]byte("fourth"), remote.PutCondition{IfMatch: etag}); err != nil {
		t.Errorf("put over the ETag seen: %v", err)
	}
	s, err = remote.Open(ctx, side, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make([]byte, s.Size())
	if _, err := s.ReadAt(got, 0); err != nil && err != io.EOF || string(got) != "fourth" {
		t.Errorf("the object holds %q, %v", got, err)
	}
	// A missing sibling is not taken for a prefix (no listing asked).
	if _, err := remote.Open(ctx, c.Object("put", "ds").Sibling("missing.npzidx"), nil); err == nil || strings.Contains(err.Error(), "prefix") {
		t.Errorf("missing sibling: %v", err)
	}
}

// TestCertificateErrorIsFinal: an endpoint whose TLS certificate this
// machine does not trust is refused at once, in one line naming
// SSL_CERT_FILE, and asked nothing again.
func TestCertificateErrorIsFinal(t *testing.T) {
	srv, conns := testserver.StartTLS(t, http.NotFoundHandler(), nil)
	ctx := context.Background()
	b, err := New(ctx, "s3://bkt/a.npz", &Options{Endpoint: srv.URL, NoSign: true})
	if err != nil {
		t.Fatal(err)
	}
	var retries atomic.Int64
	_, err = remote.Open(ctx, b, &remote.Options{Backoff: time.Millisecond, Logf: func(string, ...any) { retries.Add(1) }})
	if err == nil || !remote.IsPermanent(err) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "operation error") {
		t.Fatalf("an untrusted certificate: %v, want one permanent line", err)
	}
	if want := "s3://bkt/a.npz: the server's TLS certificate is issued by itself (it is self-signed), which this machine does not trust: to trust a private CA, set SSL_CERT_FILE"; !strings.Contains(err.Error(), want) {
		t.Errorf("an untrusted certificate: %v, want %q", err, want)
	}
	if conns.Load() != 1 || retries.Load() != 0 {
		t.Errorf("%d connections, %d retries; want 1 and none", conns.Load(), retries.Load())
	}
}

// TestEmptyObject: an empty object, which a server answers a range of
// with the whole (empty) object or with a 416, is said to be empty at
// open, read from its end or from its start.
func TestEmptyObject(t *testing.T) {
	srv, c := s3Setup(t, nil)
	srv.Bucket(t, "emp")
	srv.Put(t, "emp", "empty.npz", nil)
	for _, head := range []bool{false, true} {
		_, err := remote.Open(context.Background(), c.Object("emp", "empty.npz"), &remote.Options{Head: head, Backoff: time.Millisecond})
		if !errors.Is(err, remote.ErrEmpty) || !remote.IsPermanent(err) || err.Error() != "s3://emp/empty.npz: the object is empty (0 bytes): not an archive" {
			t.Errorf("head %v: %v", head, err)
		}
	}
}
