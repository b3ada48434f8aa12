package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The stall rule: a request that goes StallTimeout without a byte (for
// its connection, the headers of its answer, or the next byte of its
// body) is abandoned, with a *StallError, and tried again as any failure
// that may pass. Every request to a server follows it: a Source's tail
// and blocks, a Folder's listings, a sidecar's lookups. It is kept by the
// http.RoundTripper backends send their requests through (NewTransport),
// so that it holds however a backend or its SDK reads an answer.

// StallError is a request abandoned by the stall rule.
type StallError struct{ After time.Duration }

func (e *StallError) Error() string { return fmt.Sprintf("no byte for %v", e.After) }

type stallKey struct{}

// WithStallTimeout returns ctx asking the requests made under it to
// follow the stall rule with d (DefaultStallTimeout when never set).
func WithStallTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, stallKey{}, d)
}

// stallTimeout is the stall timeout ctx asks for.
func stallTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(stallKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultStallTimeout
}

// NewTransport returns base (an http.Transport, say) keeping the stall
// rule for every request sent through it.
func NewTransport(base http.RoundTripper) http.RoundTripper { return stallTransport{base} }

type stallTransport struct{ base http.RoundTripper }

func (t stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d := stallTimeout(req.Context())
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &stallWatch{d: d, cancel: cancel}
	w.timer = time.AfterFunc(d, w.fire)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	w.pause()
	if err != nil {
		cancel(nil)
		return nil, w.cause(err)
	}
	resp.Body = &stallBody{body: resp.Body, w: w}
	return resp, nil
}

// stallWatch cancels a request's context once it goes d without a byte.
type stallWatch struct {
	d      time.Duration
	cancel context.CancelCauseFunc
	timer  *time.Timer

	mu      sync.Mutex
	stalled bool
}

func (w *stallWatch) fire() {
	w.mu.Lock()
	w.stalled = true
	w.mu.Unlock()
	w.cancel(&StallError{After: w.d})
}

// pause stops the clock while the reader is not waiting for a byte.
func (w *stallWatch) pause() { w.timer.Stop() }

// resume starts the clock again for the next byte.
func (w *stallWatch) resume() { w.timer.Reset(w.d) }

// cause is err, or the stall that caused it.
func (w *stallWatch) cause(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stalled && !errors.As(err, new(*StallError)) {
		return &StallError{After: w.d}
	}
	return err
}

// stallBody is an answer's body under the stall rule.
type stallBody struct {
	body io.ReadCloser
	w    *stallWatch
}

func (b *stallBody) Read(p []byte) (int, error) {
	b.w.resume()
	n, err := b.body.Read(p)
	b.w.pause()
	if err != nil && err != io.EOF {
		err = b.w.cause(err)
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.w.pause()
	err := b.body.Close()
	b.w.cancel(nil)
	return err
}

// stallReader keeps the stall rule on a body read outside NewTransport:
// a read that waits d for a byte closes the body, and fails with a
// *StallError.
type stallReader struct {
	body  io.ReadCloser
	d     time.Duration
	timer *time.Timer

	mu      sync.Mutex
	stalled bool
}

func newStallReader(body io.ReadCloser, d time.Duration) *stallReader {
	r := &stallReader{body: body, d: d}
	r.timer = time.AfterFunc(d, r.fire)
	r.timer.Stop()
	return r
}

func (r *stallReader) fire() {
	r.mu.Lock()
	r.stalled = true
	r.mu.Unlock()
	r.body.Close()
}

func (r *stallReader) Read(p []byte) (int, error) {
	r.timer.Reset(r.d)
	n, err := r.body.Read(p)
	r.timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && r.stalled {
		err = &StallError{After: r.d}
	}
	return n, err
}

func (r *stallReader) Close() error {
	r.timer.Stop()
	return r.body.Close()
}
