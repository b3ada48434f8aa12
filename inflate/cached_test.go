package inflate

import (
	"bytes"
	"hash/crc32"
	"io"
	"testing"
)

// readCached is ReadCached of n bytes at off, checked against data when
// it reads.
func readCached(t *testing.T, r *ReaderAt, data []byte, off int64, n int) bool {
	t.Helper()
	p := make([]byte, n)
	got, ok := r.ReadCached(p, off)
	if ok && (got != n || !bytes.Equal(p, data[off:off+int64(n)])) {
		t.Fatalf("ReadCached of %d at %d: %d bytes, right ones %v", n, off, got, bytes.Equal(p, data[off:off+int64(n)]))
	}
	return ok
}

// TestReadCached: ReadCached reads what a read cached, exactly, across
// spans too, and nothing else: not a span no read inflated, nor the last
// span (or past the index) before a read has reached the stream's end,
// nor past the end; it inflates nothing itself.
func TestReadCached(t *testing.T) {
	data := mixed(1<<20, 90)
	comp := deflate(t, data, 6)
	const span = 64 << 10
	r := newRA(data, comp, span, NewCache(64<<20))
	defer r.Release()
	size := int64(len(data))
	if readCached(t, r, data, 0, 100) {
		t.Fatal("ReadCached read before any read")
	}
	checkRead(t, r, data, 3*span+10, 2*span) // spans 3 to 5, whole or in part
	for _, c := range []struct {
		off  int64
		n    int
		want bool
	}{
		{3*span + 10, 2 * span, true},
		{3*span + 100, 4096, true},
		{4*span - 10, 20, true},   // across two spans cached
		{2*span + 10, 100, true},  // inflated on the way to span 3
		{6*span + 10, 100, false}, // no read went there
		{5 * span, 10, true},      // the prefix of span 5 the read needed
		{size - 10, 20, false},    // past the end
	} {
		if got := readCached(t, r, data, c.off, c.n); got != c.want {
			t.Errorf("ReadCached of %d at %d: %v, want %v", c.n, c.off, got, c.want)
		}
	}
	// The last span: not before a read reaches the stream's end (which
	// checks its CRC-32), then yes.
	last := size - 100
	if p := r.Progress(); p.Complete {
		t.Fatalf("the index is complete already: %+v", p)
	}
	if readCached(t, r, data, last, 100) {
		t.Error("ReadCached read the last span before the stream's end was reached")
	}
	whole := make([]byte, size)
	if n, err := r.ReadAt(whole, 0); n != len(whole) || (err != nil && err != io.EOF) {
		t.Fatalf("whole read: %d, %v", n, err)
	}
	if !readCached(t, r, data, last, 100) || !readCached(t, r, data, 0, int(size)) {
		t.Error("ReadCached did not read what the whole read cached")
	}
}

// TestReadCachedChunks: the last span of a chunk index is read by
// ReadCached only once the stream's CRC-32 is found right; with a wrong
// one, never.
func TestReadCachedChunks(t *testing.T) {
	data := noisyFloat32(1<<20, 91)
	comp, ch := chunked(t, data, 64<<10, 6)
	for _, right := range []bool{true, false} {
		sum := crc32.ChecksumIEEE(data)
		if !right {
			sum ^= 1
		}
		r, _ := chunkReader(data, comp, 64<<10, &chunkSource{ch: ch}, sum)
		last := int64(len(data)) - 100
		checkRead(t, r, data, 1000, 100)
		if !readCached(t, r, data, 1000, 100) {
			t.Errorf("CRC-32 right %v: ReadCached did not read the first chunk, cached", right)
		}
		p := make([]byte, 100)
		r.ReadAt(p, last) // inflates every chunk to check the stream
		if got := readCached(t, r, data, last, 100); got != right {
			t.Errorf("CRC-32 right %v: ReadCached of the last span: %v", right, got)
		}
		r.Release()
	}
}
