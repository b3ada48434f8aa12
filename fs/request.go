//go:build linux

package fs

import (
	"context"
	"sync"
	"time"
)

// RequestTimeout bounds how long the tree may take over one request:
// past it the request's context ends (context.DeadlineExceeded), and
// what the tree started for it gives up and answers EIO. It is a last
// resort above the bounds of what may block (a remote fetch is given up
// after 2 minutes, a stalled one is tried again after 20 s): a request
// that reaches it is a request that something below forgot to bound.
const RequestTimeout = 3 * time.Minute

// request is the context of one FUSE request: done when the kernel
// interrupts it (FUSE_INTERRUPT closes go-fuse's cancel channel), or at
// its deadline, or when the request has been answered (end). Most
// requests never block and never ask for Done: the timer and the
// goroutine that watch for the interrupt are made only when something
// does, so a request costs no more than reading the clock.
type request struct {
	cancel   <-chan struct{} // go-fuse's; nil in tests
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error
	timer *time.Timer
	ended bool
}

var _ context.Context = (*request)(nil)

// newRequest is the context of a request go-fuse gives cancel for.
func newRequest(cancel <-chan struct{}, timeout time.Duration) *request {
	return &request{cancel: cancel, deadline: time.Now().Add(timeout)}
}

func (r *request) Deadline() (time.Time, bool) { return r.deadline, true }

func (r *request) Value(any) any { return nil }

// Done arms the request's watch the first time it is asked for: a timer
// for the deadline, and a goroutine waiting for the interrupt.
func (r *request) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return r.done
	}
	r.done = make(chan struct{})
	switch err := r.now(); {
	case err != nil:
		r.finishLocked(err)
	case r.ended:
		r.finishLocked(context.Canceled)
	default:
		r.timer = time.AfterFunc(time.Until(r.deadline), func() { r.finish(context.DeadlineExceeded) })
		if r.cancel != nil {
			go r.watch(r.done)
		}
	}
	return r.done
}

// watch ends the request when the kernel interrupts it, until it is
// done some other way.
func (r *request) watch(done <-chan struct{}) {
	select {
	case <-r.cancel:
		r.finish(context.Canceled)
	case <-done:
	}
}

// now is the request's error as of now, from the interrupt and the
// clock: what Err says before anything armed the watch.
func (r *request) now() error {
	select {
	case <-r.cancel:
		return context.Canceled
	default:
	}
	if !time.Now().Before(r.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (r *request) finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finishLocked(err)
}

// finishLocked ends the armed context with err, once.
func (r *request) finishLocked(err error) {
	if r.err != nil {
		return
	}
	r.err = err
	if r.timer != nil {
		r.timer.Stop()
	}
	close(r.done)
}

func (r *request) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.done != nil:
		return r.err
	case r.ended:
		return context.Canceled
	}
	return r.now()
}

// end is called once the request is answered: a watch armed for it
// stops, and whatever still holds the context sees it done.
func (r *request) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.done != nil {
		r.finishLocked(context.Canceled)
	}
}
