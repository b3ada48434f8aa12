package inflate

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"sync"
	"testing"
)

// helped is a reader of comp with helpers (and a budget of its own for
// them), in chunks of a tenth of it, and the hooks given.
func helped(data, comp []byte, helpers int, hooks *testHooks) *ReaderAt {
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10, Cache: NewCache(8 << 20), Helpers: helpers, HelperBudget: NewHelperBudget(helpers), test: hooks})
	r.front.helpChunk = max(int64(len(comp))/10, 1)
	return r
}

// TestHelpedDeepRead: a first read near the end of a fresh index has
// helpers index the chunks ahead, which the index splices in; every byte
// read is right, and so is the index then saved.
func TestHelpedDeepRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		level   int
		spliced bool
	}{
		{"float32 noise", noisyFloat32(3<<20, 31), 6, true},
		{"random walk", randomWalk(3<<20, 32), 6, true},
		{"mixed level 1", mixed(3<<20, 33), 1, true},
		{"int ramp", intRamp(8 << 20), 6, false}, // the markers never clear
	} {
		t.Run(tc.name, func(t *testing.T) {
			comp := deflate(t, tc.data, tc.level)
			r := helped(tc.data, comp, 3, nil)
			off := int64(len(tc.data)) - 5000
			p := make([]byte, 5000)
			if n, err := r.ReadAt(p, off); (err != nil && err != io.EOF) || n != len(p) || !bytes.Equal(p, tc.data[off:]) {
				t.Fatalf("deep read: %d, %v, or wrong bytes", n, err)
			}
			if r.front.helpStarts.Load() != 1 {
				t.Fatalf("helpers started %d times", r.front.helpStarts.Load())
			}
			if spliced := r.front.helpSplices.Load() > 0; spliced != tc.spliced {
				t.Errorf("a helper's run spliced in: %v, want %v", spliced, tc.spliced)
			}
			checkReads(t, r, tc.data, 4)
			readWhole(t, r, tc.data)
			checkOwnIndex(t, r, tc.data, comp)
			r.Release()
		})
	}
}

// TestHelpedConcurrentReads: first reads at several depths at once, with
// helpers (and -race).
func TestHelpedConcurrentReads(t *testing.T) {
	data := noisyFloat32(3<<20, 34)
	comp := deflate(t, data, 6)
	r := helped(data, comp, 2, nil)
	defer r.Release()
	var wg sync.WaitGroup
	for _, f := range []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.999} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(f * float64(len(data)))
			p := make([]byte, min(4096, int64(len(data))-off))
			if n, err := r.ReadAt(p, off); n != len(p) || (err != nil && err != io.EOF) || !bytes.Equal(p, data[off:off+int64(n)]) {
				t.Errorf("read at %d: %d, %v, or wrong bytes", off, n, err)
			}
		}()
	}
	wg.Wait()
}

// TestHelpNotForBackgroundOrShallow: reads from the start on, a deep
// read once the index has left its first chunk, and IndexAll (a mount's
// background indexing, at low priority) start no helpers.
func TestHelpNotForBackgroundOrShallow(t *testing.T) {
	data := noisyFloat32(2<<20, 35)
	comp := deflate(t, data, 6)
	r := helped(data, comp, 1, nil) // two chunks
	for off := int64(0); off < int64(len(data))*6/10; off += 256 << 10 {
		checkRead(t, r, data, off, 256<<10)
	}
	checkRead(t, r, data, int64(len(data))-1000, 1000)
	if r.front.helpStarts.Load() != 0 {
		t.Fatalf("helpers started %d times", r.front.helpStarts.Load())
	}
	r.Release()
	r = helped(data, comp, 2, nil)
	if err := r.IndexAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.front.helpStarts.Load() != 0 {
		t.Fatalf("helpers started %d times by IndexAll", r.front.helpStarts.Load())
	}
	r.Release()
}

// TestHelpedBadStream: a damaged stream gives a deep read with helpers
// the error it gives one without.
func TestHelpedBadStream(t *testing.T) {
	data := noisyFloat32(3<<20, 36)
	comp := deflate(t, data, 6)
	comp[len(comp)*2/3] ^= 0x10
	p := make([]byte, 1000)
	_, want := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), nil).ReadAt(p, int64(len(data))-1000)
	r := helped(data, comp, 2, nil)
	defer r.Release()
	_, got := r.ReadAt(p, int64(len(data))-1000)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("with helpers: %v; without: %v", got, want)
	}
}

// TestHelpedFalseStarts: the index passes starts that are not what the
// helpers' searches say (one in the wrong state after a real header, one
// with no header) and splices the runs of the next true ones.
func TestHelpedFalseStarts(t *testing.T) {
	data := noisyFloat32(3<<20, 38)
	comp := deflate(t, data, 6)
	var changed sync.WaitGroup
	changed.Add(2)
	hooks := &testHooks{start: func(i int, s *chunkStart) {
		switch {
		case i == 1 && s.ok:
			s.cp.bit += 8
		case i == 2 && s.ok:
			s.bit++
		default:
			return
		}
		changed.Done()
	}}
	r := helped(data, comp, 5, hooks)
	defer r.Release()
	checkRead(t, r, data, int64(len(data))-3000, 3000)
	changed.Wait() // both changed, or the test times out
	if r.front.helpSplices.Load() == 0 {
		t.Fatal("no helper's run spliced in")
	}
	checkReads(t, r, data, 5)
}

// TestHelpReleased: the reader is released while its helpers wait on
// the source; they stop, and the deep read under way finishes alone.
func TestHelpReleased(t *testing.T) {
	data := noisyFloat32(3<<20, 39)
	comp := deflate(t, data, 6)
	g := newGatedSrc(comp, int64(len(comp))/2)
	g.blocked = make(chan int64, 1<<16) // nobody listens
	r := NewReaderAt(g, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10, Helpers: 3, HelperBudget: NewHelperBudget(3)})
	r.front.helpChunk = int64(len(comp)) / 10
	read := make(chan error)
	go func() {
		p := make([]byte, 2000)
		off := int64(len(data)) - 2000
		_, err := r.ReadAt(p, off)
		if err == nil && !bytes.Equal(p, data[off:]) {
			err = io.ErrUnexpectedEOF
		}
		read <- err
	}()
	<-g.blocked // the index has reached the gate
	released := make(chan struct{})
	go func() {
		r.Release()
		close(released)
	}()
	g.raise(int64(len(comp)))
	if err := <-read; err != nil && err != io.EOF {
		t.Fatalf("deep read: %v", err)
	}
	<-released
	if r.front.helpStarts.Load() != 1 {
		t.Fatalf("helpers started %d times", r.front.helpStarts.Load())
	}
}

// TestHelpedStartInLastSpan: a chunk's start inside the stream's last
// span (long spans, many chunks) ends that span there, and the index
// splices the last chunk's run, which ends the stream.
func TestHelpedStartInLastSpan(t *testing.T) {
	data := noisyFloat32(3<<20, 40)
	comp := deflate(t, data, 6)
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 1 << 20, Cache: NewCache(16 << 20), Helpers: 9, HelperBudget: NewHelperBudget(9)})
	r.front.helpChunk = int64(len(comp)) / 10
	defer r.Release()
	checkRead(t, r, data, int64(len(data))-100, 100)
	if r.front.helpSplices.Load() == 0 {
		t.Fatal("no helper's run spliced in")
	}
	checkReads(t, r, data, 6)
	checkOwnIndex(t, r, data, comp)
}

// TestHelpWaitCancelled: a read whose context ends while the index waits
// for a helper's run fails with the context's error; the next read
// inflates that span again and splices the run in, and the whole stream
// then reads right (its CRC-32 counted once).
func TestHelpWaitCancelled(t *testing.T) {
	data := noisyFloat32(3<<20, 41)
	comp := deflate(t, data, 6)
	g := newGatedSrc(comp, int64(len(comp))*6/10) // the helper's run waits here
	g.blocked = make(chan int64, 1<<16)
	ctx, cancel := context.WithCancel(context.Background())
	r := NewReaderAt(g, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10, Cache: NewCache(8 << 20), Helpers: 1, HelperBudget: NewHelperBudget(1), test: &testHooks{wait: func(w waitFor) {
			if w == forRun {
				cancel()
			}
		}}})
	r.front.helpChunk = int64(len(comp)) / 2
	defer r.Release()
	p := make([]byte, 1000)
	_, err := r.ReadAtContext(ctx, p, int64(len(data))-1000)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	g.raise(int64(len(comp)))
	checkRead(t, r, data, int64(len(data))-1000, 1000)
	if r.front.helpSplices.Load() != 1 {
		t.Fatalf("%d runs spliced in", r.front.helpSplices.Load())
	}
	readWhole(t, r, data)
}
