package inflate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	data := randBytes(rng, 300_000)
	for _, cut := range []int{0, 1, 7, 4096, 65_537, 299_999, 300_000} {
		a, b := data[:cut], data[cut:]
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		if want := crc32.ChecksumIEEE(data); got != want {
			t.Errorf("cut at %d: %08x, want %08x", cut, got, want)
		}
	}
}

// countingSrc counts the reads of the compressed stream.
type countingSrc struct {
	r     io.ReaderAt
	reads atomic.Int64
}

func (c *countingSrc) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.r.ReadAt(p, off)
}

// indexed returns a ReaderAt over comp that has indexed all of it, and its
// index.
func indexed(t *testing.T, data, comp []byte, opts *Options) (*ReaderAt, []byte) {
	t.Helper()
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), opts)
	if _, ok := r.MarshalIndex(); ok {
		t.Fatal("an index with nothing read is complete")
	}
	got := make([]byte, len(data))
	if _, err := r.ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	idx, ok := r.MarshalIndex()
	if !ok {
		t.Fatal("index not complete after a full read")
	}
	return r, idx
}

// checkReads reads r at random offsets and compares with data.
func checkReads(t *testing.T, r *ReaderAt, data []byte, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	for range 60 {
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.IntN(200_000)
		p := make([]byte, n)
		k, err := r.ReadAt(p, off)
		want := data[off:min(off+int64(n), int64(len(data)))]
		if k != len(want) || !bytes.Equal(p[:k], want) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d at %d) = %d, %v: wrong bytes", n, off, k, err)
		}
	}
}

func TestIndexRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  []byte
		level int
	}{
		{"noise", noisyFloat32(3<<20, 1), 6},
		{"ramp level 1", intRamp(4 << 20), 1},
		{"mixed level 9", mixed(3<<20, 2), 9},
		{"stored blocks", randBytes(rand.New(rand.NewPCG(3, 3)), 2<<20), 0},
		{"fixed huffman", mixed(2<<20, 4), -2}, // HuffmanOnly
	} {
		t.Run(tc.name, func(t *testing.T) {
			comp := deflate(t, tc.data, tc.level)
			_, idx := indexed(t, tc.data, comp, &Options{SpanSize: 256 << 10})
			src := &countingSrc{r: bytes.NewReader(comp)}
			r := NewReaderAt(src, int64(len(comp)), int64(len(tc.data)), crc32.ChecksumIEEE(tc.data),
				&Options{SpanSize: 256 << 10})
			if err := r.LoadIndex(bytes.NewReader(idx), int64(len(idx))); err != nil {
				t.Fatal(err)
			}
			// The last byte at once: one span inflated, not the stream.
			p := make([]byte, 1)
			if _, err := r.ReadAt(p, int64(len(tc.data))-1); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if p[0] != tc.data[len(tc.data)-1] {
				t.Fatal("last byte wrong")
			}
			checkReads(t, r, tc.data, 1)
			if drops(r) != 0 || !r.ix.isLoaded() {
				t.Fatal("a good index was discarded")
			}
			again, ok := r.MarshalIndex()
			if !ok || !bytes.Equal(again, idx) {
				t.Fatal("a loaded index does not marshal as it was loaded")
			}
		})
	}
}

// resum rewrites an index's checksum (of its header and table) after a
// test changed them.
func resum(b []byte) []byte {
	b = bytes.Clone(b)
	n := int(binary.LittleEndian.Uint32(b[36:]))
	sum := crc32.Update(crc32.Checksum(b[:40], castagnoli), castagnoli, b[indexHeader:indexHeader+n*indexRecord])
	binary.LittleEndian.PutUint32(b[40:], sum)
	return b
}

// cpAt is the offset of checkpoint i's record in an index.
func cpAt(t *testing.T, b []byte, i int) int {
	t.Helper()
	return indexHeader + i*indexRecord
}

func TestIndexRefused(t *testing.T) {
	data := mixed(2<<20, 5)
	comp := deflate(t, data, 6)
	_, idx := indexed(t, data, comp, &Options{SpanSize: 256 << 10})
	other := mixed(2<<20, 6)
	_, otherIdx := indexed(t, other, deflate(t, other, 6), &Options{SpanSize: 256 << 10})
	older := bytes.Clone(idx)
	binary.LittleEndian.PutUint32(older[8:], 0)
	flipped := bytes.Clone(idx)
	flipped[cpAt(t, idx, 1)+9] ^= 0x10 // in the table
	backwards := bytes.Clone(idx)
	binary.LittleEndian.PutUint64(backwards[cpAt(t, idx, 2):], 1) // output offset 1, after checkpoint 1's
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated in its windows", idx[:len(idx)-100]},
		{"truncated in its table", idx[:indexHeader+2*indexRecord]},
		{"flipped byte", flipped},
		{"older version", resum(older)},
		{"another stream's", otherIdx},
		{"offsets not increasing", resum(backwards)},
		{"not an index", bytes.Repeat([]byte("x"), 200)},
	} {
		r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), nil)
		if err := r.LoadIndex(bytes.NewReader(tc.b), int64(len(tc.b))); !errors.Is(err, ErrBadIndex) {
			t.Errorf("%s: LoadIndex = %v, want ErrBadIndex", tc.name, err)
		}
		checkReads(t, r, data, 2) // indexed afresh
	}
}

// TestLyingIndexIsDiscarded: indexes that pass every check of their form
// but whose checkpoints lie (a wrong CRC, a wrong window, a wrong bit
// position) are found out at the first span they yield, discarded, and
// every byte read is still right.
func TestLyingIndexIsDiscarded(t *testing.T) {
	data := mixed(3<<20, 9) // matches reach into the windows
	comp := deflate(t, data, 6)
	_, idx := indexed(t, data, comp, &Options{SpanSize: 256 << 10})
	lie := func(f func(b []byte, cp int)) []byte {
		b := bytes.Clone(idx)
		f(b, cpAt(t, b, 3))
		return resum(b)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"crc", lie(func(b []byte, p int) { b[p+40] ^= 1 })},
		{"window", lie(func(b []byte, p int) {
			if binary.LittleEndian.Uint32(b[p+44:]) == 0 {
				t.Fatal("checkpoint 3 has an empty window: no lie to tell")
			}
			binary.LittleEndian.PutUint32(b[p+44:], 0) // all zeros, where the span reads a real one
		})},
		{"window bytes", func() []byte { // not covered by the table's checksum
			b := bytes.Clone(idx)
			p := cpAt(t, b, 3)
			off := binary.LittleEndian.Uint64(b[p+24:])
			b[off+2] ^= 0x55
			return b
		}()},
		{"bit position", lie(func(b []byte, p int) { binary.LittleEndian.PutUint64(b[p+8:], binary.LittleEndian.Uint64(b[p+8:])+3) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
				&Options{SpanSize: 256 << 10})
			if err := r.LoadIndex(bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatalf("LoadIndex: %v", err)
			}
			// Readers at once, some in the lying span.
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					off := int64(3*256<<10 + w*1000)
					p := make([]byte, 5000)
					if n, err := r.ReadAt(p, off); n != len(p) || !bytes.Equal(p, data[off:off+5000]) {
						t.Errorf("reader %d: %d bytes, %v: wrong", w, n, err)
					}
				}()
			}
			wg.Wait()
			checkReads(t, r, data, 3)
			if n := drops(r); n != 1 {
				t.Errorf("the index was discarded %d times, want once", n)
			}
		})
	}
}

// TestThinnedIndexRoundTrip: an index thinned to fit its window budget
// keeps one checkpoint in several, each span's CRC-32 covering the spans
// it absorbed, and loads and reads back exactly.
func TestThinnedIndexRoundTrip(t *testing.T) {
	data := mixed(6<<20, 11)
	comp := deflate(t, data, 6)
	w := NewWindowBudget(1) // over at the first window kept
	r, idx := indexed(t, data, comp, &Options{SpanSize: 128 << 10, Windows: w})
	if r.ix.stride < 2 {
		t.Fatalf("the index was not thinned (stride %d)", r.ix.stride)
	}
	r2 := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), nil)
	if err := r2.LoadIndex(bytes.NewReader(idx), int64(len(idx))); err != nil {
		t.Fatal(err)
	}
	checkReads(t, r2, data, 4)
	if drops(r2) != 0 || !r2.ix.isLoaded() {
		t.Fatal("a thinned index was discarded")
	}
}

// TestPartialIndex: an index saved part way loads, serves what it covers,
// and grows from its frontier to the very index a full pass makes; a
// frontier or a span CRC that lies is found out, and every byte is right.
func TestPartialIndex(t *testing.T) {
	data := mixed(4<<20, 12)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	const span = 128 << 10
	_, full := indexed(t, data, comp, &Options{SpanSize: span})

	a := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
	if _, err := a.ReadAt(make([]byte, 4096), int64(len(data))*2/5); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.MarshalPartialIndex(100); ok {
		t.Fatal("a partial index of fewer spans than asked")
	}
	part, ok := a.MarshalPartialIndex(4)
	if !ok {
		t.Fatal("no partial index")
	}
	if _, ok := a.MarshalIndex(); ok {
		t.Fatal("a partial index marshalled as complete")
	}

	load := func(b []byte) *ReaderAt {
		r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
		if err := r.LoadIndex(bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := load(part)
	checkReads(t, r, data, 5)
	got := make([]byte, len(data))
	if _, err := r.ReadAt(got, 0); (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("whole read: %v", err)
	}
	again, ok := r.MarshalIndex()
	if ok && !bytes.Equal(again, full) {
		i := 44
		for i < min(len(again), len(full)) && again[i] == full[i] {
			i++
		}
		if i < len(full) && i >= indexHeader {
			rec := (i - indexHeader) / indexRecord
			t.Logf("record %d, field byte %d: %x vs %x", rec, (i-indexHeader)%indexRecord, again[indexHeader+rec*indexRecord:indexHeader+(rec+1)*indexRecord], full[indexHeader+rec*indexRecord:indexHeader+(rec+1)*indexRecord])
		}
		t.Logf("lengths %d and %d, first difference at byte %d (table ends at %d)", len(again), len(full), i, indexHeader+indexRecord*int(binary.LittleEndian.Uint32(full[36:])))
	}
	if !ok || !bytes.Equal(again, full) || drops(r) != 0 {
		t.Fatalf("grown from a partial index: complete %v, same as a full pass's %v, discarded %d", ok, bytes.Equal(again, full), drops(r))
	}

	n := int(binary.LittleEndian.Uint32(part[36:]))
	for _, tc := range []struct {
		name string
		f    func(b []byte)
	}{
		{"frontier bit position", func(b []byte) {
			p := cpAt(t, b, n-1) + 8
			binary.LittleEndian.PutUint64(b[p:], binary.LittleEndian.Uint64(b[p:])+1)
		}},
		{"first span's CRC", func(b []byte) { b[cpAt(t, b, 0)+40] ^= 1 }},
	} {
		b := bytes.Clone(part)
		tc.f(b)
		r := load(resum(b))
		// Deep first: past the frontier, then everything.
		p := make([]byte, 4096)
		off := int64(len(data)) - 5000
		if k, err := r.ReadAt(p, off); k != len(p) || !bytes.Equal(p, data[off:off+4096]) {
			t.Fatalf("%s: deep read: %d, %v", tc.name, k, err)
		}
		if _, err := r.ReadAt(got, 0); (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
			t.Fatalf("%s: whole read: %v", tc.name, err)
		}
		if n := drops(r); n != 1 {
			t.Errorf("%s: the index was discarded %d times, want once", tc.name, n)
		}
	}
}

// TestLoadWhenReadAheadExtendsFirst: a saved index is loaded whoever
// first grows the index, a read or readAhead (a single large read starts
// readAhead, which extended without asking Options.Load).
func TestLoadWhenReadAheadExtendsFirst(t *testing.T) {
	data := mixed(4<<20, 13)
	comp := deflate(t, data, 6)
	_, idx := indexed(t, data, comp, &Options{SpanSize: 128 << 10})
	saved := &savedBytes{b: idx}
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 128 << 10, Index: saved})
	got := make([]byte, len(data))
	if _, err := r.ReadAt(got, 0); (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("whole read: %v", err)
	}
	if saved.asked.Load() != 1 || !r.ix.isLoaded() {
		t.Fatalf("the saved index asked for %d times, loaded %v", saved.asked.Load(), r.ix.isLoaded())
	}
}
