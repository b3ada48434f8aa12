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
// body), or whose body gives fewer than MinProgress bytes in a
// StallTimeout, is abandoned, with a *StallError, and tried again as any
// failure that may pass: a server that trickles (a few bytes a second,
// never silent long) holds a request no longer than one that is silent.
// Every request to a server follows it: a Source's tail and blocks, a
// Folder's listings, a sidecar's lookups. It is kept by the
// http.RoundTripper backends send their requests through (NewTransport),
// so that it holds however a backend or its SDK reads an answer.

// MinProgress is the least a body must give in a stall timeout: 16 KiB,
// under 1 KiB a second at the default timeout.
const MinProgress = 16 << 10

// StallError is a request abandoned by the stall rule.
type StallError struct {
	After time.Duration
	Got   int64 // bytes in the last After, when that was too few; -1 for none
}

func (e *StallError) Error() string {
	if e.Got < 0 {
		return fmt.Sprintf("no byte for %v", e.After)
	}
	return fmt.Sprintf("only %d bytes in %v", e.Got, e.After)
}

// progress follows a body's bytes over windows of the stall timeout.
type progress struct {
	since time.Time // the window's start
	got   int64     // bytes in it
}

// note adds n bytes read now, and returns the stall when the window
// just ended with too few.
func (p *progress) note(n int, d time.Duration) *StallError {
	now := time.Now()
	if p.since.IsZero() {
		p.since = now
	}
	p.got += int64(n)
	if now.Sub(p.since) < d {
		return nil
	}
	if p.got < MinProgress {
		return &StallError{After: d, Got: p.got}
	}
	p.since, p.got = now, 0
	return nil
}

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

	mu  sync.Mutex
	why *StallError // set once stalled
}

func (w *stallWatch) fire() { w.stall(&StallError{After: w.d, Got: -1}) }

// stall ends the request with why.
func (w *stallWatch) stall(why *StallError) {
	w.mu.Lock()
	if w.why == nil {
		w.why = why
	}
	w.mu.Unlock()
	w.cancel(why)
}

// pause stops the clock while the reader is not waiting for a byte.
func (w *stallWatch) pause() { w.timer.Stop() }

// resume starts the clock again for the next byte.
func (w *stallWatch) resume() { w.timer.Reset(w.d) }

// cause is err, or the stall that caused it.
func (w *stallWatch) cause(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why != nil && !errors.As(err, new(*StallError)) {
		return w.why
	}
	return err
}

// stallBody is an answer's body under the stall rule.
type stallBody struct {
	body io.ReadCloser
	w    *stallWatch
	p    progress
}

func (b *stallBody) Read(p []byte) (int, error) {
	b.w.resume()
	n, err := b.body.Read(p)
	b.w.pause()
	if why := b.p.note(n, b.w.d); why != nil && err == nil {
		b.w.stall(why)
		return n, why
	}
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
	p     progress

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
	if why := r.p.note(n, r.d); why != nil && err == nil {
		return n, why
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && r.stalled {
		err = &StallError{After: r.d, Got: -1}
	}
	return n, err
}

func (r *stallReader) Close() error {
	r.timer.Stop()
	return r.body.Close()
}
