package inflate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// countingSrc counts the reads of the compressed stream, and the bytes
// they read.
type countingSrc struct {
	r     io.ReaderAt
	reads atomic.Int64
	bytes atomic.Int64
}

func (c *countingSrc) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
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

// TestLyingIndexIsDiscarded: indexes whose own checksums fail (a window
// whose bytes or size changed), or that cannot tell their own fault from
// the stream's (a span CRC-32 that lies where the window is covered by
// no checksum, as in indexes written before windows had them), are found
// out at the first span they yield, discarded, and every byte read is
// still right.
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
		{"crc, no window checksums", unsummed(t, lie(func(b []byte, p int) { b[p+40] ^= 1 }))},
		{"window bytes, no window checksums", func() []byte {
			b := unsummed(t, idx)
			off := binary.LittleEndian.Uint64(b[cpAt(t, b, 3)+24:])
			b[off+2] ^= 0x55
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := loadIndex(t, data, comp, tc.b)
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

// loadIndex loads idx into a fresh reader of comp, with 256 KiB spans.
func loadIndex(t *testing.T, data, comp, idx []byte) *ReaderAt {
	t.Helper()
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 256 << 10})
	if err := r.LoadIndex(bytes.NewReader(idx), int64(len(idx))); err != nil {
		t.Fatalf("LoadIndex: %v", err)
	}
	return r
}

// unsummed is an index as written before windows had checksums: bytes
// 50-55 of every record zero.
func unsummed(t *testing.T, idx []byte) []byte {
	b := bytes.Clone(idx)
	for i := range int(binary.LittleEndian.Uint32(b[36:])) {
		clear(b[cpAt(t, b, i)+50 : cpAt(t, b, i)+56])
	}
	return resum(b)
}

// checkDamaged reads r (whose stream is data) in the span at bad, which
// must fail with a DamageError there; then at random: every read before
// that span is right, every read reaching it fails with ErrDamaged after
// the right bytes before it, and the index stays.
func checkDamaged(t *testing.T, r *ReaderAt, data []byte, bad int64) {
	t.Helper()
	var de *DamageError
	if _, err := r.ReadAt(make([]byte, 10), bad+10); !errors.As(err, &de) || de.Offset != bad || de.CompOffset <= 0 {
		t.Fatalf("read of the damaged span: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(bad), 4))
	for range 40 {
		off := rng.Int64N(int64(len(data)))
		p := make([]byte, 1+rng.IntN(300_000))
		n, err := r.ReadAt(p, off)
		end := min(off+int64(len(p)), int64(len(data)))
		if !bytes.Equal(p[:n], data[off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d at %d): wrong bytes", len(p), off)
		}
		if got := off + int64(n); end > bad && (!errors.Is(err, ErrDamaged) || got != max(off, bad)) {
			t.Fatalf("ReadAt(%d at %d) into the damaged span at %d: %d bytes, %v", len(p), off, bad, n, err)
		} else if end <= bad && got != end {
			t.Fatalf("ReadAt(%d at %d) before the damaged span at %d: %d bytes, %v", len(p), off, bad, n, err)
		}
	}
	if drops(r) != 0 || !r.ix.isLoaded() {
		t.Fatalf("the index was discarded (%d times)", drops(r))
	}
}

// TestIndexFindsDamage: a stream that does not inflate to what its
// index (whose checksums hold) recorded is damaged: reads of the span
// where that shows and of every later one fail with ErrDamaged, reads
// before it are served, and the index is kept. The stream's bytes
// changed (level 0: stored blocks, whose bytes only the whole CRC-32
// checks; level 6: a byte in a Huffman block), or the index's table
// says what the stream does not (a span CRC-32, a bit position: a lie
// that keeps the checksums is indistinguishable from damage).
func TestIndexFindsDamage(t *testing.T) {
	for _, level := range []int{0, 6} {
		data := mixed(3<<20, 9)
		comp := deflate(t, data, level)
		_, idx := indexed(t, data, comp, &Options{SpanSize: 256 << 10})
		// A byte in the middle of checkpoint 5's span.
		cps := loadIndex(t, data, comp, idx).checkpoints()
		flip := bytes.Clone(comp)
		flip[(cps[5].bit+cps[6].bit)/16] ^= 0x20
		t.Run(fmt.Sprintf("level %d, flipped byte", level), func(t *testing.T) {
			checkDamaged(t, loadIndex(t, data, flip, idx), data, cps[5].out)
		})
	}
	data := mixed(3<<20, 9)
	comp := deflate(t, data, 6)
	_, idx := indexed(t, data, comp, &Options{SpanSize: 256 << 10})
	cps := loadIndex(t, data, comp, idx).checkpoints()
	for _, tc := range []struct {
		name string
		f    func(b []byte, p int)
	}{
		{"crc", func(b []byte, p int) { b[p+40] ^= 1 }},
		{"bit position", func(b []byte, p int) { binary.LittleEndian.PutUint64(b[p+8:], binary.LittleEndian.Uint64(b[p+8:])+3) }},
	} {
		b := bytes.Clone(idx)
		tc.f(b, cpAt(t, b, 3))
		t.Run(tc.name, func(t *testing.T) { checkDamaged(t, loadIndex(t, data, comp, resum(b)), data, cps[3].out) })
	}
}

// TestLoadedIndexSurvivesSourceErrors: reads of a loaded index (whole,
// or partial and grown past its frontier) that fail reading the source
// fail with the source's error and leave the index alone; once the
// source mends, reads are served from it, not from the stream's start.
func TestLoadedIndexSurvivesSourceErrors(t *testing.T) {
	data := mixed(4<<20, 14)
	comp := deflate(t, data, 6)
	crc := crc32.ChecksumIEEE(data)
	const span = 256 << 10
	_, full := indexed(t, data, comp, &Options{SpanSize: span})
	half := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
	checkRead(t, half, data, int64(len(data))/2, 10)
	part, ok := half.MarshalPartialIndex(2)
	if !ok {
		t.Fatal("no partial index")
	}
	for name, idx := range map[string][]byte{"whole": full, "partial": part} {
		t.Run(name, func(t *testing.T) {
			src := &countingSrc{r: bytes.NewReader(comp)}
			f := &flakyReaderAt{r: src}
			f.failing.Store(true)
			r := NewReaderAt(f, int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
			if err := r.LoadIndex(bytes.NewReader(idx), int64(len(idx))); err != nil {
				t.Fatal(err)
			}
			off := int64(len(data)) - 5000
			if _, err := r.ReadAt(make([]byte, 1000), off); !errors.Is(err, errFlaky) {
				t.Fatalf("read while the source fails: %v, want its error", err)
			}
			if drops(r) != 0 || !r.ix.isLoaded() || r.Progress().Dropped != nil {
				t.Fatal("a source error discarded the index")
			}
			f.failing.Store(false)
			before := src.reads.Load()
			checkRead(t, r, data, off, 1000)
			if reads := src.reads.Load() - before; reads > 40 {
				t.Errorf("a deep read after the source mended read it %d times: from the start?", reads)
			}
			checkReads(t, r, data, 7)
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
	// A frontier the span before it does not end at is the index's
	// fault: discarded.
	for _, tc := range []struct {
		name string
		f    func(b []byte)
	}{
		{"frontier bit position", func(b []byte) {
			p := cpAt(t, b, n-1) + 8
			binary.LittleEndian.PutUint64(b[p:], binary.LittleEndian.Uint64(b[p:])+1)
		}},
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
	// A span CRC-32 the stream does not inflate to is the stream's: the
	// stream's end, reached from the frontier, fails its CRC-32 (the
	// running one began from the loaded spans'), and the span is
	// damaged; no read is served a wrong byte.
	b := bytes.Clone(part)
	b[cpAt(t, b, 0)+40] ^= 1
	r = load(resum(b))
	p := make([]byte, 4096)
	if k, err := r.ReadAt(p, int64(len(data))-5000); !errors.Is(err, ErrChecksum) || !bytes.Equal(p[:k], data[len(data)-5000:][:k]) {
		t.Fatalf("first span's CRC: deep read: %d, %v", k, err)
	}
	if k, err := r.ReadAt(got, 0); !errors.Is(err, ErrDamaged) || k != 0 {
		t.Fatalf("first span's CRC: whole read: %d, %v", k, err)
	}
	if drops(r) != 0 {
		t.Fatal("first span's CRC: the index was discarded")
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
