package inflate

import (
	"bytes"
	"hash/crc32"
	"io"
	"runtime"
	"testing"
)

// allocated is the bytes of heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestIndexSnapshotStreams: an index is written a window at a time, from
// memory or from the file it was loaded from: writing it allocates its
// table and one window, not its windows (which a daemon under a memory
// target cannot hold twice), and writes the bytes MarshalIndex gives.
func TestIndexSnapshotStreams(t *testing.T) {
	data := repeatedRandom(4<<20, 20<<10, 2)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	opts := &Options{SpanSize: 32 << 10}
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, opts)
	if err := readAllAt(r, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	cps, wins := r.IndexStats()
	if wins < 2<<20 {
		t.Fatalf("the index holds %d bytes of windows: the data does not make large windows", wins)
	}
	want, ok := r.MarshalIndex()
	if !ok {
		t.Fatal("no complete index")
	}
	// Its table and header, and a window read back from a file.
	bound := uint64(indexHeader+indexRecord*cps) + 2*maxIndexWindow + 64<<10

	snap, ok := r.IndexSnapshot()
	if !ok {
		t.Fatal("no snapshot of a complete index")
	}
	var n int64
	var err error
	if a := allocated(func() { n, err = snap.WriteTo(io.Discard) }); a > bound {
		t.Errorf("writing an index of %d bytes of windows allocated %d bytes, want at most %d", wins, a, bound)
	}
	if err != nil || n != int64(len(want)) {
		t.Fatalf("WriteTo: %d bytes, %v; want %d", n, err, len(want))
	}
	var got bytes.Buffer
	if _, err := snap.WriteTo(&got); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("WriteTo wrote other bytes than MarshalIndex (%v)", err)
	}

	// Loaded, its windows stay in the file until written.
	loaded := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, opts)
	if err := loaded.LoadIndex(bytes.NewReader(want), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	snap, ok = loaded.IndexSnapshot()
	if !ok {
		t.Fatal("no snapshot of a loaded index")
	}
	if a := allocated(func() { n, err = snap.WriteTo(io.Discard) }); a > bound {
		t.Errorf("writing a loaded index allocated %d bytes, want at most %d", a, bound)
	}
	got.Reset()
	if _, err := snap.WriteTo(&got); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("a loaded index written again differs (%v)", err)
	}
	if _, ok := loaded.PartialIndexSnapshot(1); ok {
		t.Error("a partial snapshot of a complete index")
	}
}
