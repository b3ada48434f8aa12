package httpsrc

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testserver"
	"github.com/npzfs/npzfs/remote"
)

// testCA is a private certificate authority that signs the test servers'
// certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "npzfs test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

// leaf is a server certificate the CA signs for names (host names and
// addresses), valid from notBefore to notAfter.
func (ca *testCA) leaf(t *testing.T, names []string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// trusting is a client that trusts the CA, with the stall rule as
// NewClient's.
func (ca *testCA) trusting() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: remote.NewTransport(tr)}
}

// tlsServer serves data over TLS with cfg, counting the connections
// made to it and the requests that reached it.
func tlsServer(t *testing.T, cfg *tls.Config, data []byte) (srv *httptest.Server, conns, requests *atomic.Int64) {
	requests = new(atomic.Int64)
	srv, conns = testserver.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	}), cfg)
	return srv, conns, requests
}

// openLogged opens u with the client c, returning the retries logged.
func openLogged(u string, c *http.Client, retries int) (*remote.Source, []string, error) {
	b, err := New(u, &Options{Client: c})
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var logged []string
	s, err := remote.Open(context.Background(), b, &remote.Options{
		TailBytes: 4096, Retries: retries, Backoff: time.Millisecond, StallTimeout: 10 * time.Second,
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(format, args...))
		},
	})
	return s, logged, err
}

// TestCertificateErrorsAreFinal: a server whose certificate fails
// verification is refused at once, in one line saying what is wrong with
// it (an unknown authority's naming SSL_CERT_FILE), and never asked
// again; a certificate the client trusts is served.
func TestCertificateErrorsAreFinal(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	data := randomBytes(10000, 8)
	for _, tc := range []struct {
		what   string
		names  []string
		from   time.Time
		until  time.Time
		client *http.Client
		want   []string
	}{
		{"a private CA, untrusted", []string{"127.0.0.1"}, now.Add(-time.Hour), now.Add(time.Hour), NewClient(),
			[]string{`the server's TLS certificate is issued by "npzfs test CA", an authority this machine does not trust`, "set SSL_CERT_FILE"}},
		{"another host's", []string{"data.example.org"}, now.Add(-time.Hour), now.Add(time.Hour), ca.trusting(),
			[]string{"the server's TLS certificate is for data.example.org, not 127.0.0.1"}},
		{"expired", []string{"127.0.0.1"}, now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), ca.trusting(),
			[]string{"the server's TLS certificate expired on " + now.Add(-24*time.Hour).UTC().Format("2006-01-02")}},
		{"not yet valid", []string{"127.0.0.1"}, now.Add(24 * time.Hour), now.Add(48 * time.Hour), ca.trusting(),
			[]string{"the server's TLS certificate is not valid until " + now.Add(24*time.Hour).UTC().Format("2006-01-02")}},
	} {
		cert := ca.leaf(t, tc.names, tc.from, tc.until)
		srv, conns, requests := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{cert}}, data)
		_, logged, err := openLogged(srv.URL+"/a.npz?sig=hush", tc.client, 3)
		if err == nil || !remote.IsPermanent(err) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "hush") {
			t.Fatalf("%s: %v, want one permanent line", tc.what, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", tc.what, err, w)
			}
		}
		if len(logged) != 0 || conns.Load() != 1 || requests.Load() != 0 {
			t.Errorf("%s: %d connections, %d requests, retries %q; want one connection and no retry", tc.what, conns.Load(), requests.Load(), logged)
		}
	}
	// httptest's certificate signs itself.
	self, _ := testserver.StartTLS(t, http.NotFoundHandler(), nil)
	if _, _, err := openLogged(self.URL+"/a.npz", NewClient(), 3); err == nil || !remote.IsPermanent(err) || !strings.Contains(err.Error(), "is issued by itself (it is self-signed)") {
		t.Errorf("a self-signed certificate: %v", err)
	}
	// A server whose CA is trusted is read.
	srv, _, _ := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, []string{"127.0.0.1"}, now.Add(-time.Hour), now.Add(time.Hour))}}, data)
	s, _, err := openLogged(srv.URL+"/a.npz", ca.trusting(), 3)
	if err != nil {
		t.Fatalf("a trusted certificate: %v", err)
	}
	defer s.Close()
	got := make([]byte, len(data))
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Errorf("a trusted certificate: read back: %v", err)
	}
}

// TestOtherTLSFailuresAreRetried: a TLS handshake that fails for another
// reason than the server's certificate (here the server wants one of the
// client) may pass, so it is tried again.
func TestOtherTLSFailuresAreRetried(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	cfg := &tls.Config{
		Certificates: []tls.Certificate{ca.leaf(t, []string{"127.0.0.1"}, now.Add(-time.Hour), now.Add(time.Hour))},
		ClientAuth:   tls.RequireAnyClientCert,
	}
	srv, conns, _ := tlsServer(t, cfg, randomBytes(100, 9))
	_, logged, err := openLogged(srv.URL+"/a.npz", ca.trusting(), 2)
	if err == nil || remote.IsPermanent(err) || strings.Contains(err.Error(), "TLS certificate") {
		t.Fatalf("a server that wants a client certificate: %v, want a failure that may pass", err)
	}
	if len(logged) != 2 || conns.Load() != 3 {
		t.Errorf("%d connections, retries %q; want 3 and 2", conns.Load(), logged)
	}
}
