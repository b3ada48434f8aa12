package httpsrc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// object is what the test server serves, changeable under a lock.
type object struct {
	mu      sync.Mutex
	data    []byte
	etag    string
	modTime time.Time
}

func (o *object) get() ([]byte, string, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.data, o.etag, o.modTime
}

func (o *object) set(data []byte, etag string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.data, o.etag, o.modTime = data, etag, o.modTime.Add(time.Hour)
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// server serves obj with net/http's ServeContent (ranges, If-Match,
// If-Unmodified-Since), after spoil, which may answer instead (true).
func server(t *testing.T, obj *object, spoil func(w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if spoil != nil && spoil(w, r) {
			return
		}
		data, etag, mt := obj.get()
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		http.ServeContent(w, r, "", mt, bytes.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func openURL(t *testing.T, u string, opts *Options) (*remote.Source, error) {
	t.Helper()
	b, err := New(u, opts)
	if err != nil {
		return nil, err
	}
	s, err := remote.Open(context.Background(), b, &remote.Options{BlockSize: 4096, TailBytes: 8192, Backoff: time.Millisecond, StallTimeout: time.Second})
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func TestReadsBackExactly(t *testing.T) {
	for _, tc := range []struct {
		desc string
		etag string
	}{{"pinned by ETag", `"abc"`}, {"pinned by Last-Modified", ""}} {
		data := randomBytes(300000, 1)
		obj := &object{data: data, etag: tc.etag, modTime: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		var mu sync.Mutex
		var pins []string
		srv, _ := server(t, obj, func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			pins = append(pins, r.Header.Get("If-Match")+r.Header.Get("If-Unmodified-Since")+r.Header.Get("If-Range"))
			mu.Unlock()
			if r.Header.Get("Accept-Encoding") != "identity" {
				t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
			}
			return false
		})
		s, err := openURL(t, srv.URL+"/data.npz", nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Size() != int64(len(data)) || (tc.etag != "" && s.Object().ETag != tc.etag) || s.ModTime().IsZero() {
			t.Fatalf("%s: object %+v", tc.desc, s.Object())
		}
		got := make([]byte, len(data))
		for off := 0; off < len(data); off += 7000 {
			end := min(off+7000, len(data))
			if n, err := s.ReadAt(got[off:end], int64(off)); n != end-off || (err != nil && err != io.EOF) {
				t.Fatalf("%s: read at %d: %d, %v", tc.desc, off, n, err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: bytes differ", tc.desc)
		}
		mu.Lock()
		for _, p := range pins[1:] { // the tail request pins nothing
			if p == "" || strings.Contains(p, "If-Range") {
				t.Errorf("%s: a request pinned by %q", tc.desc, p)
			}
		}
		mu.Unlock()
	}
}

func TestChangedObjectFailsReads(t *testing.T) {
	for _, etag := range []string{`"v1"`, ""} {
		obj := &object{data: randomBytes(100000, 2), etag: etag, modTime: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		srv, _ := server(t, obj, nil)
		s, err := openURL(t, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadAt(make([]byte, 100), 0); err != nil {
			t.Fatal(err)
		}
		next := `"v2"`
		if etag == "" {
			next = ""
		}
		obj.set(randomBytes(100000, 3), next)
		if _, err := s.ReadAt(make([]byte, 100), 50000); !errors.Is(err, source.ErrChanged) {
			t.Errorf("etag %q: read after a change: %v", etag, err)
		}
	}
}

// TestMisbehavingServers: answers that are not the bytes asked for are
// errors, never data; a server that ignores ranges is refused at open.
func TestMisbehavingServers(t *testing.T) {
	data := randomBytes(100000, 4)
	obj := &object{data: data, etag: `"x"`}
	var mode atomic.Value
	mode.Store("")
	srv, _ := server(t, obj, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.Header.Get("Range"), "bytes=-") && mode.Load() != "ignore ranges" {
			return false // the tail is served well unless the test says so
		}
		switch mode.Load() {
		case "ignore ranges":
			w.Header().Set("ETag", `"x"`)
			w.Write(data)
		case "wrong range":
			w.Header().Set("Content-Range", "bytes 0-99/100000")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(data[:100])
		case "short body":
			rng := strings.TrimPrefix(r.Header.Get("Range"), "bytes=")
			w.Header().Set("Content-Range", "bytes "+rng+"/100000")
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(data[:100])
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "403":
			w.WriteHeader(http.StatusForbidden)
		default:
			return false
		}
		return true
	})
	mode.Store("ignore ranges")
	if _, err := openURL(t, srv.URL, nil); err == nil || !strings.Contains(err.Error(), "ignores byte ranges") {
		t.Errorf("server ignoring ranges: %v", err)
	}
	mode.Store("")
	s, err := openURL(t, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []string{"ignore ranges", "wrong range", "short body", "503", "403"} {
		mode.Store(m)
		off := int64(i) * 8192
		n, err := s.ReadAt(make([]byte, 10), off)
		if err == nil || n != 0 {
			t.Errorf("%s: %d bytes, %v", m, n, err)
		}
	}
	mode.Store("")
	got := make([]byte, 20000)
	if n, err := s.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, data[:20000]) {
		t.Errorf("after the server mends: %d, %v", n, err)
	}
}

func TestOpenErrorsAreOneClearLine(t *testing.T) {
	obj := &object{data: randomBytes(1000, 5)}
	srv, _ := server(t, obj, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/missing.npz":
			http.NotFound(w, r)
		case "/secret.npz":
			if r.Header.Get("Authorization") != "Bearer s3cr3t" {
				w.WriteHeader(http.StatusUnauthorized)
				return true
			}
			return false
		case "/moved.npz":
			http.Redirect(w, r, "/data.npz?X-Amz-Signature=sig2", http.StatusFound)
		case "/empty.npz":
			w.Header().Set("Content-Range", "bytes */0")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		default:
			return false
		}
		return true
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/x.npz"
	l.Close()
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/missing.npz?X-Amz-Signature=hush", "not found (HTTP 404)"},
		{srv.URL + "/secret.npz?token=hush", "access denied (HTTP 401)"},
		{srv.URL + "/empty.npz", "/empty.npz: the object is empty (0 bytes): not an archive"},
		{closed + "?sig=hush", "connection refused"},
		{"ftp://host/x.npz", "not an http or https URL"},
	} {
		_, err := openURL(t, tc.url, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hush") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q and no query", tc.url, err, tc.want)
		}
	}
	// Headers given are sent; redirects are followed.
	h := http.Header{}
	h.Set("Authorization", "Bearer s3cr3t")
	if _, err := openURL(t, srv.URL+"/secret.npz", &Options{Header: h}); err != nil {
		t.Errorf("with the header: %v", err)
	}
	s, err := openURL(t, srv.URL+"/moved.npz?sig=hush", nil)
	if err != nil || s.Size() != 1000 {
		t.Fatalf("redirect: %v", err)
	}
	if strings.Contains(s.String(), "hush") || strings.Contains(s.Identity(), "hush") {
		t.Errorf("shown as %q, identity %q", s.String(), s.Identity())
	}
}

// TestEmptyObject: an empty object is said to be one at open, from its
// end or its start, however the server answers a range of it: a 416 with
// "bytes */0", a 200 with no body (nginx; Go's file server for a range
// from 0), sent chunked, or Go's file server's 206 of "bytes 0--1/0" for
// a suffix range.
func TestEmptyObject(t *testing.T) {
	srv, _ := server(t, &object{}, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/refused.npz":
			w.Header().Set("Content-Range", "bytes */0")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		case "/chunked.npz":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		default:
			return false
		}
		return true
	})
	for _, name := range []string{"/refused.npz", "/chunked.npz", "/served.npz"} {
		for _, head := range []bool{false, true} {
			b, err := New(srv.URL+name, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = remote.Open(context.Background(), b, &remote.Options{Head: head, Backoff: time.Millisecond})
			want := srv.URL + name + ": the object is empty (0 bytes): not an archive"
			if !errors.Is(err, remote.ErrEmpty) || !remote.IsPermanent(err) || err.Error() != want {
				t.Errorf("%s, head %v: %v, want %q", name, head, err, want)
			}
		}
	}
}

// TestFolderWithoutSlash: a folder's URL given without its trailing "/"
// is said to be a folder, to be given with it, whether the server
// redirects to it (followed or not, to a listing or a refusal) or answers
// with a listing (JSON, or an HTML index); another HTML page is said to
// be one. None is taken for a server that ignores byte ranges.
func TestFolderWithoutSlash(t *testing.T) {
	srv, _ := server(t, &object{data: randomBytes(100, 10)}, func(w http.ResponseWriter, r *http.Request) bool {
		page := func(ctype, body string) {
			w.Header().Set("Content-Type", ctype)
			io.WriteString(w, body)
		}
		switch r.URL.Path {
		case "/ds", "/closed":
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
		case "/ds/":
			page("application/json", `[{"name": "a.npz", "type": "file", "size": 100}]`)
		case "/closed/":
			w.WriteHeader(http.StatusForbidden)
		case "/listed":
			page("application/json; charset=utf-8", `[{"name": "sub", "type": "directory"}]`)
		case "/none":
			page("application/json", "[]")
		case "/indexed":
			page("text/html", "<html>\n<head><TITLE>Index of /indexed/</TITLE></head><body>...</body></html>")
		case "/login.npz":
			page("text/html; charset=utf-8", "<html><head><title>Sign in</title></head></html>")
		default:
			return false
		}
		return true
	})
	noFollow := NewClient()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		path   string
		client *http.Client
	}{{"/ds", nil}, {"/ds", noFollow}, {"/closed", nil}, {"/listed", nil}, {"/none", nil}, {"/indexed", nil}} {
		_, err := openURL(t, srv.URL+tc.path+"?sig=hush", &Options{Client: tc.client})
		u := srv.URL + tc.path
		want := u + " is not an archive but a folder: give it with a trailing / (" + u + "/) to serve it as a folder, or name an archive in it, as " + u + "/NAME.npz"
		if err == nil || err.Error() != want || !remote.IsPermanent(err) {
			t.Errorf("%s (following redirects: %v): %v, want %q", tc.path, tc.client == nil, err, want)
		}
	}
	_, err := openURL(t, srv.URL+"/login.npz", nil)
	if err == nil || !strings.Contains(err.Error(), "/login.npz: the server answered with an HTML page (HTTP 200), not the archive's bytes") {
		t.Errorf("an HTML page: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@host/a/b.npz?X-Amz-Signature=abc#frag": "https://host/a/b.npz",
		"http://host:8080/x.npz":                                "http://host:8080/x.npz",
		"http://user:pw@host/%zz?sig=1":                         "host/%zz",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWrongTotalRetried: an answer whose Content-Range gives the object
// another size, with the ETag the read is pinned to, is the answer's
// fault (a proxy's): the read is tried again and gives the right bytes,
// and a read that meets only such answers fails without calling the
// object changed, so that one after them reads on. With another ETag,
// the object changed.
func TestWrongTotalRetried(t *testing.T) {
	data := randomBytes(100000, 11)
	obj := &object{data: data, etag: `"x"`}
	var spoil atomic.Int64 // answers still to spoil
	var etag atomic.Value
	etag.Store(`"x"`)
	srv, _ := server(t, obj, func(w http.ResponseWriter, r *http.Request) bool {
		rng := strings.TrimPrefix(r.Header.Get("Range"), "bytes=")
		if strings.HasPrefix(rng, "-") || spoil.Add(-1) < 0 {
			return false
		}
		first, last, _ := strings.Cut(rng, "-")
		w.Header().Set("ETag", etag.Load().(string))
		w.Header().Set("Content-Range", "bytes "+first+"-"+last+"/100001")
		w.WriteHeader(http.StatusPartialContent)
		a, _ := strconv.Atoi(first)
		z, _ := strconv.Atoi(last)
		w.Write(data[a : z+1])
		return true
	})
	s, err := openURL(t, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 100)
	spoil.Store(2)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[:100]) {
		t.Errorf("a read meeting two wrong totals: %v", err)
	}
	spoil.Store(100)
	if _, err := s.ReadAt(got, 8192); err == nil || errors.Is(err, source.ErrChanged) || !errors.Is(err, source.ErrTransient) {
		t.Errorf("a read meeting only wrong totals: %v, want a failure that may pass", err)
	}
	spoil.Store(0)
	if _, err := s.ReadAt(got, 8192); err != nil || !bytes.Equal(got, data[8192:8292]) {
		t.Errorf("a read after them: %v", err)
	}
	etag.Store(`"y"`)
	spoil.Store(100)
	if _, err := s.ReadAt(got, 16384); !errors.Is(err, source.ErrChanged) {
		t.Errorf("a wrong total with another ETag: %v, want the object changed", err)
	}
}
