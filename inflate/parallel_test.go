package inflate

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// randomWalk is int32 steps of -2..2 from 0: numpy's cumulative sums.
func randomWalk(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	b := make([]byte, n&^3)
	var v int32
	for i := 0; i+4 <= len(b); i += 4 {
		v += int32(rng.IntN(5)) - 2
		binary.LittleEndian.PutUint32(b[i:], uint32(v))
	}
	return b
}

// parallelIndexed indexes comp with the parallel pass (workers, chunks
// of at least chunk bytes, the hooks given) and returns the reader and
// its index.
func parallelIndexed(t *testing.T, data, comp []byte, chunk int64, workers int, hooks *testHooks) (*ReaderAt, []byte) {
	t.Helper()
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), &Options{SpanSize: 64 << 10, test: hooks})
	split, err := r.indexAllParallel(context.Background(), workers, chunk)
	if err != nil || split != r.ix.parallel {
		t.Fatalf("parallel pass: %v, %v (made the index: %v)", split, err, r.ix.parallel)
	}
	idx, ok := r.MarshalIndex()
	if !ok {
		t.Fatal("index not complete after the parallel pass")
	}
	return r, idx
}

// checkIndex loads idx into a fresh reader of comp and reads all of it,
// which inflates every span from its checkpoint and checks its CRC-32.
func checkIndex(t *testing.T, data, comp, idx []byte) {
	t.Helper()
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10})
	if err := r.LoadIndex(bytes.NewReader(idx), int64(len(idx))); err != nil {
		t.Fatal(err)
	}
	checkReads(t, r, data, 2)
	readWhole(t, r, data)
	if drops(r) != 0 || !r.ix.isLoaded() {
		t.Fatal("the index was discarded")
	}
}

// checkOwnIndex checks r's complete index as checkIndex does.
func checkOwnIndex(t *testing.T, r *ReaderAt, data, comp []byte) {
	t.Helper()
	idx, ok := r.MarshalIndex()
	if !ok {
		t.Fatal("no complete index")
	}
	checkIndex(t, data, comp, idx)
}

// readWhole reads r in one call and compares with data.
func readWhole(t *testing.T, r *ReaderAt, data []byte) {
	t.Helper()
	got := make([]byte, len(data)+1)
	if n, err := r.ReadAt(got, 0); n != len(data) || err != io.EOF || !bytes.Equal(got[:n], data) {
		t.Fatalf("whole read: %d, %v", n, err)
	}
}

// TestParallelFirstPass indexes streams of every kind with the parallel
// pass, and checks the index span by span against the stream. On the
// kinds with dynamic blocks whose window clears, the parallel pass must
// have made the index; on the others the sequential pass did.
func TestParallelFirstPass(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		level    int
		parallel bool
	}{
		{"float32 noise", noisyFloat32(4<<20, 1), 6, true},
		{"random walk", randomWalk(4<<20, 2), 6, true},
		{"int ramp level 1", intRamp(8 << 20), 1, true},
		{"mixed level 9", mixed(3<<20, 3), 9, true},
		{"mixed level 1", mixed(3<<20, 4), 1, true},
		{"zeros", make([]byte, 32<<20), 6, false},
		{"stored blocks", randBytes(rand.New(rand.NewPCG(5, 5)), 2<<20), 0, false},
		{"huffman only", mixed(2<<20, 6), flate.HuffmanOnly, true},
		{"fixed blocks", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var comp []byte
			if tc.data == nil {
				tc.data, comp = fixedBlocks(2 << 20)
			} else {
				comp = deflate(t, tc.data, tc.level)
			}
			chunk := max(int64(len(comp))/10, 1)
			r, idx := parallelIndexed(t, tc.data, comp, chunk, 3, nil)
			if r.ix.parallel != tc.parallel {
				t.Fatalf("parallel pass used: %v, want %v", r.ix.parallel, tc.parallel)
			}
			if r.Indexed() != int64(len(tc.data)) {
				t.Fatalf("Indexed() = %d", r.Indexed())
			}
			checkIndex(t, tc.data, comp, idx)
		})
	}
}

// TestParallelFalseStart makes the runs meet a start that is not what
// the chunk's search says: the run before must pass it by, and the index
// still be right.
func TestParallelFalseStart(t *testing.T) {
	data := noisyFloat32(4<<20, 7)
	comp := deflate(t, data, 6)
	var changed atomic.Int64
	hooks := &testHooks{start: func(i int, s *chunkStart) {
		switch {
		case i == 2 && s.ok:
			s.cp.bit += 8 // its header is real, the state after it is not
		case i == 4 && s.ok:
			s.bit++ // no header there
		default:
			return
		}
		changed.Add(1)
	}}
	r, idx := parallelIndexed(t, data, comp, int64(len(comp))/8, 6, hooks) // 6 chunks
	if !r.ix.parallel || changed.Load() != 2 {
		t.Fatalf("parallel pass used: %v; starts changed: %d", r.ix.parallel, changed.Load())
	}
	checkIndex(t, data, comp, idx)
}

// TestParallelStreamErrors: a damaged or truncated stream gets from the
// parallel pass the error the sequential pass reports.
func TestParallelStreamErrors(t *testing.T) {
	data := noisyFloat32(4<<20, 8)
	comp := deflate(t, data, 6)
	flipped := bytes.Clone(comp)
	flipped[len(flipped)*2/3] ^= 0x40
	for name, c := range map[string][]byte{"flipped": flipped, "truncated": comp[:len(comp)*3/4]} {
		t.Run(name, func(t *testing.T) {
			crc := crc32.ChecksumIEEE(data)
			seq := NewReaderAt(bytes.NewReader(c), int64(len(c)), int64(len(data)), crc, nil)
			want := seq.IndexAll(context.Background())
			par := NewReaderAt(bytes.NewReader(c), int64(len(c)), int64(len(data)), crc, nil)
			_, got := par.indexAllParallel(context.Background(), 2, int64(len(c))/8)
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Fatalf("parallel pass: %v; sequential: %v", got, want)
			}
			if par.ix.parallel {
				t.Fatal("the parallel pass indexed a bad stream")
			}
		})
	}
}

// TestParallelCancel: a pass whose context ends stops, leaving the
// reader to index another time.
func TestParallelCancel(t *testing.T) {
	data := noisyFloat32(4<<20, 9)
	comp := deflate(t, data, 6)
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.indexAllParallel(ctx, 2, int64(len(comp))/8); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pass: %v", err)
	}
	if split, err := r.indexAllParallel(context.Background(), 2, int64(len(comp))/8); err != nil || !split {
		t.Fatalf("second pass: %v (split %v)", err, split)
	}
}

func TestMaybeDynamicHeader(t *testing.T) {
	// Every dynamic block compress/flate writes passes the filter.
	comp := deflate(t, mixed(1<<20, 10), 6)
	d := newDecoder()
	d.resetStream(bytes.NewReader(comp))
	d.out = make([]byte, 2<<20)
	padded := append(bytes.Clone(comp), make([]byte, 16)...)
	blocks := 0
	for d.state != stDone {
		if d.state == stHeader {
			bit := d.bitPos()
			if err := d.readHeader(); err != nil {
				t.Fatal(err)
			}
			if d.state == stHuff && d.lit == &d.dynLit && !d.final {
				blocks++
				if !maybeDynamicHeader(padded, bit) {
					t.Fatalf("the block at bit %d fails the filter", bit)
				}
			}
			continue
		}
		d.stopBit = d.bitPos() + 1 // to the next block header
		if err := d.decode(len(d.out) - outSlack); err != nil {
			t.Fatal(err)
		}
	}
	if blocks < 5 {
		t.Fatalf("only %d dynamic blocks", blocks)
	}
}

// fixedBlocks returns n bytes (about) of text and a stream of fixed
// Huffman blocks that holds them, with a match every few literals.
func fixedBlocks(n int) (data, comp []byte) {
	rng := rand.New(rand.NewPCG(11, 11))
	var w bitWriter
	for len(data) < n {
		final := len(data)+20000 >= n
		if final {
			w.bits(1|1<<1, 3)
		} else {
			w.bits(1<<1, 3)
		}
		for k := 0; k < 20000; {
			if len(data) > 100 && rng.IntN(8) == 0 {
				length, dist := 3+rng.IntN(30), 1+rng.IntN(100)
				fixedMatch(&w, length, dist)
				for range length {
					data = append(data, data[len(data)-dist])
				}
				k += length
				continue
			}
			c := byte('a' + rng.IntN(26))
			w.fixedLit(int(c))
			data = append(data, c)
			k++
		}
		w.fixedLit(256)
	}
	return data, w.bytes()
}

// TestParallelWithinBudget: the parallel pass's index keeps to the
// window budget as the sequential pass's does (thinned), says when it is
// complete, and reads right.
func TestParallelWithinBudget(t *testing.T) {
	data := noisyFloat32(4<<20, 12)
	comp := deflate(t, data, 6)
	budget := NewWindowBudget(200)
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 64 << 10, Windows: budget})
	if _, err := r.indexAllParallel(context.Background(), 2, int64(len(comp))/8); err != nil {
		t.Fatal(err)
	}
	if p := r.Progress(); !r.ix.parallel || !p.Complete || p.Loaded {
		t.Fatalf("parallel %v, progress %+v", r.ix.parallel, p)
	}
	if budget.Thinned() == 0 || budget.Used() > budget.Limit() {
		t.Fatalf("budget %d of %d, thinned %d times", budget.Used(), budget.Limit(), budget.Thinned())
	}
	checkReads(t, r, data, 3)
	checkOwnIndex(t, r, data, comp)
}

// TestDecodeMarkers decodes from every dynamic block header of a stream
// with the window unknown, into a small buffer (so that it slides), and
// checks the window it gives against the stream's output; from the last
// blocks the window cannot clear before the stream ends.
func TestDecodeMarkers(t *testing.T) {
	data := mixed(1<<20, 13)
	comp := deflate(t, data, 6)
	type header struct{ bit, out int64 }
	var headers []header
	d := newDecoder()
	d.resetStream(bytes.NewReader(comp))
	d.out = make([]byte, len(data)+1+outSlack)
	for d.state != stDone {
		if d.state == stHeader {
			headers = append(headers, header{d.bitPos(), int64(d.pos)})
			if err := d.readHeader(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		d.stopBit = d.bitPos() + 1
		if err := d.decode(len(d.out) - outSlack); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]uint16, windowSize+1000)
	var found, ended int
	for _, h := range headers {
		d := newDecoder()
		d.ra, d.raSize = bytes.NewReader(comp), int64(len(comp))
		if err := d.seekBit(h.bit, smallFill); err != nil {
			t.Fatal(err)
		}
		if err := d.readHeader(); err != nil || d.state != stHuff || d.lit != &d.dynLit {
			continue
		}
		lead, win, err := d.decodeMarkers(out, int64(len(comp))*8)
		if errors.Is(err, errNoStart) {
			ended++
			continue
		}
		if err != nil {
			t.Fatalf("block at bit %d: %v", h.bit, err)
		}
		at := h.out + lead
		if !bytes.Equal(win, data[at-windowSize:at]) {
			t.Fatalf("block at bit %d: the window after %d bytes is wrong", h.bit, lead)
		}
		found++
	}
	if found < 10 || ended == 0 {
		t.Fatalf("%d windows found, %d searches reached the end", found, ended)
	}
}
