package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStallRule: a request through NewTransport whose server sends no
// headers, or stops sending its body, fails with a *StallError once it
// has gone the stall timeout without a byte; one that keeps sending,
// however slowly, is read whole.
func TestStallRule(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/silent":
			<-release
		case "/stops":
			w.Write([]byte("first bytes"))
			w.(http.Flusher).Flush()
			<-release
		case "/slow":
			for i := range 5 {
				w.Write([]byte{byte('a' + i)})
				w.(http.Flusher).Flush()
				time.Sleep(20 * time.Millisecond)
			}
		}
	}))
	defer srv.Close()
	defer close(release) // first: the handlers waiting on it end
	client := &http.Client{Transport: NewTransport(http.DefaultTransport)}
	get := func(path string, stall time.Duration) ([]byte, error) {
		ctx := WithStallTimeout(context.Background(), stall)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	var se *StallError
	if _, err := get("/silent", 50*time.Millisecond); !errors.As(err, &se) {
		t.Errorf("a server that sends no headers: %v, want a StallError", err)
	}
	if b, err := get("/stops", 50*time.Millisecond); !errors.As(err, &se) || string(b) != "first bytes" {
		t.Errorf("a body that stops: %q, %v, want a StallError after the first bytes", b, err)
	}
	if b, err := get("/slow", 5*time.Second); err != nil || string(b) != "abcde" {
		t.Errorf("a slow body: %q, %v", b, err)
	}
}

// stallingBody gives one byte, then blocks until closed.
type stallingBody struct {
	sent   bool
	closed chan struct{}
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		p[0] = 'x'
		return 1, nil
	}
	<-b.closed
	return 0, errors.New("read on a closed body")
}

func (b *stallingBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return nil
}

// TestStallReader: a body read outside NewTransport keeps the stall rule
// too: the read that waits closes it and fails with a *StallError.
func TestStallReader(t *testing.T) {
	r := newStallReader(&stallingBody{closed: make(chan struct{})}, 20*time.Millisecond)
	defer r.Close()
	b, err := io.ReadAll(r)
	var se *StallError
	if !errors.As(err, &se) || string(b) != "x" {
		t.Errorf("%q, %v, want a StallError after one byte", b, err)
	}
}
