package s3src

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// faultyServer is an S3 server of one object, bkt/a.npz with ETag
// "e1", that spoils answers while told to: the total of a range's
// Content-Range one more than the object's size (with the ETag given),
// and a listing's body cut half-way.
type faultyServer struct {
	data  []byte
	spoil atomic.Bool
	etag  atomic.Value // the spoilt answers' ETag
}

func (s *faultyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("list-type") == "2" {
		body := `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><Prefix></Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>a.npz</Key><Size>` + strconv.Itoa(len(s.data)) + `</Size><ETag>"e1"</ETag></Contents></ListBucketResult>`
		if s.spoil.Load() {
			body = body[:len(body)/2]
		}
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, body)
		return
	}
	rng := r.Header.Get("Range")
	if !s.spoil.Load() || strings.HasPrefix(rng, "bytes=-") {
		w.Header().Set("ETag", `"e1"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(s.data))
		return
	}
	var first, last int
	fmt.Sscanf(rng, "bytes=%d-%d", &first, &last)
	w.Header().Set("ETag", s.etag.Load().(string))
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(s.data)+1))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(s.data[first : last+1])
}

// TestFaultsThatMayPass: a range whose Content-Range gives the object
// another size, with the ETag the read is pinned to, and a listing
// whose body breaks off after a 200, are failures that may pass: the
// reads and listings after them succeed. A wrong total with another
// ETag is the object changed.
func TestFaultsThatMayPass(t *testing.T) {
	fake := &faultyServer{data: data(40000)}
	fake.etag.Store(`"e1"`)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	opts := &Options{Endpoint: srv.URL, NoSign: true}
	c, err := NewClient(ctx, srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := remote.Open(ctx, c.Object("bkt", "a.npz"), &remote.Options{BlockSize: 4096, TailBytes: 4096, Backoff: time.Millisecond, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := NewLister(ctx, "s3://bkt/", opts)
	if err != nil {
		t.Fatal(err)
	}

	fake.spoil.Store(true)
	if _, err := s.ReadAt(make([]byte, 10), 0); !errors.Is(err, source.ErrTransient) || errors.Is(err, source.ErrChanged) {
		t.Errorf("a read of wrong totals with the same ETag: %v, want a failure that may pass", err)
	}
	if err := l.List(ctx, "", func(remote.Item) error { return nil }); err == nil || remote.IsPermanent(err) {
		t.Errorf("a listing cut short: %v, want a failure that may pass", err)
	}
	fake.spoil.Store(false)
	got := make([]byte, 10)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, fake.data[:10]) {
		t.Errorf("a read after them: %v", err)
	}
	var items []remote.Item
	if err := l.List(ctx, "", func(it remote.Item) error { items = append(items, it); return nil }); err != nil || len(items) != 1 || items[0].Name != "a.npz" {
		t.Errorf("a listing after them: %v, %v", items, err)
	}

	fake.etag.Store(`"e2"`)
	fake.spoil.Store(true)
	if _, err := s.ReadAt(got, 8192); !errors.Is(err, source.ErrChanged) {
		t.Errorf("a wrong total with another ETag: %v, want the object changed", err)
	}
}
