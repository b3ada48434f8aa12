package inflate

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/internal/testfiles"
)

// chunked deflates data in chunks of size bytes as a SOZip writer does,
// and returns the stream and its chunks.
func chunked(t testing.TB, data []byte, size, level int) ([]byte, *Chunks) {
	t.Helper()
	comp, starts := testfiles.Chunked(t, data, size, level)
	return comp, &Chunks{Size: int64(size), Starts: starts}
}

// chunkSource is a ChunkSource of chunks and a saved index in memory
// (either nil for none), counting the times each is asked for.
type chunkSource struct {
	ch          *Chunks
	saved       savedBytes
	chunksAsked atomic.Int64
}

func (s *chunkSource) OpenChunks(context.Context) (*Chunks, error) {
	s.chunksAsked.Add(1)
	if s.ch == nil {
		return nil, fs.ErrNotExist
	}
	return s.ch, nil
}

func (s *chunkSource) OpenIndex(ctx context.Context) (io.ReaderAt, int64, error) {
	return s.saved.OpenIndex(ctx)
}

// chunkReader is a reader of data, deflated as comp, in spans of span
// bytes, asking src for its chunks, reading comp through the counter it
// returns.
func chunkReader(data, comp []byte, span int64, src IndexSource, crc uint32) (*ReaderAt, *countingSrc) {
	c := &countingSrc{r: bytes.NewReader(comp)}
	r := NewReaderAt(c, int64(len(comp)), int64(len(data)), crc,
		&Options{SpanSize: span, Index: src, HelperBudget: NewHelperBudget(4)})
	return r, c
}

// TestChunksReadAnywhere: a read deep into a chunked stream inflates the
// chunk it needs alone, reading its compressed bytes and no others, for
// chunks longer than a span and chunks a span holds several of; every
// byte is right, and the last span is served once the stream's CRC-32
// holds (reading the rest then).
func TestChunksReadAnywhere(t *testing.T) {
	data := noisyFloat32(4<<20, 71)
	for _, chunk := range []int{256 << 10, 32 << 10, 100000} {
		comp, ch := chunked(t, data, chunk, 6)
		r, c := chunkReader(data, comp, 128<<10, &chunkSource{ch: ch}, crc32.ChecksumIEEE(data))
		off := int64(len(data)) * 9 / 10
		p := make([]byte, 4096)
		if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+4096]) {
			t.Fatalf("chunks of %d: read at %d: %v, right bytes %v", chunk, off, err, bytes.Equal(p, data[off:off+4096]))
		}
		if p := r.Progress(); !p.Chunks || !p.Loaded || p.Complete || p.ChunksDropped != nil {
			t.Errorf("chunks of %d: progress %+v", chunk, p)
		}
		// The span is a chunk, or as many chunks as make 128 KiB.
		span := max(int64(chunk), int64(128<<10)/int64(chunk)*int64(chunk))
		perByte := float64(len(comp)) / float64(len(data))
		if n := c.bytes.Load(); float64(n) > 1.1*perByte*float64(span) {
			t.Errorf("chunks of %d: a read at 90%% read %d compressed bytes, for a span of %d (%d compressed in all)", chunk, n, span, len(comp))
		}
		got := make([]byte, len(data))
		if n, err := r.ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
			t.Fatalf("chunks of %d: whole read: %d, %v, right bytes %v", chunk, n, err, bytes.Equal(got, data))
		}
		if _, ok := r.MarshalIndex(); ok {
			t.Errorf("chunks of %d: a chunk index marshalled", chunk)
		}
		r.Release()
	}
}

// TestChunksCheckTheStreamsCRC: the last span of a chunked stream whose
// CRC-32 is not the declared one is not served from its chunks: they
// are dropped, and the stream read from its start finds the mismatch,
// as a stream without chunks does; the spans before it read right.
func TestChunksCheckTheStreamsCRC(t *testing.T) {
	data := noisyFloat32(1<<20, 72)
	comp, ch := chunked(t, data, 64<<10, 6)
	r, _ := chunkReader(data, comp, 64<<10, &chunkSource{ch: ch}, crc32.ChecksumIEEE(data)^1)
	last := int64(len(data)) - 100
	p := make([]byte, 100)
	if _, err := r.ReadAt(p, last); !errors.Is(err, ErrChecksum) {
		t.Fatalf("read of the last span: %v, want ErrChecksum", err)
	}
	if p := r.Progress(); p.Chunks || !errors.Is(p.ChunksDropped, ErrChecksum) {
		t.Errorf("progress %+v", p)
	}
	if _, err := r.ReadAt(p, 1000); err != nil || !bytes.Equal(p, data[1000:1100]) {
		t.Errorf("read of the first span: %v", err)
	}
}

// TestLyingChunksNeverGiveAWrongByte: chunks that are not the stream's
// (starts off by a byte, inside another chunk, of another stream, a
// chunk size that is not the writer's, starts that do not rise, too few
// or too many) give the stream's bytes at every offset, read in any
// order: they are refused, or dropped at the first span that is not what
// they say (or at the stream's CRC-32), and the stream read from its
// start. (Chunks of two of the writer's each are right: they are kept.)
func TestLyingChunksNeverGiveAWrongByte(t *testing.T) {
	data := mixed(1<<20, 73)
	comp, ch := chunked(t, data, 32<<10, 6)
	_, och := chunked(t, mixed(1<<20, 74), 32<<10, 6)
	shift := func(d int64) []int64 {
		s := make([]int64, len(ch.Starts))
		for i, c := range ch.Starts {
			s[i] = c + d
		}
		return s
	}
	every2 := func(s []int64) []int64 {
		var out []int64
		for i := 1; i < len(s); i += 2 {
			out = append(out, s[i])
		}
		return out
	}
	swapped := append([]int64(nil), ch.Starts...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	inside := append([]int64(nil), ch.Starts...)
	inside[9] = (inside[8] + inside[9]) / 2 // chunk 10: a span starts there
	cases := map[string]*Chunks{
		"starts one byte late":   {Size: ch.Size, Starts: shift(1)},
		"starts one byte early":  {Size: ch.Size, Starts: shift(-1)},
		"a start inside a chunk": {Size: ch.Size, Starts: inside},
		"another stream's":       och,
		"two chunks each":        {Size: 2 * ch.Size, Starts: every2(ch.Starts)},
		"half the chunk size":    {Size: ch.Size / 2, Starts: append(shift(0), shift(0)...)},
		"one chunk more":         {Size: ch.Size * 31 / 32, Starts: append(shift(0), int64(len(comp)-10))},
		"starts not rising":      {Size: ch.Size, Starts: swapped},
		"a start missing":        {Size: ch.Size, Starts: ch.Starts[1:]},
		"a start past the end":   {Size: ch.Size, Starts: append(shift(0)[:len(ch.Starts)-1], int64(len(comp)+5))},
		"no chunk size":          {Size: 0, Starts: ch.Starts},
	}
	for name, lie := range cases {
		r, _ := chunkReader(data, comp, 64<<10, &chunkSource{ch: lie}, crc32.ChecksumIEEE(data))
		rng := rand.New(rand.NewPCG(75, uint64(len(name))))
		for range 40 {
			off := rng.Int64N(int64(len(data)))
			n := min(1+rng.IntN(200<<10), len(data)-int(off))
			p := make([]byte, n)
			if _, err := r.ReadAt(p, off); err != nil && err != io.EOF {
				t.Fatalf("%s: read of %d at %d: %v", name, n, off, err)
			}
			if !bytes.Equal(p, data[off:off+int64(n)]) {
				t.Fatalf("%s: read of %d at %d: wrong bytes", name, n, off)
			}
		}
		if _, err := r.ReadAt(make([]byte, len(data)), 0); err != io.EOF {
			t.Fatalf("%s: whole read: %v", name, err)
		}
		p := r.Progress()
		if kept := name == "two chunks each"; p.Chunks != kept || (p.ChunksDropped == nil) != kept {
			t.Errorf("%s: progress %+v", name, p)
		}
		r.Release()
	}
}

// TestChunksOfADamagedStream: a byte changed in a chunked stream gives,
// at any offset read in any order, an error or, byte by byte, the
// stream's bytes or those the damaged stream inflates to from its start
// (what np.load's inflater would see: a change that keeps a stream valid
// shows only at its end; one in a chunk's flushes stops it there, where
// the next chunk still inflates alone), and a read of the whole stream
// fails.
func TestChunksOfADamagedStream(t *testing.T) {
	data := mixed(512<<10, 76)
	comp, ch := chunked(t, data, 16<<10, 6)
	rng := rand.New(rand.NewPCG(77, 1))
	for range 30 {
		bad := bytes.Clone(comp)
		bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		seen, _ := io.ReadAll(flate.NewReader(bytes.NewReader(bad)))
		r, _ := chunkReader(data, bad, 32<<10, &chunkSource{ch: ch}, crc32.ChecksumIEEE(data))
		for range 20 {
			off := rng.Int64N(int64(len(data)))
			p := make([]byte, min(1+rng.IntN(64<<10), len(data)-int(off)))
			n, err := r.ReadAt(p, off)
			if err != nil && err != io.EOF {
				continue
			}
			for i, b := range p[:n] {
				at := int(off) + i
				if b != data[at] && (at >= len(seen) || b != seen[at]) {
					t.Fatalf("read of %d at %d: byte %d is neither the stream's nor the damaged stream's", len(p), off, at)
				}
			}
		}
		if _, err := r.ReadAt(make([]byte, len(data)), 0); err == nil || err == io.EOF {
			t.Fatalf("whole read of a damaged stream: %v", err)
		}
		r.Release()
	}
}

// TestChunksLongRead: one read of a chunked stream, every span at once,
// gives the right bytes and gives back its helpers' places.
func TestChunksLongRead(t *testing.T) {
	data := noisyFloat32(4<<20, 78)
	comp, ch := chunked(t, data, 64<<10, 6)
	r, _ := chunkReader(data, comp, 64<<10, &chunkSource{ch: ch}, crc32.ChecksumIEEE(data))
	defer r.Release()
	// A first read past the first span has the chunks loaded.
	if _, err := r.ReadAt(make([]byte, 10), 1<<20); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)-1000)
	if n, err := r.ReadAt(got, 500); n != len(got) || err != nil || !bytes.Equal(got, data[500:len(data)-500]) {
		t.Fatalf("long read: %d, %v", n, err)
	}
	if b := r.front.budget.Busy(); b != 0 {
		t.Errorf("%d places of the budget still taken", b)
	}
}

// TestChunksBeforeTheSavedIndex: a ChunkSource is asked for its chunks
// first; one that has none is asked for its saved index, which is
// loaded; chunks dropped have it asked for its saved index then.
func TestChunksBeforeTheSavedIndex(t *testing.T) {
	data := mixed(2<<20, 79)
	comp, ch := chunked(t, data, 64<<10, 6)
	_, idx := indexed(t, data, comp, &Options{SpanSize: 128 << 10})
	crc := crc32.ChecksumIEEE(data)
	p := make([]byte, 1000)
	off := int64(len(data)) / 2

	none := &chunkSource{saved: savedBytes{b: idx}}
	r, _ := chunkReader(data, comp, 128<<10, none, crc)
	if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+1000]) {
		t.Fatalf("no chunks: %v", err)
	}
	if pr := r.Progress(); pr.Chunks || !pr.Loaded || none.chunksAsked.Load() != 1 || none.saved.asked.Load() != 1 {
		t.Errorf("no chunks: progress %+v, chunks asked %d, saved index asked %d", pr, none.chunksAsked.Load(), none.saved.asked.Load())
	}

	// The chunk at 128 KiB starts a span (two chunks of 64 KiB each).
	starts := append([]int64(nil), ch.Starts...)
	starts[1] += 3
	lying := &chunkSource{ch: &Chunks{Size: ch.Size, Starts: starts}, saved: savedBytes{b: idx}}
	r, _ = chunkReader(data, comp, 128<<10, lying, crc)
	at := 2*ch.Size + 10
	if _, err := r.ReadAt(p, at); err != nil || !bytes.Equal(p, data[at:at+1000]) {
		t.Fatalf("lying chunks: %v", err)
	}
	if pr := r.Progress(); pr.Chunks || pr.ChunksDropped == nil {
		t.Errorf("lying chunks: progress %+v", pr)
	}
	// The next read past the first span asks for the saved index.
	if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+1000]) {
		t.Fatalf("lying chunks, then: %v", err)
	}
	if pr := r.Progress(); !pr.Loaded || lying.saved.asked.Load() != 1 || lying.chunksAsked.Load() != 1 {
		t.Errorf("lying chunks, then: progress %+v, saved index asked %d, chunks %d", pr, lying.saved.asked.Load(), lying.chunksAsked.Load())
	}
}

// TestChunkSpanChecks: decodeChunk refuses a span that inflates to more
// or fewer bytes than its chunks say, or ends otherwise than with empty
// blocks up to the next chunk's header (or the stream's end).
func TestChunkSpanChecks(t *testing.T) {
	data := mixed(256<<10, 80)
	comp, ch := chunked(t, data, 64<<10, 6)
	s := &stream{src: bytes.NewReader(comp), csize: int64(len(comp)), size: int64(len(data)), span: 64 << 10, cache: NewCache(1 << 20)}
	at := func(i int) int64 {
		if i == 0 {
			return 0
		}
		return 8 * ch.Starts[i-1]
	}
	for _, tc := range []struct {
		name     string
		from, to int  // chunks
		n        int  // bytes it should inflate to
		last     bool // the span should end the stream
		want     error
	}{
		{"a chunk", 1, 2, 64 << 10, false, nil},
		{"two chunks", 1, 3, 128 << 10, false, nil},
		{"the last", 3, 4, 64 << 10, true, nil},
		{"one byte short", 1, 2, 64<<10 - 1, false, errSpanLength},
		{"one byte long", 1, 2, 64<<10 + 1, false, errSpanLength},
		{"the next chunk's data too", 1, 3, 64 << 10, false, errSpanLength},
		{"the stream's end as a chunk's", 3, 4, 64 << 10, false, errChunkEnd},
		{"ending the stream early", 2, 3, 64 << 10, true, ErrTooShort},
	} {
		cp := checkpoint{out: int64(tc.from) * ch.Size, bit: at(tc.from), state: stHeader, chunk: true}
		end := int64(len(comp)) * 8
		if tc.to <= len(ch.Starts) {
			end = at(tc.to)
		}
		err := s.decodeChunk(context.Background(), newDecoder(), &cp, make([]byte, tc.n+1+outSlack), tc.n, tc.last, end)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzChunks: chunks of a chunked stream with the chunk size and starts
// the fuzzer makes (from bytes: a size, then a start per 4 bytes, each
// a delta from the writer's start) never give a byte that is not the
// stream's: the stream is good, so every read succeeds, with its bytes.
func FuzzChunks(f *testing.F) {
	data := mixed(300_000, 81)
	comp, ch := chunked(f, data, 16<<10, 6)
	crc := crc32.ChecksumIEEE(data)
	f.Add([]byte{0, 0x40, 0, 0})                // the writer's own
	f.Add([]byte{0, 0x40, 0, 0, 1, 0, 0, 0})    // the first start a byte late
	f.Add([]byte{0, 0x80, 0, 0, 0xff, 0xff})    // twice the chunk size
	f.Add([]byte{0, 0x40, 0, 0, 0, 0, 0, 0x80}) // a start far off
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 {
			return
		}
		lie := &Chunks{Size: int64(binary.LittleEndian.Uint32(b)), Starts: append([]int64(nil), ch.Starts...)}
		if lie.Size > 0 && lie.Size != ch.Size {
			lie.Starts = lie.Starts[:min(len(lie.Starts), max(0, int((int64(len(data))-1)/lie.Size)))]
		}
		for i := 0; 4+4*i+4 <= len(b) && i < len(lie.Starts); i++ {
			lie.Starts[i] += int64(int32(binary.LittleEndian.Uint32(b[4+4*i:])))
		}
		r, _ := chunkReader(data, comp, 16<<10, &chunkSource{ch: lie}, crc)
		defer r.Release()
		for _, off := range []int64{150_000, int64(len(data)) - 1000, 20_000, 0, 299_000} {
			p := make([]byte, 1000)
			n, err := r.ReadAt(p, off)
			if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], data[off:off+int64(n)]) {
				t.Fatalf("ReadAt(1000 at %d) = %d, %v: not the stream's bytes", off, n, err)
			}
		}
	})
}

// TestChunksIndexAll: IndexAll of a chunked stream checks its CRC-32 by
// inflating every chunk (the index stays the chunks, and the last span
// is then served without another pass); a CRC-32 that does not hold
// drops them, and IndexAll fails as the stream read from its start does.
func TestChunksIndexAll(t *testing.T) {
	data := noisyFloat32(2<<20, 82)
	comp, ch := chunked(t, data, 64<<10, 6)
	crc := crc32.ChecksumIEEE(data)
	r, c := chunkReader(data, comp, 64<<10, &chunkSource{ch: ch}, crc)
	if err := r.IndexAll(context.Background()); err != nil {
		t.Fatalf("IndexAll: %v", err)
	}
	if p := r.Progress(); !p.Chunks || p.ChunksDropped != nil {
		t.Errorf("progress %+v", p)
	}
	before := c.bytes.Load()
	p := make([]byte, 100)
	if _, err := r.ReadAt(p, int64(len(data))-100); err != io.EOF || !bytes.Equal(p, data[len(data)-100:]) {
		t.Fatalf("last span: %v", err)
	}
	if n := c.bytes.Load() - before; n > int64(len(comp))/16 {
		t.Errorf("the last span, the stream checked, read %d compressed bytes of %d", n, len(comp))
	}
	bad, _ := chunkReader(data, comp, 64<<10, &chunkSource{ch: ch}, crc^1)
	if err := bad.IndexAll(context.Background()); !errors.Is(err, ErrChecksum) {
		t.Errorf("IndexAll with another CRC-32: %v", err)
	}
	if p := bad.Progress(); p.Chunks || p.ChunksDropped == nil {
		t.Errorf("with another CRC-32: progress %+v", p)
	}
}
