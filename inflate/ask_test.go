package inflate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/source"
)

// scriptedSource is an IndexSource whose answer to its nth asking
// (from 1) is answer's.
type scriptedSource struct {
	answer func(ctx context.Context, n int64) (io.ReaderAt, int64, error)
	asked  atomic.Int64
}

func (s *scriptedSource) OpenIndex(ctx context.Context) (io.ReaderAt, int64, error) {
	return s.answer(ctx, s.asked.Add(1))
}

// testClock is a clock that moves when a test moves it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) time() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// askedReader is a reader of data in spans of 128 KiB whose saved index
// is asked of src, on clock.
func askedReader(t *testing.T, data []byte, src IndexSource, hooks *testHooks) *ReaderAt {
	comp := deflate(t, data, 6)
	return NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 128 << 10, Index: src, test: hooks})
}

// savedIndex is the complete index of data in spans of 128 KiB.
func savedIndex(t *testing.T, data []byte) []byte {
	_, idx := indexed(t, data, deflate(t, data, 6), &Options{SpanSize: 128 << 10})
	return idx
}

// TestIndexSourceRetried: an IndexSource that fails is asked again by a
// read needing the index to grow, no sooner than a second after its
// failure, then two seconds after the next; reads meanwhile inflate from
// the stream, and the index is loaded once the source gives it.
func TestIndexSourceRetried(t *testing.T) {
	data := mixed(4<<20, 61)
	idx := savedIndex(t, data)
	src := &scriptedSource{answer: func(_ context.Context, n int64) (io.ReaderAt, int64, error) {
		if n < 3 {
			return nil, 0, source.Transient(errors.New("503 Service Unavailable"))
		}
		return bytes.NewReader(idx), int64(len(idx)), nil
	}}
	clock := &testClock{}
	r := askedReader(t, data, src, &testHooks{clock: clock.time})
	const span = 128 << 10
	for i, step := range []struct {
		wait  time.Duration // before the read
		asked int64         // after it
	}{
		{0, 1}, {0, 1}, {time.Second - 1, 1}, {1, 2}, {time.Second, 2}, {time.Second, 3},
	} {
		clock.advance(step.wait)
		checkRead(t, r, data, int64(2*i+2)*span+10, 1000)
		if got := src.asked.Load(); got != step.asked || r.ix.isLoaded() != (step.asked == 3) {
			t.Fatalf("read %d: asked %d times, want %d; loaded %v", i, got, step.asked, r.ix.isLoaded())
		}
	}
	checkReads(t, r, data, 61)
	if p := r.Progress(); !p.Loaded || p.Dropped != nil {
		t.Fatalf("progress %+v", p)
	}
}

// TestIndexSourceNone: an IndexSource that has no index is asked once.
func TestIndexSourceNone(t *testing.T) {
	data := mixed(2<<20, 62)
	src := &scriptedSource{answer: func(context.Context, int64) (io.ReaderAt, int64, error) {
		return nil, 0, fmt.Errorf("no sidecar: %w", fs.ErrNotExist)
	}}
	clock := &testClock{}
	r := askedReader(t, data, src, &testHooks{clock: clock.time})
	for k := int64(2); k < 16; k += 2 {
		clock.advance(time.Hour)
		checkRead(t, r, data, k<<17+10, 1000)
	}
	if src.asked.Load() != 1 {
		t.Fatalf("asked %d times", src.asked.Load())
	}
}

// TestIndexSourceCancelled: a read asking a silent IndexSource returns
// when its context is cancelled, and so does one waiting for its
// answer; a read waiting after them asks again (a cut short answer is no
// failure: no backoff), has the index and reads right.
func TestIndexSourceCancelled(t *testing.T) {
	data := mixed(4<<20, 63)
	idx := savedIndex(t, data)
	asking := make(chan struct{}, 1)
	src := &scriptedSource{answer: func(ctx context.Context, n int64) (io.ReaderAt, int64, error) {
		if n == 1 {
			asking <- struct{}{}
			<-ctx.Done() // silent
			return nil, 0, ctx.Err()
		}
		return bytes.NewReader(idx), int64(len(idx)), nil
	}}
	waiting := make(chan struct{}, 4)
	r := askedReader(t, data, src, waits(waiting, forIndex))
	deep := int64(len(data)) - 5000
	ctx, cancel := context.WithCancel(context.Background())
	first := readAsync(ctx, r, data, deep, 1000)
	<-asking
	cancelWaiting(t, r, data, deep-1<<20, 1000, waiting)
	last := readAsync(context.Background(), r, data, deep+1000, 1000)
	<-waiting
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the read asking: %v", err)
	}
	waitReads(t, last)
	if src.asked.Load() != 2 || !r.ix.isLoaded() {
		t.Fatalf("asked %d times; loaded %v", src.asked.Load(), r.ix.isLoaded())
	}
}

// flakyIndex is an index file whose reads from offset from on fail with
// a transient error, as many as fail says.
type flakyIndex struct {
	b    []byte
	from int64
	fail atomic.Int64
}

func (f *flakyIndex) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.from && f.fail.Add(-1) >= 0 {
		return 0, source.Transient(errors.New("connection reset"))
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// TestIndexReadsThatPass: reading a saved index failing in a way that
// may pass discards nothing: its table, read again after the backoff
// (from the source opened, not asked again), and a span's window, whose
// read fails and the next succeeds.
func TestIndexReadsThatPass(t *testing.T) {
	data := mixed(4<<20, 64)
	idx := &flakyIndex{b: savedIndex(t, data)}
	idx.fail.Store(1)
	src := &scriptedSource{answer: func(context.Context, int64) (io.ReaderAt, int64, error) {
		return idx, int64(len(idx.b)), nil
	}}
	clock := &testClock{}
	r := askedReader(t, data, src, &testHooks{clock: clock.time})
	checkRead(t, r, data, 3<<17, 1000)
	if r.ix.isLoaded() || drops(r) != 0 {
		t.Fatalf("table read failed: loaded %v, refused %d times", r.ix.isLoaded(), drops(r))
	}
	clock.advance(time.Second)
	checkRead(t, r, data, 30<<17, 1000)
	if !r.ix.isLoaded() || src.asked.Load() != 1 {
		t.Fatalf("table read again: loaded %v, asked %d times", r.ix.isLoaded(), src.asked.Load())
	}
	// The windows lie after the table.
	idx.from = indexHeader + indexRecord*int64(binary.LittleEndian.Uint32(idx.b[36:]))
	var off int64 = -1
	for _, cp := range r.checkpoints() {
		if cp.winSize > 0 && cp.out > 4<<17 {
			off = cp.out + 10
			break
		}
	}
	if off < 0 {
		t.Fatal("no window in the index")
	}
	idx.fail.Store(1)
	if _, err := r.ReadAt(make([]byte, 100), off); !errors.Is(err, source.ErrTransient) {
		t.Fatalf("read whose window's read fails: %v", err)
	}
	checkRead(t, r, data, off, 100)
	if !r.ix.isLoaded() || drops(r) != 0 {
		t.Fatalf("after a window's read failed: loaded %v, discarded %d times", r.ix.isLoaded(), drops(r))
	}
}

// TestIndexSourcePending: an IndexSource that answers Pending is not
// waited for: a read inflates from the stream, asking again nothing while
// Ready is open; once Ready is closed, the source is asked again before
// the next span, and its index takes the read the rest of the way, even
// a read that had started without it.
func TestIndexSourcePending(t *testing.T) {
	data := mixed(4<<20, 64)
	idx := savedIndex(t, data)
	for _, readyAtOnce := range []bool{false, true} {
		ready := make(chan struct{})
		src := &scriptedSource{answer: func(_ context.Context, n int64) (io.ReaderAt, int64, error) {
			if n == 1 {
				if readyAtOnce {
					close(ready) // found as the first read goes on
				}
				return nil, 0, &Pending{Ready: ready}
			}
			return bytes.NewReader(idx), int64(len(idx)), nil
		}}
		r := askedReader(t, data, src, &testHooks{clock: (&testClock{}).time})
		const span = 128 << 10
		checkRead(t, r, data, 20*span+10, 1000)
		if readyAtOnce {
			if src.asked.Load() != 2 || !r.ix.isLoaded() {
				t.Fatalf("ready at once: asked %d times, loaded %v; want the index loaded within the read", src.asked.Load(), r.ix.isLoaded())
			}
		} else {
			checkRead(t, r, data, 22*span+10, 1000)
			if src.asked.Load() != 1 || r.ix.isLoaded() {
				t.Fatalf("pending: asked %d times, loaded %v; want one asking, no index", src.asked.Load(), r.ix.isLoaded())
			}
			close(ready)
			checkRead(t, r, data, 24*span+10, 1000)
			if src.asked.Load() != 2 || !r.ix.isLoaded() {
				t.Fatalf("once ready: asked %d times, loaded %v", src.asked.Load(), r.ix.isLoaded())
			}
		}
		checkReads(t, r, data, 64)
		if p := r.Progress(); !p.Loaded || p.Dropped != nil {
			t.Fatalf("progress %+v", p)
		}
	}
}
