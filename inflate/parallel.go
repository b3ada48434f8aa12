package inflate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync/atomic"

	"github.com/npzfs/npzfs/internal/crc"
	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/source"
)

// The parallel first pass (IndexAllParallel) splits the compressed
// stream into chunks and indexes them at once, one worker a core, as
// rapidgzip does for gzip files:
//
//  1. Starts. In each chunk but the first, a worker looks for a dynamic
//     Huffman block header: at every bit whose next bits could begin one
//     (a block that is not the last, counts in range, a complete code for
//     the code lengths) it reads the header, and decodes from there with
//     the 32 KiB before it unknown, into 16-bit values: a byte, or a
//     marker standing for a byte of the unknown window, which matches
//     copy as they copy bytes. Once the last 32 KiB decoded hold no
//     marker, the window there is known: that symbol boundary, a
//     checkpoint with its window, is where the chunk's run starts; the
//     output before it is its lead. A header that does not decode so
//     was a false find: the search goes on from the next bit, through
//     the chunk's first maxSearch bytes. A lead past the chunk's middle,
//     or over maxLead bytes, ends the search: the chunk has no start.
//  2. Runs. From each start (the first chunk's is the stream's), a
//     worker indexes as the sequential pass does, span by span, until it
//     reaches the next chunk's start: a block header at exactly the bit
//     where that chunk's search found one, then the chunk's start in
//     exactly its recorded state. Only then is that start proven (the
//     search may have found a false header that decoded): a run that
//     passes a start any other way goes on to the one after. The next
//     chunk's lead is so inflated twice, once with markers.
//  3. Stitching. From the first chunk, each run leads to the chunk whose
//     start it proved; their checkpoints, moved to absolute offsets, are
//     the index, and the output's length and CRC-32 (combined from the
//     runs') must be the declared ones.
//
// The workers take tasks in the order: chunk 0's run, chunk 1's start,
// chunk 1's run, chunk 2's start...; a run that needs a start no one has
// begun finds it itself, and waits for one begun by another worker
// (finding a start waits for nothing, so none waits forever).
//
// What the pass cannot do (a chunk where no start is found: no dynamic
// block, or markers that never clear, as in a run of one unknown byte; a
// stream error) falls to the runs before it or to the sequential pass,
// which finds and reports a stream's errors where they are.

const (
	// minChunk is the least compressed length of a chunk: a start's
	// lead is often MiBs long.
	minChunk = 4 << 20
	// chunksPerWorker: each chunk but the first costs its lead twice (up
	// to tens of MiB, where long matches keep copying unknown bytes), so
	// fewer chunks are faster on a member of one kind of data, as an
	// array is; more would balance better a member whose parts inflate
	// at different speeds.
	chunksPerWorker = 1
	// searchPiece is how much of a chunk a start's search reads at once;
	// maxSearch, how far it looks: deflaters end a Huffman block every
	// few tens of KiB, and a stream of stored blocks (incompressible
	// data) would cost seconds a chunk to search bit by bit.
	searchPiece = 256 << 10
	maxSearch   = 2 << 20
	// markerBuf is the length of the buffer a start's search decodes
	// into (see decodeMarkers).
	markerBuf = 1 << 20
	// maxLead bounds a start's lead: data of few, long runs (zeros)
	// inflates to GiBs a chunk, with markers that never clear.
	maxLead = 64 << 20
	// markerBase+k stands for byte k of the unknown window.
	markerBase = 256
)

// A chunkStart is where a chunk's run starts: cp (output offset 0),
// whose window is win, lead bytes of output after the block header at
// bit.
type chunkStart struct {
	ok   bool
	bit  int64
	lead int64
	cp   checkpoint
	win  []byte
}

// A chunkRun is what a run indexed: checkpoints from its start (output
// offsets from it, windows packed, span CRC-32s), size bytes of output
// with CRC-32 crc, ending at the start of chunk next, or at the stream's
// end (next -1).
type chunkRun struct {
	cps  []checkpoint
	size int64
	crc  uint32
	next int
	err  error
}

// parallelPass is one parallel first pass of a stream.
type parallelPass struct {
	s     *stream
	ctx   context.Context
	chunk int64
	// starts[i] is found by whoever claims it first, and is ready once
	// found[i] is closed.
	starts  []chunkStart
	claimed []atomic.Bool
	found   []chan struct{}
	runs    []chunkRun
	ran     []chan struct{} // ran[i] is closed once runs[i] is ready (helping only)
	// counts, when set, counts the output the runs indexed (for
	// Indexed).
	counts *atomic.Int64
}

// passWorker is what one worker reuses from task to task.
type passWorker struct {
	packer  windowPacker
	markers []uint16
	region  []byte
	buf     []byte
	touched []bool
	masked  []byte
}

// IndexAllParallel is IndexAll with the first pass shared among up to
// workers goroutines (see above), for a stream of at least two chunks,
// smaller than its output, whose index is not begun: the frontier's turn
// is held throughout, so a read past the index waits for the whole pass
// (npzfs index runs it; a mount indexes with IndexAll). A saved index is
// loaded first, as a read would; what the parallel pass does not index,
// the sequential pass does. It reports whether the parallel pass made
// the index.
func (r *ReaderAt) IndexAllParallel(ctx context.Context, workers int) (split bool, err error) {
	return r.indexAllParallel(ctx, workers, minChunk)
}

// indexAllParallel is IndexAllParallel with chunks of at least
// chunk compressed bytes.
func (r *ReaderAt) indexAllParallel(ctx context.Context, workers int, chunk int64) (bool, error) {
	// A stream no smaller than its output is stored blocks, which
	// inflate at the speed of copying: there is nothing to split.
	if workers > 1 && r.csize >= 2*chunk && r.csize < r.size {
		if err := r.front.indexParallel(ctx, workers, chunk); err != nil {
			return false, err
		}
	}
	err := r.IndexAll(ctx)
	r.ix.mu.RLock()
	defer r.ix.mu.RUnlock()
	return r.ix.parallel, err
}

// indexParallel makes a fresh index by the parallel pass, holding the
// turn throughout. A saved index is loaded first, as a read would; an
// index made by the pass needs no more growing, and on any error but
// ctx's the sequential pass takes over.
func (f *frontier) indexParallel(ctx context.Context, workers int, chunk int64) error {
	if err := f.loadSaved(ctx); err != nil {
		return err
	}
	if err := f.take(ctx); err != nil {
		return err
	}
	defer f.release()
	first, fresh := f.ix.fresh()
	if !fresh {
		return nil
	}
	cps, split, err := firstPassParallel(f.s, ctx, first, workers, chunk, &f.ix.parallelDone)
	if err != nil {
		f.ix.parallelDone.Store(0)
		return ctx.Err() // nil: the sequential pass takes over
	}
	f.ix.install(cps, split)
	f.crcAcc = f.s.crc
	return nil
}

// firstPassParallel indexes s from its first checkpoint with up to
// threads goroutines, in chunks of at least chunk bytes, counting the
// output indexed in counts, and returns the complete index and whether
// it was split, or an error when it could not.
func firstPassParallel(s *stream, ctx context.Context, first checkpoint, threads int, chunk int64, counts *atomic.Int64) ([]checkpoint, bool, error) {
	n := int(min(s.csize/chunk, int64(threads*chunksPerWorker)))
	if n < 2 {
		return nil, false, errors.New("inflate: stream too short to split")
	}
	p := newPass(s, ctx, n, first)
	p.counts = counts
	ws := make([]passWorker, min(threads, n))
	// Task k is chunk (k+1)/2's start when k is odd, else its run.
	// Tasks left out, or cut short, leave ctx done.
	workers.Run(ctx, 2*n-1, len(ws), func(g, k int) {
		p.task(&ws[g], (k+1)/2, k%2 == 0)
	})
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	return p.stitch()
}

// newPass prepares a pass of s in n chunks, the first of which starts
// at first.
func newPass(s *stream, ctx context.Context, n int, first checkpoint) *parallelPass {
	p := &parallelPass{
		s:       s,
		ctx:     ctx,
		chunk:   (s.csize + int64(n) - 1) / int64(n),
		starts:  make([]chunkStart, n),
		claimed: make([]atomic.Bool, n),
		found:   make([]chan struct{}, n),
		runs:    make([]chunkRun, n),
		ran:     make([]chan struct{}, n),
	}
	for i := range p.found {
		p.found[i] = make(chan struct{})
		p.ran[i] = make(chan struct{})
	}
	p.starts[0] = chunkStart{ok: true, cp: first}
	p.claimed[0].Store(true)
	close(p.found[0])
	return p
}

// start returns chunk i's start: found by w, if no one has begun to
// (under the pass's context: a start is found whoever waits for it), or
// else once found, unless ctx is done first.
func (p *parallelPass) start(ctx context.Context, w *passWorker, i int) (*chunkStart, error) {
	if p.claimed[i].CompareAndSwap(false, true) {
		p.starts[i] = p.findStart(w, i)
		p.s.hooks.started(i, &p.starts[i])
		close(p.found[i])
		return &p.starts[i], nil
	}
	p.s.hooks.waiting(forStart)
	select {
	case <-p.found[i]:
		return &p.starts[i], nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// task runs task k of a pass with w: chunk i's start when run is not
// set, else its run (after its start), unless p.ctx is done.
func (p *parallelPass) task(w *passWorker, i int, run bool) {
	s, err := p.start(p.ctx, w, i)
	if run && err == nil && s.ok {
		p.runs[i] = p.run(w, i)
	}
}

// findStart searches chunk i for its start, reading it a piece at a
// time: a start is usually found in its first block.
func (p *parallelPass) findStart(w *passWorker, i int) chunkStart {
	from, to := int64(i)*p.chunk, min(int64(i+1)*p.chunk, p.s.csize)
	if w.region == nil {
		w.region = make([]byte, searchPiece+16)
		w.markers = make([]uint16, markerBuf)
	}
	src := source.WithContext(p.ctx, p.s.src)
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	d.r, d.ra, d.raSize = nil, src, p.s.csize
	d.touched, d.trackEnd, d.stopBit, d.out = nil, 0, 0, nil
	for off := from; off < min(to, from+maxSearch); off += searchPiece {
		// The piece and the 16 bytes after it, which a header at its
		// last bits may take.
		k, _ := src.ReadAt(w.region, off) // short at the stream's end
		region := w.region[:k]
		if p.ctx.Err() != nil {
			return chunkStart{}
		}
		for bit := int64(0); bit < min(searchPiece, to-off)*8; bit++ {
			if !maybeDynamicHeader(region, bit) {
				continue
			}
			// A start whose window clears only past the middle of the
			// chunk, or after maxLead bytes, would save its run little
			// and cost much: there is none.
			s, err := p.tryStart(d, w, off*8+bit, (from+to)/2*8)
			if err == nil {
				return s
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				return chunkStart{} // a read error, or no start to be had here
			}
		}
	}
	return chunkStart{}
}

// errNoStart stops a chunk's search: decoding from a valid header, the
// window did not clear of markers before the middle of the chunk,
// maxLead bytes of output, or the stream's end.
var errNoStart = errors.New("inflate: no start in the chunk")

// tryStart reads a block header at bit and decodes from it with markers
// (see decodeMarkers) until the window clears, giving up at endBit. A
// CorruptError means no block starts at bit.
func (p *parallelPass) tryStart(d *decoder, w *passWorker, bit, endBit int64) (chunkStart, error) {
	if err := d.seekBit(bit, smallFill); err != nil {
		return chunkStart{}, err
	}
	d.state, d.final = stHeader, false
	if err := d.readHeader(); err != nil {
		return chunkStart{}, err
	}
	if d.state != stHuff || d.lit != &d.dynLit || d.lens[256] == 0 {
		return chunkStart{}, &CorruptError{Offset: bit >> 3, Msg: "no end of block code"}
	}
	lead, win, err := d.decodeMarkers(w.markers, endBit)
	if err != nil {
		return chunkStart{}, err
	}
	return chunkStart{
		ok:   true,
		bit:  bit,
		lead: lead,
		cp:   d.checkpoint(0, windowSize),
		win:  win,
	}, nil
}

// maybeDynamicHeader reports whether the bits of b from bit on could
// begin a dynamic Huffman block that is not the last: block type 2,
// literal/length and distance counts in range, and code lengths for the
// code length alphabet that make a complete code. It reads 16 bytes past
// bit's byte; near b's end it says no.
func maybeDynamicHeader(b []byte, bit int64) bool {
	i := bit >> 3
	if i+16 > int64(len(b)) {
		return false
	}
	v := binary.LittleEndian.Uint64(b[i:]) >> uint(bit&7)
	// Bit 0 is BFINAL (0), bits 1-2 BTYPE (2, dynamic).
	if v&7 != 4 || (v>>3)&31 > 29 || (v>>8)&31 > 29 {
		return false
	}
	ncl := int(v>>13&15) + 4
	j := bit + 17
	c := binary.LittleEndian.Uint64(b[j>>3:]) >> uint(j&7)
	kraft := 0
	for k := range ncl {
		if l := c >> (3 * k) & 7; l != 0 {
			kraft += 128 >> l
		}
	}
	return kraft == 128
}

// decodeMarkers decodes from d's position, with the 32 KiB window before
// it unknown, into out after its first 32 KiB, which it fills with
// markers for the window's bytes (markerBase+k for byte k): a byte b is written as b,
// a match copies values as they are, and when out fills its last 32 KiB
// move to its front. It stops at the first symbol boundary where the
// last 32 KiB written hold no marker, and returns the output's length
// and those 32 KiB as bytes; errNoStart when the stream ends first, or
// the input passes endBit, or the output maxLead bytes.
func (d *decoder) decodeMarkers(out []uint16, endBit int64) (int64, []byte, error) {
	for k := range windowSize {
		out[k] = markerBase + uint16(k)
	}
	pos, clean := windowSize, windowSize // out[clean:pos] holds no marker
	var slid int64                       // values moved out of out
	for pos-clean < windowSize {
		if pos+258 > len(out) {
			if d.bitPos() > endBit || slid > maxLead {
				return 0, nil, errNoStart
			}
			k := pos - windowSize
			copy(out, out[k:pos])
			pos, clean, slid = windowSize, clean-k, slid+int64(k)
		}
		var err error
		switch d.state {
		case stHeader:
			err = d.readHeader()
		case stStored:
			if err = d.need(8); err == nil {
				out[pos] = uint16(d.bits & 0xff)
				d.consume(8)
				pos++
				if d.stored--; d.stored == 0 {
					d.finishBlock()
				}
			}
		case stHuff:
			switch {
			case d.inEnd-d.inPos < 8 && !d.inEOF:
				err = d.fill()
			case d.inEnd-d.inPos >= 8:
				pos, clean, err = d.markersFast(out, pos, clean)
			default:
				pos, clean, err = d.markerSym(out, pos, clean)
			}
		default:
			return 0, nil, errNoStart
		}
		if err != nil {
			return 0, nil, err
		}
	}
	win := make([]byte, windowSize)
	for k, v := range out[pos-windowSize : pos] {
		win[k] = byte(v)
	}
	return slid + int64(pos-windowSize), win, nil
}

// copyMarkers copies a match of length values from dist back at pos in
// out, and returns where out holds no marker from (clean, or past the
// last marker copied).
func copyMarkers(out []uint16, pos, dist, length, clean int) int {
	src := pos - dist
	if dist >= length {
		copy(out[pos:pos+length], out[src:src+length])
	} else {
		for k := range length {
			out[pos+k] = out[src+k]
		}
	}
	if src < clean {
		for k := pos + length - 1; k >= pos; k-- {
			if out[k] >= markerBase {
				return k + 1
			}
		}
	}
	return clean
}

// nextStart is the first chunk from k on with a start at or past bit,
// or -1; w finds the starts it needs that no one has begun, and waiting
// for the others ends when ctx is done.
func (p *parallelPass) nextStart(ctx context.Context, w *passWorker, k int, bit int64) (int, error) {
	for ; k < len(p.starts); k++ {
		s, err := p.start(ctx, w, k)
		if err != nil {
			return 0, err
		}
		if s.ok && s.bit >= bit {
			return k, nil
		}
	}
	return -1, nil
}

// heading is where decoding from a chunk heads: the next chunk's start,
// looked for at the first block header past the chunk's end, then met
// as a block header at that start's very bit, and proven when the span
// ending there ends in the start's recorded state.
type heading struct {
	chunk int   // the chunk decoding is in
	next  int   // the start it heads for: -2 not yet looked for, -1 none
	final int64 // once next's header is met: the output offset of its start; else -1
}

// decode decodes with d, from output offset out0 whose window is the
// first wl bytes of d.out, up to target or to the start headed for where
// it comes first, and returns the target it decoded to. w finds the
// starts that no one has begun; waiting for the others ends when ctx is
// done, leaving the heading as it was before the span.
func (h *heading) decode(ctx context.Context, p *parallelPass, w *passWorker, d *decoder, out0 int64, wl int, target int64) (int64, error) {
	if h.final >= 0 {
		target = min(target, h.final)
	}
	for {
		d.stopBit = 0
		switch {
		case h.final >= 0:
		case h.next == -2 && h.chunk+1 < len(p.starts):
			d.stopBit = int64(h.chunk+1) * p.chunk * 8
		case h.next >= 0:
			d.stopBit = p.starts[h.next].bit
		}
		err := d.decode(wl + int(target-out0))
		if err != nil || d.stopBit == 0 || d.pos >= wl+int(target-out0) || d.state != stHeader {
			d.stopBit = 0
			return target, err
		}
		// At a block header at or past the chunk's end, or the next
		// start's.
		if h.next >= 0 && d.bitPos() == d.stopBit {
			h.final = out0 + int64(d.pos-wl) + p.starts[h.next].lead
			target = min(target, h.final)
			continue
		}
		next, err := p.nextStart(ctx, w, max(h.chunk, h.next)+1, d.bitPos())
		if err != nil {
			d.stopBit = 0
			return target, err
		}
		h.next = next
	}
}

// arrived reports whether the span just decoded, ending at output offset
// end, ends at the start headed for in its recorded state; if not, the
// heading goes on to the start after it (see decode for w and ctx).
func (h *heading) arrived(ctx context.Context, p *parallelPass, w *passWorker, d *decoder, end int64) (bool, error) {
	if end == h.final && d.at(&p.starts[h.next].cp) {
		h.final = -1
		return true, nil
	}
	next, err := p.nextStart(ctx, w, h.next+1, d.bitPos())
	if err != nil {
		return false, err
	}
	h.next, h.final = next, -1
	return false, nil
}

// run indexes from chunk i's start to the next chunk's start it proves
// (or the stream's end), as extendOne does span by span; the decoder
// goes on from span to span, its window moved to the front of the
// buffer. It looks for that start at the first block header past chunk
// i's end.
func (p *parallelPass) run(w *passWorker, i int) (res chunkRun) {
	s := p.s
	res.next = -1
	cp := p.starts[i].cp
	cp.out = 0
	h := heading{chunk: i, next: -2, final: -1}
	if n := int(s.spanCost()); len(w.buf) < n {
		w.buf = make([]byte, n)
		w.touched = make([]bool, windowSize)
		w.masked = make([]byte, windowSize)
	}
	d := decoders.Get().(*decoder)
	defer func() {
		d.stopBit, d.touched, d.trackEnd, d.out = 0, nil, 0, nil
		decoders.Put(d)
	}()
	copy(w.buf, p.starts[i].win)
	if res.err = s.resume(p.ctx, d, &cp, w.buf); res.err != nil {
		return res
	}
	for {
		wl := int(cp.winLen)
		d.pos = wl
		clear(w.touched)
		d.touched, d.trackEnd = w.touched, wl
		if _, res.err = h.decode(p.ctx, p, w, d, cp.out, wl, cp.out+s.span); res.err != nil {
			return res
		}
		end := cp.out + int64(d.pos-wl)
		if end > s.size {
			res.err = ErrTooLong
			return res
		}
		p.record(w, &res, cp, d.pos, end)
		if d.state == stDone {
			res.size = end
			return res
		}
		if h.final >= 0 && end >= h.final {
			var at bool
			if at, res.err = h.arrived(p.ctx, p, w, d, end); res.err != nil {
				return res
			}
			if at {
				res.size, res.next = end, h.next
				return res
			}
		}
		nl := windowSize
		if i == 0 {
			nl = int(min(windowSize, end))
		}
		copy(w.buf, w.buf[d.pos-nl:d.pos])
		cp = d.checkpoint(end, int64(nl))
	}
}

// record adds to res the span of a run from cp, inflated into w.buf up
// to pos, ending at output offset end: its CRC-32, its window packed.
func (p *parallelPass) record(w *passWorker, res *chunkRun, cp checkpoint, pos int, end int64) {
	wl := int(cp.winLen)
	data := w.buf[wl:pos]
	cp.sum = crc32.ChecksumIEEE(data)
	res.crc = crc32.Update(res.crc, crc32.IEEETable, data)
	if maskWindow(w.masked, w.buf[:wl], w.touched[:wl]) {
		cp.win = w.packer.pack(w.masked[:wl])
	}
	res.cps = append(res.cps, cp)
	if p.counts != nil {
		p.counts.Add(end - cp.out)
	}
}

// stitch follows the runs from the first chunk's, and returns their
// checkpoints as one index, numbered and at absolute offsets, if they
// make the declared output, and whether there was more than one run
// (when no start was proven, the first chunk's run indexed it all, as
// the sequential pass would have).
func (p *parallelPass) stitch() ([]checkpoint, bool, error) {
	var cps []checkpoint
	var size int64
	var sum uint32
	runs := 0
	for i := 0; ; {
		run := &p.runs[i]
		runs++
		if run.err != nil {
			return nil, false, run.err
		}
		for _, cp := range run.cps {
			cp.out += size
			cp.seq = int64(len(cps))
			cps = append(cps, cp)
		}
		sum = crc.Combine(sum, run.crc, run.size)
		size += run.size
		if run.next < 0 {
			break
		}
		i = run.next
	}
	if size != p.s.size || sum != p.s.crc {
		return nil, false, fmt.Errorf("inflate: the parallel pass made %d bytes with CRC-32 %08x", size, sum)
	}
	return cps, runs > 1, nil
}
