package httpsrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testserver"
	"github.com/npzfs/npzfs/remote"
)

// listingServer serves folder listings: pages maps a request path to the
// answer (Content-Type, body); other paths are 404. It records the paths
// asked for.
func listingServer(t *testing.T, pages map[string][2]string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		// A listing is asked for whole, as it is, with the user's
		// headers (the tests' lister of /ds/ has one).
		if r.Header.Get("Range") != "" || r.Header.Get("Accept-Encoding") != "identity" || r.Header.Get("Accept") != "application/json" {
			t.Errorf("listing request for %s: Range %q, Accept-Encoding %q, Accept %q", r.URL.Path,
				r.Header.Get("Range"), r.Header.Get("Accept-Encoding"), r.Header.Get("Accept"))
		}
		if strings.HasPrefix(r.URL.Path, "/ds/") && r.Header.Get("Authorization") != "Bearer x" {
			t.Errorf("listing request for %s without the lister's Authorization header", r.URL.Path)
		}
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", p[0])
		w.Write([]byte(p[1]))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

const nginxListing = `[
{ "name":"a b.npz", "type":"file", "mtime":"Wed, 01 Jan 2025 10:00:00 GMT", "size":123 },
{ "name":"sub", "type":"directory", "mtime":"Wed, 01 Jan 2025 10:00:00 GMT" },
{ "name":"link", "type":"other", "mtime":"Wed, 01 Jan 2025 10:00:00 GMT" },
{ "name":"..", "type":"file", "size":1 },
{ "name":"nosize.npz", "type":"file" }
]`

// list is what l lists of dir, in the order it lists it.
func list(ctx context.Context, l *Lister, dir string) (items []remote.Item, err error) {
	err = l.List(ctx, dir, func(it remote.Item) error {
		items = append(items, it)
		return nil
	})
	return items, err
}

func describe(items []remote.Item) string {
	var s []string
	for _, it := range items {
		switch {
		case it.Dir:
			s = append(s, it.Name+"/")
		default:
			s = append(s, it.Name+":"+it.LastModified.UTC().Format(time.DateOnly))
		}
	}
	return strings.Join(s, " ")
}

// TestListerReadsJSONListings: nginx's JSON autoindex, then an
// index.json manifest where the folder's URL gives none; a server with
// neither is refused in one line saying what it must offer.
func TestListerReadsJSONListings(t *testing.T) {
	ctx := context.Background()
	srv, asked := listingServer(t, map[string][2]string{
		"/ds/":                 {"application/json", nginxListing},
		"/ds/sub/":             {"application/json", `[{"name":"c.npz","type":"file","size":5}]`},
		"/man/":                {"text/html", "<html>a listing for people</html>"},
		"/man/index.json":      {"application/octet-stream", `[{"name":"x.npz","type":"file","size":9,"mtime":"2025-02-03T04:05:06Z"},{"name":"deep","type":"directory"}]`},
		"/man/deep/index.json": {"application/json", `[{"name":"y.npz","type":"file","size":1}]`},
		"/none/":               {"text/html", "<html></html>"},
		"/bad/":                {"application/json", "{not json"},
	})
	l, err := NewLister(srv.URL+"/ds/", &Options{Header: http.Header{"Authorization": {"Bearer x"}}})
	if err != nil {
		t.Fatal(err)
	}
	items, err := list(ctx, l, "")
	if got := describe(items); err != nil || got != "a b.npz:2025-01-01 sub/" {
		t.Errorf("nginx listing: %q, %v", got, err)
	}
	if items[0].Size != 123 {
		t.Errorf("size %d", items[0].Size)
	}
	if items, err := list(ctx, l, "sub"); err != nil || describe(items) != "c.npz:0001-01-01" {
		t.Errorf("sub-folder: %v, %v", describe(items), err)
	}
	if b := l.Object("sub/a b.npz").String(); b != srv.URL+"/ds/sub/a%20b.npz" {
		t.Errorf("object URL %s", b)
	}

	m, _ := NewLister(srv.URL+"/man/", nil)
	if items, err := list(ctx, m, ""); err != nil || describe(items) != "x.npz:2025-02-03 deep/" {
		t.Errorf("manifest: %q, %v", describe(items), err)
	}
	if items, err := list(ctx, m, "deep"); err != nil || describe(items) != "y.npz:0001-01-01" {
		t.Errorf("manifest of a sub-folder: %q, %v", describe(items), err)
	}
	// Once a manifest answered, the folders' URLs are not asked again.
	if got := strings.Join(asked(), " "); !strings.HasSuffix(got, "/man/ /man/index.json /man/deep/index.json") {
		t.Errorf("asked: %s", got)
	}

	for _, tc := range []struct{ dir, want string }{
		{"/none/", "the server gives no listing npzfs can read: it must answer the folder's URL with a JSON listing (nginx: autoindex on; autoindex_format json;) or serve index.json"},
		{"/missing/", "gives no listing"},
		{"/bad/", "not a JSON listing"},
	} {
		l, _ := NewLister(srv.URL+tc.dir, nil)
		_, err := list(ctx, l, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !remote.IsPermanent(err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one permanent line with %q", tc.dir, err, tc.want)
		}
	}
	if _, err := NewLister(srv.URL+"/ds", nil); err == nil {
		t.Error("a file's URL taken for a folder")
	}
}

// TestSibling: an object beside another, with the same headers.
func TestSibling(t *testing.T) {
	b, err := New("https://u:p@host/a/b%20c/d.npz?sig=1", &Options{Header: http.Header{"X": {"y"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := b.Sibling("d.npzidx").(*Backend)
	if s.url != "https://u:p@host/a/b%20c/d.npzidx?sig=1" || s.String() != "https://host/a/b%20c/d.npzidx" || s.header.Get("X") != "y" {
		t.Errorf("sibling %q shown %q", s.url, s)
	}
}

// TestListerAgainstNginx: nginx's JSON autoindex lists a folder and its
// sub-folders, and what it lists opens as listed.
func TestListerAgainstNginx(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "ds", "sub dir"), 0o755)
	os.WriteFile(filepath.Join(root, "ds", "a.npz"), randomBytes(5000, 1), 0o644)
	os.WriteFile(filepath.Join(root, "ds", "sub dir", "b c.npz"), randomBytes(7000, 2), 0o644)
	ng := testserver.StartNginx(t, root, "autoindex on;", "autoindex_format json;")
	l, err := NewLister(ng.URL+"/ds/", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	items, err := list(ctx, l, "")
	if err != nil || len(items) != 2 {
		t.Fatalf("%+v, %v", items, err)
	}
	items, err = list(ctx, l, "sub dir")
	if err != nil || len(items) != 1 || items[0].Name != "b c.npz" || items[0].Size != 7000 {
		t.Fatalf("sub-folder: %+v, %v", items, err)
	}
	s, err := remote.Open(ctx, l.Object("sub dir/b c.npz"), &remote.Options{Head: true, TailBytes: 3000, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Object().Same(items[0].Object) {
		t.Errorf("opened %+v, listed %+v", s.Object(), items[0].Object)
	}
	got := make([]byte, 7000)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, randomBytes(7000, 2)) {
		t.Errorf("read back: %v", err)
	}
	if st := s.Stats(); st.Requests != 2 || st.BytesFetched < 7000 {
		t.Errorf("opened with its first 3000 bytes, then read whole: %+v", st)
	}
}

// TestListingReadAsItComes: a listing's entries reach add as they are
// read, and add's error ends it as it is (a listing too large for its
// budget); a listing cut short by the connection is an error that may
// pass, not "not a JSON listing".
func TestListingReadAsItComes(t *testing.T) {
	const entry = `{"name":"x%06d.npz","type":"file","size":1},`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[")
		for i := range 1000 {
			fmt.Fprintf(w, entry, i)
		}
		if r.URL.Path == "/cut/" {
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		fmt.Fprint(w, `{"name":"last.npz","type":"file","size":1}]`)
	}))
	defer srv.Close()
	ctx := context.Background()
	l, _ := NewLister(srv.URL+"/whole/", nil)
	stop := errors.New("enough")
	n := 0
	err := l.List(ctx, "", func(it remote.Item) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Errorf("add's error after %d items: %v", n, err)
	}
	if items, err := list(ctx, l, ""); err != nil || len(items) != 1001 || items[1000].Name != "last.npz" {
		t.Errorf("whole: %d items, %v", len(items), err)
	}
	l, _ = NewLister(srv.URL+"/cut/", nil)
	if _, err := list(ctx, l, ""); err == nil || remote.IsPermanent(err) || strings.Contains(err.Error(), "not a JSON listing") {
		t.Errorf("a listing cut short: %v, want an error that may pass", err)
	}
}
