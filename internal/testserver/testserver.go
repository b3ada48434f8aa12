// Package testserver starts the real servers remote archives are tested
// against, on 127.0.0.1 only, each stopped when its test ends: nginx
// serving a folder, versitygw (an S3 gateway over a folder), and an
// httptest server over TLS. Tests
// skip without them, or fail when NPZFS_REQUIRE_FUSE=1 (scripts/test.sh
// installs both).
package testserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// need skips t, or fails it under NPZFS_REQUIRE_FUSE=1, for a missing
// server program.
func need(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("NPZFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("%s (NPZFS_REQUIRE_FUSE=1)", what)
	}
	t.Skip(what)
}

// freePort finds a loopback port nothing listens on.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs cmd until the test ends, once addr accepts connections.
func start(t testing.TB, cmd *exec.Cmd, addr, logPath string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stop(cmd.Process, false)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			stop(cmd.Process, true)
			<-exited
		}
	})
	// A guard against a server that never comes up, not a timing.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before listening: %s %s", filepath.Base(cmd.Path), out.String(), log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s: %s", filepath.Base(cmd.Path), addr, out.String())
		}
	}
}

// Nginx is nginx serving a folder.
type Nginx struct {
	URL       string // http://127.0.0.1:PORT, the folder's root
	AccessLog string // one line per request: method, URI, status, Range, bytes sent
}

// StartNginx serves root with nginx (Debian's nginx-light) on a free
// loopback port until t ends; directives, if any, go in its server block
// ("autoindex on; autoindex_format json;" lists folders in JSON).
func StartNginx(t testing.TB, root string, directives ...string) *Nginx {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			need(t, "nginx not found (Debian: apt-get install nginx-light)")
		}
	}
	dir := t.TempDir()
	addr := freePort(t)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers would run as nobody, and the test's folders are root's
	}
	conf := fmt.Sprintf(`%s
daemon off;
master_process off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 1024; }
http {
  log_format npzfs '$request_method $uri $status "$http_range" $body_bytes_sent';
  access_log %[2]s/access.log npzfs;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  keepalive_requests 100000;
  server {
    listen %[3]s;
    root %[4]s;
    %[5]s
  }
}
`, user, dir, addr, root, strings.Join(directives, "\n    "))
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, exec.Command(bin, "-c", path, "-p", dir, "-e", filepath.Join(dir, "error.log")), addr, filepath.Join(dir, "error.log"))
	return &Nginx{URL: "http://" + addr, AccessLog: filepath.Join(dir, "access.log")}
}

// Requests reads the access log: one line per request.
func (n *Nginx) Requests() []string {
	b, _ := os.ReadFile(n.AccessLog)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// S3 is versitygw, an S3 gateway over a folder.
type S3 struct {
	Endpoint       string // http://127.0.0.1:PORT
	Access, Secret string
	Client         *s3.Client
}

// Env is the environment that gives npzfs this server's credentials.
func (s *S3) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=us-east-1"}
}

// VersityGW finds the versitygw binary: $NPZFS_VERSITYGW, else on PATH.
func VersityGW() (string, error) {
	if p := os.Getenv("NPZFS_VERSITYGW"); p != "" {
		return p, nil
	}
	return exec.LookPath("versitygw")
}

// StartS3 starts versitygw on a free loopback port until t ends, with a
// fresh folder behind it.
func StartS3(t testing.TB) *S3 {
	t.Helper()
	bin, err := VersityGW()
	if err != nil {
		need(t, "versitygw not found: set NPZFS_VERSITYGW or put it on PATH (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
	}
	dir := t.TempDir()
	addr := freePort(t)
	s := &S3{Endpoint: "http://" + addr, Access: "npzfsaccess", Secret: "npzfssecret0123456789"}
	cmd := exec.Command(bin, "--access", s.Access, "--secret", s.Secret, "--port", addr, "--quiet", "posix", dir)
	start(t, cmd, addr, "")
	s.Client = s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
	})
	return s
}

// Bucket makes a bucket.
func (s *S3) Bucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}

// Put uploads data with PUT, so the object has an ETag.
func (s *S3) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

// StartTLS serves h over TLS on a loopback port until t ends, with cfg
// (httptest's self-signed certificate when nil), and counts the
// connections made to it. Failed handshakes are not logged.
func StartTLS(t testing.TB, h http.Handler, cfg *tls.Config) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	conns := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = cfg
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, conns
}
