//go:build linux

package integration

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testserver"
)

// TestRemoteTLS: an https:// archive whose server's certificate this
// machine does not trust fails at once, in one line naming SSL_CERT_FILE,
// after one connection; with SSL_CERT_FILE naming the certificate, it is
// read as the local archive is.
func TestRemoteTLS(t *testing.T) {
	data, err := os.ReadFile("../examples/demo.npz")
	if err != nil {
		t.Fatal(err)
	}
	srv, conns := testserver.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "demo.npz", time.Unix(1700000000, 0), bytes.NewReader(data))
	}), nil)
	url := srv.URL + "/demo.npz"

	t.Setenv("SSL_CERT_FILE", "")
	r := npzfs(t, "ls", url)
	oneLine(t, "an untrusted certificate", r, 1)
	if !strings.Contains(r.stderr, "the server's TLS certificate is issued by itself (it is self-signed)") || !strings.Contains(r.stderr, "set SSL_CERT_FILE") {
		t.Errorf("an untrusted certificate: %q", r.stderr)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("an untrusted certificate: %d connections, want 1 (no retry)", n)
	}

	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", pemFile)
	want := npzfs(t, "ls", "../examples/demo.npz")
	got := npzfs(t, "ls", url)
	if got.code != 0 || want.code != 0 || got.stdout != want.stdout {
		t.Errorf("trusted through SSL_CERT_FILE: exit %d, %q\n%s\nwant\n%s", got.code, got.stderr, got.stdout, want.stdout)
	}
}
