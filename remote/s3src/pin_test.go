package s3src

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// noETagServer is an S3 server that sends no ETag. With refuse, it
// answers every request with If-Unmodified-Since with a 412, as one that
// compares it with a finer time than its Last-Modified does; else it
// ignores the condition. Its object can be replaced, and may have a
// version.
type noETagServer struct {
	mu      sync.Mutex
	data    []byte
	mod     time.Time
	version string
	refuse  bool
}

func (s *noETagServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, mod, version, refuse := s.data, s.mod, s.version, s.refuse
	s.mu.Unlock()
	if version != "" {
		w.Header().Set("x-amz-version-id", version)
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		return
	}
	if refuse && r.Header.Get("If-Unmodified-Since") != "" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
		return
	}
	r.Header.Del("If-Unmodified-Since")
	http.ServeContent(w, r, "", mod, bytes.NewReader(data))
}

func (s *noETagServer) touch(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mod = s.mod.Add(d)
}

// openNoETag opens the fake server's object.
func openNoETag(t *testing.T, fake *noETagServer) *remote.Source {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c, err := NewClient(ctx, srv.URL, &Options{Endpoint: srv.URL, NoSign: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := remote.Open(ctx, c.Object("bkt", "a.npz"), &remote.Options{BlockSize: 4096, TailBytes: 4096, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if o := s.Object(); o.ETag != "" || !o.LastModified.Equal(fake.mod) || o.Version != fake.version {
		t.Fatalf("opened %+v", o)
	}
	return s
}

// TestPinnedByTimeRefused: a server that sends no ETag and refuses the
// If-Unmodified-Since reads are pinned by is said to have done so, with
// the object said unchanged when it is, or changed when it is, never
// "the archive changed" on the server's word alone.
func TestPinnedByTimeRefused(t *testing.T) {
	fake := &noETagServer{data: data(40000), mod: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), refuse: true}
	s := openNoETag(t, fake)
	_, err := s.ReadAt(make([]byte, 10), 0)
	want := "s3://bkt/a.npz: the server refused a read's condition (HTTP 412 to If-Unmodified-Since: Tue, 04 Mar 2025 05:06:07 GMT, the Last-Modified it sent at open; it sends no ETag to pin reads to), though the object has not changed"
	if err == nil || errors.Is(err, source.ErrChanged) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("unchanged: %v, want %q...", err, want)
	}
	fake.touch(time.Hour)
	_, err = s.ReadAt(make([]byte, 10), 0)
	want = "s3://bkt/a.npz: the archive changed after it was opened (it was 40000 bytes of Tue, 04 Mar 2025 05:06:07 GMT, it is 40000 bytes of Tue, 04 Mar 2025 06:06:07 GMT)"
	if !errors.Is(err, source.ErrChanged) || err.Error() != want {
		t.Errorf("changed: %v, want %q", err, want)
	}
}

// TestPinnedByTimeChecked: without an ETag, each answer's Last-Modified
// is checked against the one seen at open, so a server that ignores
// If-Unmodified-Since never mixes a replaced object's bytes in; an object
// with a version is read by it, with no condition to refuse.
func TestPinnedByTimeChecked(t *testing.T) {
	fake := &noETagServer{data: data(40000), mod: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)}
	s := openNoETag(t, fake)
	if _, err := s.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	fake.touch(time.Second)
	_, err := s.ReadAt(make([]byte, 10), 20000)
	want := "s3://bkt/a.npz: the archive changed after it was opened (Last-Modified Tue, 04 Mar 2025 05:06:08 GMT, was Tue, 04 Mar 2025 05:06:07 GMT)"
	if !errors.Is(err, source.ErrChanged) || err.Error() != want {
		t.Errorf("replaced: %v, want %q", err, want)
	}

	versioned := &noETagServer{data: data(40000), mod: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), version: "v1", refuse: true}
	s = openNoETag(t, versioned)
	got := make([]byte, 100)
	if _, err := s.ReadAt(got, 20000); err != nil || !bytes.Equal(got, data(40000)[20000:20100]) {
		t.Errorf("by its version: %v", err)
	}
}
