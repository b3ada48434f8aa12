package s3src

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
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
		"s3://b/":            {},
		"s3://b":             {},
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
	srv := testserver.StartS3(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
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
	aws := &Backend{bucket: "b", key: "k.npz"}
	own := &Backend{bucket: "b", key: "k.npz", endpoint: true}
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
