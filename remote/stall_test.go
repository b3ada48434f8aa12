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
// has gone the stall timeout without a byte, and so does one that
// trickles, giving fewer than MinProgress bytes in a stall timeout; one
// that sends a small body slowly, within a stall timeout, is read whole.
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
		case "/trickle":
			for {
				if _, err := w.Write(make([]byte, 10)); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-release:
					return
				case <-time.After(5 * time.Millisecond):
				}
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
	if b, err := get("/trickle", 100*time.Millisecond); !errors.As(err, &se) || se.Got < 0 || int64(len(b)) >= MinProgress {
		t.Errorf("a trickling body: %d bytes, %v, want a StallError of too few bytes", len(b), err)
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
