package inflate

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/npzfs/npzfs/internal/crc"
	"github.com/npzfs/npzfs/internal/workers"
)

// Chunks describe a stream written in chunks that each inflate alone, as
// the SOZip profile writes a zip member: the writer flushes the stream
// after every Size bytes of output, a sync flush and then a full flush
// (two empty stored blocks, the second ending on a byte boundary, with no
// match reaching back past it), so that each chunk starts at a byte, with
// a block header, and inflates from an empty window. A reader given them
// (see ChunkSource) reads anywhere in the stream at once: its index is
// their starts, with no window to keep, and nothing is inflated before
// the chunk a read needs.
//
// They are not evidence, as a saved index is: nothing in them is checked
// against the stream but what inflating a chunk shows. Each span is
// inflated whole and must be exactly its length, followed by nothing but
// empty blocks up to the next chunk's start (by the end of the stream,
// for the last), and its CRC-32 is kept; the last span is served once
// the whole stream's CRC-32, from every span's, is the declared one (the
// spans not inflated yet are inflated then, on every core the
// HelperBudget allows), as a stream read to its end is. A span that fails
// any of that, or a CRC-32 that is not the declared one, drops the chunks
// (Progress.ChunksDropped): the stream is read from its start as without
// them, which either serves the bytes they misplaced or finds the
// stream's own error.
type Chunks struct {
	// Size is how many bytes of output each chunk but the last holds.
	Size int64
	// Starts is where each chunk but the first starts in the compressed
	// stream, in bytes, rising (the first starts at 0).
	Starts []int64
}

// A ChunkSource is an IndexSource that may know its stream's Chunks: the
// reader asks it for them when it would ask for a saved index (before
// it), and asks OpenIndex only once it has none, or they are refused or
// dropped.
type ChunkSource interface {
	IndexSource
	// OpenChunks returns the stream's chunks; or an error wrapping
	// fs.ErrNotExist when it has none (not asked again); or another
	// error when it cannot tell now, which is taken as OpenIndex's would
	// be (a *Pending, or a failure asked again after a backoff).
	OpenChunks(ctx context.Context) (*Chunks, error)
}

// ErrBadChunks reports chunks that cannot be the stream's (see
// Progress.ChunksDropped).
var ErrBadChunks = errors.New("inflate: the chunk index does not match the stream")

// errChunkEnd is a chunk span that does not end where its chunks say:
// more than empty blocks before the next chunk's start, or a stream that
// does not end with the last.
var errChunkEnd = errors.New("inflate: the span does not end where its chunk index says")

// chunkTag marks the cache keys of spans inflated from a chunk index: a
// span from a start its chunks misplaced is never found by a read of the
// stream indexed from its start, after the chunks are dropped (output
// offsets stay below it: see chunkCheckpoints).
const chunkTag = 1 << 62

// spanKey is the key the span from cp has in the cache.
func spanKey(cp *checkpoint) int64 {
	if cp.chunk {
		return cp.out | chunkTag
	}
	return cp.out
}

// chunkSums are what a chunk index knows of its spans' CRC-32s: which
// spans have been inflated whole (their checkpoints' sum set), how many
// have not, and whether the stream's CRC-32 was found right.
type chunkSums struct {
	summed  []bool
	left    int
	checked bool
}

// chunkCheckpoints are the checkpoints of a chunk index of s: one every
// few chunks, so that a span is about s.span long (or one chunk, when
// chunks are longer), each at a block header with an empty window. It
// fails for chunks that cannot be s's.
func chunkCheckpoints(ch *Chunks, s *stream) ([]checkpoint, error) {
	switch {
	case ch.Size <= 0 || s.size >= chunkTag:
		return nil, fmt.Errorf("%w: chunks of %d bytes of %d", ErrBadChunks, ch.Size, s.size)
	case s.size <= ch.Size || int64(len(ch.Starts)) != (s.size-1)/ch.Size:
		return nil, fmt.Errorf("%w: %d starts for %d bytes in chunks of %d", ErrBadChunks, len(ch.Starts), s.size, ch.Size)
	}
	prev := int64(0)
	for i, c := range ch.Starts {
		if c <= prev || c >= s.csize {
			return nil, fmt.Errorf("%w: chunk %d starts at byte %d, not after %d and inside the %d bytes of the stream", ErrBadChunks, i+1, c, prev, s.csize)
		}
		prev = c
	}
	group := max(1, s.span/ch.Size)
	n := int64(len(ch.Starts)) + 1
	cps := make([]checkpoint, 0, (n+group-1)/group)
	for c := int64(0); c < n; c += group {
		cp := checkpoint{seq: int64(len(cps)), out: c * ch.Size, state: stHeader, loaded: true, chunk: true}
		if c > 0 {
			cp.bit = 8 * ch.Starts[c-1]
		}
		cps = append(cps, cp)
	}
	return cps, nil
}

// loadChunks makes ch the index, with the turn held, and reports
// whether it did: chunks that cannot be the stream's are refused
// (Progress.ChunksDropped says why), and an index complete already, or a
// stream found bad, keeps what it has.
func (f *frontier) loadChunks(ch *Chunks) bool {
	cps, err := chunkCheckpoints(ch, f.s)
	if err != nil {
		f.ix.chunksRefused(err)
		return false
	}
	return f.ix.loadChunks(cps)
}

// loadChunks makes cps, a chunk index's checkpoints, the index, whole,
// unless it is complete already or the stream was found bad; it reports
// whether it did. What the index held before (a prefix grown from the
// start) is replaced; reads going on keep the checkpoints they copied.
func (ix *index) loadChunks(cps []checkpoint) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.done || ix.err != nil {
		return false
	}
	ix.addWinBytes(-ix.winBytes)
	ix.cps, ix.done, ix.grown = cps, true, false
	sums := &chunkSums{summed: make([]bool, len(cps)), left: len(cps)}
	ix.loaded = &loadedIndex{n: len(cps), chunks: sums}
	ix.frontWin, ix.stride = nil, 0
	return true
}

// chunksRefused records why chunks were not used.
func (ix *index) chunksRefused(why error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.chunksDropped = why
}

// chunkSum records sum, the CRC-32 of the span of chunk checkpoint cp
// inflated whole, if cp is still in the index.
func (ix *index) chunkSum(cp *checkpoint, sum uint32) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	c := ix.chunkState()
	k := cp.seq
	if c == nil || k >= int64(len(ix.cps)) || ix.cps[k].out != cp.out || c.summed[k] {
		return
	}
	ix.cps[k].sum = sum
	c.summed[k] = true
	c.left--
}

// chunkState is the chunk index's sums, or nil when the index is not a
// chunk index. ix.mu is held.
func (ix *index) chunkState() *chunkSums {
	if ix.loaded == nil {
		return nil
	}
	return ix.loaded.chunks
}

// spanRef is an indexed span: its checkpoint, where its output ends and
// where its compressed bytes end.
type spanRef struct {
	cp          checkpoint
	end, endBit int64
}

// unsummed returns the spans of the chunk index whose CRC-32 is not
// known yet, of a stream of size bytes whose compressed bytes end at
// endBit; or done when there is nothing to check: the stream's CRC-32
// was found right, or the index is not a chunk index (any more).
func (ix *index) unsummed(size, endBit int64) (todo []spanRef, done bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	c := ix.chunkState()
	if c == nil || c.checked {
		return nil, true
	}
	for k, ok := range c.summed {
		if ok {
			continue
		}
		ref := spanRef{cp: ix.cps[k], end: size, endBit: endBit}
		if k+1 < len(ix.cps) {
			ref.end, ref.endBit = ix.cps[k+1].out, ix.cps[k+1].bit
		}
		todo = append(todo, ref)
	}
	return todo, false
}

// chunksCRC reports whether every span of the chunk index has its
// CRC-32 and, once they have, whether the stream's, combined from
// theirs, is want (then kept as checked). An index that is not a chunk
// index (any more) is fine.
func (ix *index) chunksCRC(size int64, want uint32) (all, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	c := ix.chunkState()
	switch {
	case c == nil || c.checked:
		return true, true
	case c.left > 0:
		return false, false
	}
	var acc uint32
	var shift *crc.Shift
	var shiftLen int64
	for k := range ix.cps {
		n := size - ix.cps[k].out
		if k+1 < len(ix.cps) {
			n = ix.cps[k+1].out - ix.cps[k].out
		}
		if n != shiftLen {
			shift, shiftLen = crc.NewShift(n), n
		}
		acc = shift.Apply(acc) ^ ix.cps[k].sum
	}
	c.checked = acc == want
	return true, c.checked
}

// checkChunks checks the stream's CRC-32 before a read is served the
// last span of a chunk index, as reaching the end of a stream read from
// its start does: the spans whose CRC-32 is not known yet are inflated
// whole (not cached), on as many goroutines as the HelperBudget has
// places for besides the read's own, and every span's CRC-32 is
// combined. A stream that does not have its declared CRC-32 drops the
// chunks (ErrBadIndex: the read looks again, and the stream is read
// from its start, which tells whether the stream or the chunks are
// wrong).
func (r *ReaderAt) checkChunks(ctx context.Context) error {
	todo, done := r.ix.unsummed(r.size, 8*r.csize)
	if done {
		return nil
	}
	if err := r.inflateAll(ctx, todo); err != nil {
		return err
	}
	if all, ok := r.ix.chunksCRC(r.size, r.crc); !all || !ok {
		// (Every span is summed once inflateAll succeeds: all is
		// false only were the index replaced meanwhile.)
		err := fmt.Errorf("%w: %w", ErrBadIndex, &OffsetError{Offset: r.size, Err: ErrChecksum})
		r.front.dropLoadedTurn(ctx, err, true)
		return err
	}
	return nil
}

// inflateAll inflates the spans todo whole, to know their CRC-32s, on
// one goroutine and as many more as the HelperBudget has places for,
// until the chunks are dropped; it returns ErrBadIndex when they were,
// else the first error in the spans' order.
func (r *ReaderAt) inflateAll(ctx context.Context, todo []spanRef) error {
	k := r.front.budget.take(len(todo) - 1)
	defer r.front.budget.give(k)
	errs := make([]error, len(todo))
	err := workers.Run(ctx, len(todo), k+1, func(_, i int) {
		if !r.ix.isChunks() {
			return // dropped: nothing left to check
		}
		t := &todo[i]
		s, err := r.fill(ctx, &t.cp, t.end, t.end, t.endBit)
		if err == nil {
			r.cache.release(s)
		}
		errs[i] = err
	})
	first := err
	for _, e := range errs {
		switch {
		case errors.Is(e, ErrBadIndex):
			return e
		case e != nil && first == nil:
			first = e
		}
	}
	if first == nil && !r.ix.isChunks() {
		first = fmt.Errorf("%w: the chunks were dropped", ErrBadIndex)
	}
	return first
}

// isChunks reports whether the index is a chunk index.
func (ix *index) isChunks() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.chunkState() != nil
}

// inflateChunk inflates the span [cp.out, end) of chunk checkpoint cp
// whole, from an empty window, reading the stream no further than
// endBit, where its compressed bytes end, into a span held for the
// caller; and checks that it is what the chunk index says (see
// decodeChunk).
func (s *stream) inflateChunk(ctx context.Context, cp *checkpoint, end, endBit int64) (*span, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	n := int(end - cp.out)
	buf := s.cache.alloc(n + 1 + outSlack)
	err := s.decodeChunk(ctx, d, cp, buf, n, end == s.size, endBit)
	d.out = nil
	if err != nil {
		s.cache.recycle(buf)
		return nil, err
	}
	return newSpan(buf, buf[:n:n]), nil
}

// decodeChunk is inflateChunk's work, with d and buf: the span must be
// exactly n bytes, followed by empty blocks alone (the flushes ending a
// chunk) up to a block header at endBit, or, for the last, by the end of
// the stream.
func (s *stream) decodeChunk(ctx context.Context, d *decoder, cp *checkpoint, buf []byte, n int, last bool, endBit int64) error {
	if err := s.resumeWithin(ctx, d, cp, buf, (endBit+7)>>3); err != nil {
		return decodeErr(d, err, cp.out)
	}
	if !last {
		d.stopBit = endBit // the next chunk's header
	}
	if err := d.decode(n); err != nil {
		return decodeErr(d, err, cp.out+int64(d.pos))
	}
	if d.pos != n {
		return &OffsetError{Offset: cp.out, Err: errSpanLength}
	}
	// One byte more is asked for: only empty blocks, then the next
	// chunk's header (or the stream's end), may come before it.
	if err := d.decode(n + 1); err != nil {
		return decodeErr(d, err, cp.out+int64(d.pos))
	}
	switch {
	case d.pos != n:
		return &OffsetError{Offset: cp.out + int64(n), Err: errSpanLength}
	case last && d.state != stDone, !last && (d.state != stHeader || d.bitPos() != endBit):
		return &OffsetError{Offset: cp.out + int64(n), Err: errChunkEnd}
	}
	return nil
}

// chunkFault reports an error inflating a chunk span that shows the
// chunks wrong (or the stream, which reading it from its start tells).
func chunkFault(err error) bool {
	return isStreamError(err) || errors.Is(err, errSpanLength) || errors.Is(err, errChunkEnd)
}

// chunkCRC is the CRC-32 of a chunk span's output.
func chunkCRC(s *span) uint32 { return crc32.ChecksumIEEE(s.data) }
