package dataset

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testfiles"
	"github.com/npzfs/npzfs/npy"
)

const corpus = "../npz/testdata/"

// writeNPY writes a small .npy file at path.
func writeNPY(t *testing.T, path string) {
	t.Helper()
	hdr, err := npy.EncodeHeader("<i4", false, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(hdr, 1, 0, 0, 0, 2, 0, 0, 0), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenKinds: Open tells an archive, a .npy file (by its bytes, not
// its name) and a folder apart, and says in one line why it cannot open
// what it cannot.
func TestOpenKinds(t *testing.T) {
	dir := t.TempDir()
	archive := testfiles.Copy(t, corpus+"numpy_savez.npz", dir, "a.npz")
	npyFile := filepath.Join(dir, "grid.npy")
	writeNPY(t, npyFile)
	misnamed := filepath.Join(dir, "grid-really-npy.npz")
	writeNPY(t, misnamed)
	notArchive := filepath.Join(dir, "notes.txt")
	os.WriteFile(notArchive, []byte("hello, not an archive"), 0o644)

	for _, tc := range []struct {
		name   string
		kind   Kind
		lookup string // a name the archive's root, or the folder, holds
	}{
		{archive, Archive, "fortran.npy"},
		{npyFile, NPY, "grid.npy"},
		{misnamed, NPY, "grid-really-npy.npz.npy"},
		{dir, Folder, "a.npz"},
	} {
		d, err := Open(context.Background(), tc.name, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d.Kind() != tc.kind || d.Name() != tc.name {
			t.Errorf("%s: kind %v, name %q", tc.name, d.Kind(), d.Name())
		}
		switch a := d.Archive(); {
		case tc.kind == Folder:
			if _, err := d.Store().Stat(context.Background(), tc.lookup); a != nil || err != nil {
				t.Errorf("%s: Archive %v; the folder's %s: %v", tc.name, a, tc.lookup, err)
			}
		case a == nil || d.Store() != nil || a.Root().Lookup(context.Background(), tc.lookup) == nil:
			t.Errorf("%s: Archive %v, Store %v: %s not found", tc.name, a, d.Store(), tc.lookup)
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.name, err)
		}
	}

	for _, tc := range []struct{ name, msg string }{
		{filepath.Join(dir, "missing.npz"), "does not exist"},
		{notArchive, "is not a readable .npz archive or .npy file"},
		{"htp://example.org/a.npz", `unknown URL scheme "htp://"`},
		{"ftp://user:secret@example.org/a.npz", `unknown URL scheme "ftp://"`},
	} {
		_, err := Open(context.Background(), tc.name, nil)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.msg)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@host/a.npz?X-Amz-Signature=abc": "https://host/a.npz",
		"s3://bucket/key.npz":                            "s3://bucket/key.npz",
		"/data/a.npz":                                    "/data/a.npz",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSetBudgets: a dataset's budgets resized while it is open are what
// its caches keep to, a remote one's block cache too.
func TestSetBudgets(t *testing.T) {
	archive := testfiles.Copy(t, corpus+"numpy_savez.npz", t.TempDir(), "a.npz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "a.npz", time.Unix(1, 0), bytes.NewReader(data))
	}))
	defer srv.Close()
	for _, name := range []string{archive, srv.URL + "/a.npz"} {
		d, err := Open(context.Background(), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.SetBudgets(3<<20, 5<<20, 7<<20)
		st := d.Stats()
		if st.SpanCache.Budget != 3<<20 || d.opts.Archive.Windows.Limit() != 5<<20 {
			t.Errorf("%s: span cache %d, windows %d", name, st.SpanCache.Budget, d.opts.Archive.Windows.Limit())
		}
		if d.Remote() && d.group.Cache().Max() != 7<<20 {
			t.Errorf("%s: block cache %d", name, d.group.Cache().Max())
		}
		d.Close()
	}
}
