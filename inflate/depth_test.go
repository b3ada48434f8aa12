package inflate

import (
	"bytes"
	"hash/crc32"
	"sync"
	"testing"
)

// gatedSrc serves a compressed stream, holding every read that reaches
// past limit until the limit is raised; blocked is told of each read it
// holds.
type gatedSrc struct {
	data    []byte
	mu      sync.Mutex
	cond    *sync.Cond
	limit   int64
	blocked chan int64
}

func newGatedSrc(data []byte, limit int64) *gatedSrc {
	g := &gatedSrc{data: data, limit: limit, blocked: make(chan int64, 100)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedSrc) ReadAt(p []byte, off int64) (int, error) {
	g.mu.Lock()
	told := false
	for off+int64(len(p)) > g.limit && g.limit < int64(len(g.data)) {
		if !told {
			g.blocked <- off
			told = true
		}
		g.cond.Wait()
	}
	g.mu.Unlock()
	return bytes.NewReader(g.data).ReadAt(p, off)
}

func (g *gatedSrc) raise(limit int64) {
	g.mu.Lock()
	g.limit = limit
	g.cond.Broadcast()
	g.mu.Unlock()
}

// TestShallowReadDoesNotWaitForADeepOne: a first read deep into a
// stream is under way, held by its source; a read at a shallower depth
// is answered as soon as the index reaches it, while the deep read is
// still held further on (before, the deep read held the index until it
// reached its own depth). The test has no timer: with the old behaviour
// it does not finish.
func TestShallowReadDoesNotWaitForADeepOne(t *testing.T) {
	data := noisyFloat32(8<<20, 21) // compresses evenly
	comp := deflate(t, data, 6)
	n := int64(len(comp))
	g := newGatedSrc(comp, n/10)
	r := NewReaderAt(g, n, int64(len(data)), crc32.ChecksumIEEE(data), &Options{SpanSize: 256 << 10})

	deepDone := make(chan error, 1)
	deepOff := int64(len(data)) * 9 / 10
	go func() {
		p := make([]byte, 4096)
		_, err := r.ReadAt(p, deepOff)
		if err == nil && !bytes.Equal(p, data[deepOff:deepOff+4096]) {
			t.Error("deep read: wrong bytes")
		}
		deepDone <- err
	}()
	<-g.blocked // the deep read is held at a tenth of the stream

	shallowDone := make(chan error, 1)
	shallowOff := int64(len(data)) * 3 / 10
	go func() {
		p := make([]byte, 4096)
		_, err := r.ReadAt(p, shallowOff)
		if err == nil && !bytes.Equal(p, data[shallowOff:shallowOff+4096]) {
			t.Error("shallow read: wrong bytes")
		}
		shallowDone <- err
	}()
	// Let the index grow to half the stream, past the shallow read but
	// short of the deep one, which is then held again.
	g.raise(n / 2)
	if err := <-shallowDone; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-deepDone:
		t.Fatalf("the deep read finished with its source held: %v", err)
	default:
	}
	g.raise(n)
	if err := <-deepDone; err != nil {
		t.Fatal(err)
	}
}
