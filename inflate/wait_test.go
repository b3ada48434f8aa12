package inflate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"
	"testing"
)

// Every wait in a reader ends when the waiting read's context is done,
// and leaves the others waiting, and the work they wait for, as they
// were. These tests hold the work with a gate or a hook, see each read
// start waiting through the wait hook, cancel one, and need it to
// return (a test that never ends fails by its timeout: nothing is
// timed), then let the work go on and check the others' bytes.

// ctxGate serves a compressed stream, holding every read that reaches
// past limit until open is closed or the read's context is done;
// blocked is told (if it has room) of each read it holds.
type ctxGate struct {
	data    []byte
	limit   int64
	open    chan struct{}
	blocked chan int64
}

func newCtxGate(data []byte, limit int64) *ctxGate {
	return &ctxGate{data: data, limit: limit, open: make(chan struct{}), blocked: make(chan int64, 64)}
}

func (g *ctxGate) ReadAt(p []byte, off int64) (int, error) {
	return g.ReadAtContext(context.Background(), p, off)
}

func (g *ctxGate) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off+int64(len(p)) > g.limit {
		select {
		case <-g.open:
		default:
			select {
			case g.blocked <- off:
			default:
			}
			select {
			case <-g.open:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	return bytes.NewReader(g.data).ReadAt(p, off)
}

// waits is a wait hook that tells ch of each wait for what it is given,
// while ch has room (the waits after those a test looks for are not
// told).
func waits(ch chan<- struct{}, what waitFor) *testHooks {
	return &testHooks{wait: func(w waitFor) {
		if w == what {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}}
}

// readAsync reads n bytes at off with ctx in a goroutine, and sends
// what became of it: nil if it read data's bytes.
func readAsync(ctx context.Context, r *ReaderAt, data []byte, off int64, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		p := make([]byte, n)
		k, err := r.ReadAtContext(ctx, p, off)
		switch {
		case err == io.EOF && off+int64(k) == int64(len(data)):
			err = nil
		case err != nil:
		case !bytes.Equal(p[:k], data[off:off+int64(k)]):
			err = fmt.Errorf("read at %d: wrong bytes", off)
		}
		done <- err
	}()
	return done
}

// cancelWaiting reads n bytes at off with a context it cancels once the
// read waits (waiting is told), and needs the read to return the
// cancellation.
func cancelWaiting(t *testing.T, r *ReaderAt, data []byte, off int64, n int, waiting <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := readAsync(ctx, r, data, off, n)
	<-waiting
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read at %d: %v", off, err)
	}
}

// waitReads needs the reads of readAsync to have read right.
func waitReads(t *testing.T, reads ...<-chan error) {
	t.Helper()
	for _, done := range reads {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// spanRefs is how many hold the span cached at start.
func spanRefs(r *ReaderAt, start int64) int {
	c := r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.items[cacheKey{r.id, start}]; s != nil {
		return s.refs
	}
	return -1
}

// gatedSpan is an indexed reader of data in spans of 64 KiB, whose
// source holds the reads of span k, at off (100 bytes into it), and
// whose waits for spans are told to waiting.
func gatedSpan(t *testing.T, data []byte, k int64) (r *ReaderAt, g *ctxGate, waiting chan struct{}, off int64) {
	comp := deflate(t, data, 6)
	g = newCtxGate(comp, int64(len(comp)))
	waiting = make(chan struct{}, 4)
	const span = 64 << 10
	r = NewReaderAt(g, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: span, Cache: NewCache(4 << 20), test: waits(waiting, forSpan)})
	if err := r.IndexAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	off = k*span + 100
	cp, _, _ := r.ix.spanOf(off, r.size, 8*r.csize)
	g.limit = cp.compStart() >> 3
	return r, g, waiting, off
}

// TestCancelWaitForSpan: a read waiting for a span another read
// inflates returns at its cancellation; the span goes on being inflated
// for the read inflating it and one waiting after, which both get it,
// and no hold on it is left behind.
func TestCancelWaitForSpan(t *testing.T) {
	data := noisyFloat32(2<<20, 51)
	r, g, waiting, off := gatedSpan(t, data, 20)
	defer r.Release()
	first := readAsync(context.Background(), r, data, off, 4000)
	<-g.blocked
	cancelWaiting(t, r, data, off+5000, 100, waiting)
	last := readAsync(context.Background(), r, data, off+6000, 100)
	<-waiting
	close(g.open)
	waitReads(t, first, last)
	if n := spanRefs(r, off-100); n != 1 {
		t.Fatalf("the span is held %d times, want once (by the cache)", n)
	}
}

// TestCancelSpanInflating: a read inflating a span that others wait for
// returns at its cancellation, and one of the others inflates the span.
func TestCancelSpanInflating(t *testing.T) {
	data := noisyFloat32(2<<20, 52)
	r, g, waiting, off := gatedSpan(t, data, 10)
	defer r.Release()
	ctx, cancel := context.WithCancel(context.Background())
	inflating := readAsync(ctx, r, data, off, 4000)
	<-g.blocked
	other := readAsync(context.Background(), r, data, off+200, 4000)
	<-waiting
	cancel()
	if err := <-inflating; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	<-g.blocked // the other read inflates the span now
	close(g.open)
	waitReads(t, other)
}

// TestCancelWaitForTurn: a read waiting for the turn at growing the
// index, which a deeper read holds, returns at its cancellation; the
// read holding it, and one waiting for it after, get their bytes.
func TestCancelWaitForTurn(t *testing.T) {
	data := noisyFloat32(4<<20, 53)
	comp := deflate(t, data, 6)
	g := newCtxGate(comp, int64(len(comp))/2)
	waiting := make(chan struct{}, 4)
	r := NewReaderAt(g, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 128 << 10, test: waits(waiting, forTurn)})
	defer r.Release()
	deep := int64(len(data)) - 5000
	first := readAsync(context.Background(), r, data, deep, 4000)
	<-g.blocked // it has the turn
	cancelWaiting(t, r, data, deep-1<<20, 100, waiting)
	last := readAsync(context.Background(), r, data, deep+4000, 1000)
	<-waiting
	close(g.open)
	waitReads(t, first, last)
	readWhole(t, r, data)
}

// heldSpan is the span of heldPacking's readers.
const heldSpan = 64 << 10

// heldPacking is a reader of data in spans of 64 KiB that keeps no span
// in its cache (reads inflate), indexed up to span 2, whose window 1 is
// packed once hold is closed, and whose waits for windows from then on
// are told to waiting.
func heldPacking(t *testing.T, data []byte) (r *ReaderAt, hold, waiting chan struct{}) {
	comp := deflate(t, data, 6)
	hold, waiting = make(chan struct{}), make(chan struct{}, 4)
	var armed atomic.Bool
	hooks := &testHooks{
		pack: func(seq int64) {
			if seq == 1 {
				<-hold
			}
		},
		wait: func(w waitFor) {
			if w == forWindow && armed.Load() {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
		},
	}
	r = NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: heldSpan, Cache: NewCache(1024), test: hooks})
	// Window 0 is packed before span 1 is recorded, window 1 is held.
	if err := r.IndexTo(context.Background(), 2*heldSpan-1); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	return r, hold, waiting
}

// TestCancelWaitForWindow: a read waiting for a window being packed
// (to inflate the span after it, or, growing the index, to pack the
// next) returns at its cancellation; the window is packed, and a read
// after it waiting for it too gets its bytes.
func TestCancelWaitForWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  int64
	}{
		{"inflating span 1", heldSpan + 100},
		{"growing past span 2", 3*heldSpan + 100}, // packs window 2 once window 1 is
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := mixed(256<<10, 54)
			r, hold, waiting := heldPacking(t, data)
			cancelWaiting(t, r, data, tc.off, 1000, waiting)
			last := readAsync(context.Background(), r, data, tc.off+2000, 1000)
			<-waiting
			close(hold)
			waitReads(t, last)
			readWhole(t, r, data)
		})
	}
}

// TestCancelWaitForRun: a read whose span ends at a chunk's start waits
// for a helper's run from there, and returns at its cancellation; the
// run goes on, and a read waiting for it after gets its bytes, with the
// run spliced in.
func TestCancelWaitForRun(t *testing.T) {
	data := noisyFloat32(3<<20, 55)
	comp := deflate(t, data, 6)
	g := newCtxGate(comp, int64(len(comp))*6/10) // the helper's run waits here
	waiting := make(chan struct{}, 4)
	r := NewReaderAt(g, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10, Cache: NewCache(8 << 20), Helpers: 1, HelperBudget: NewHelperBudget(1), test: waits(waiting, forRun)})
	r.front.helpChunk = int64(len(comp)) / 2
	defer r.Release()
	deep := int64(len(data)) - 1000
	cancelWaiting(t, r, data, deep, 1000, waiting)
	last := readAsync(context.Background(), r, data, deep, 1000)
	<-waiting
	close(g.open)
	waitReads(t, last)
	if r.front.helpSplices.Load() != 1 {
		t.Fatalf("%d runs spliced in", r.front.helpSplices.Load())
	}
	readWhole(t, r, data)
}

// TestCancelWaitForStart: waiting for a chunk's start that another
// goroutine is finding ends when the waiter's context is done; the
// start is found, and given to whoever asks after.
func TestCancelWaitForStart(t *testing.T) {
	data := noisyFloat32(3<<20, 56)
	comp := deflate(t, data, 6)
	hold, found := make(chan struct{}), make(chan struct{})
	waiting := make(chan struct{}, 4)
	hooks := waits(waiting, forStart)
	hooks.start = func(i int, s *chunkStart) {
		close(found)
		<-hold
	}
	s := &stream{src: bytes.NewReader(comp), csize: int64(len(comp)), size: int64(len(data)),
		crc: crc32.ChecksumIEEE(data), span: 64 << 10, cache: NewCache(1 << 20), hooks: hooks}
	p := newPass(s, context.Background(), 3, checkpoint{state: stHeader})
	finder := make(chan *chunkStart, 1)
	go func() {
		st, _ := p.start(context.Background(), &passWorker{}, 1)
		finder <- st
	}()
	<-found
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := p.start(ctx, &passWorker{}, 1)
		cancelled <- err
	}()
	<-waiting
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait for a start: %v", err)
	}
	close(hold)
	st, err := p.start(context.Background(), &passWorker{}, 1)
	if want := <-finder; err != nil || st != want || !st.ok {
		t.Fatalf("the start after: %v, %v, found %v", st, err, want)
	}
}
