package inflate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// The index file format, version 1: what MarshalIndex writes and
// LoadIndex reads. Every integer is little-endian. A header, a table of
// fixed-size checkpoint records, then the checkpoints' windows, so that a
// reader loads the table alone and each window when a span needs it.
//
//	header, 48 bytes:
//	0    8  magic "NPZFSIDX"
//	8    4  version (1)
//	12   4  flags: 1 for a partial index (see below), else 0
//	16   8  compressed size of the stream
//	24   8  inflated size
//	32   4  CRC-32 (IEEE) of the inflated bytes
//	36   4  number of checkpoints N (at least 1)
//	40   4  CRC-32C (Castagnoli) of bytes 0-39 and of the table
//	44   4  zero
//	table, N records of 56 bytes, in output order:
//	0    8  output offset (the first is 0; increasing)
//	8    8  bit position in the compressed stream of the next symbol,
//	        block header or stored byte
//	16   8  bit position of the current Huffman block's header
//	24   8  file offset of the checkpoint's window
//	32   4  bytes left in the current stored block
//	36   4  window length: min(32768, output offset)
//	40   4  CRC-32 (IEEE) of the output from this checkpoint to the
//	        next (to the end of the stream, for the last)
//	44   4  stored window size W (0: the window is all zeros)
//	48   1  state: 0 block header next, 1 in a stored block, 2 in a
//	        Huffman block
//	49   1  1 if the current block is the final one
//	50   6  zero
//	windows: each W bytes at its file offset, after the table: the 32
//	KiB of output before the checkpoint with the bytes the span after it
//	does not read zeroed, as a raw DEFLATE stream.
//
// A complete index's last checkpoint's span ends the stream. A partial
// index (flag 1) covers the stream up to its last checkpoint, the
// frontier, which has no span CRC-32 and no window: a reader that goes
// on from it first inflates the span before it (checked against its
// CRC-32), requires the decoder to end in the frontier's state, and takes
// the window from that span's output, which must be at least 32 KiB.
//
// A loaded index is trusted only as far as each span it yields inflates
// to exactly the bytes its CRC-32 says; anything else discards it.
const (
	indexMagic   = "NPZFSIDX"
	indexVersion = 1
	indexHeader  = 48
	indexRecord  = 56
	// maxIndexWindow bounds a stored window: 32 KiB deflated can grow a
	// little, never this much.
	maxIndexWindow = 64 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadIndex reports an index that does not fit the stream it was loaded
// for (LoadIndex), or a loaded checkpoint whose span did not inflate to
// what the index said (then the reader discards the whole loaded index
// and indexes the stream afresh).
var ErrBadIndex = errors.New("inflate: index does not match the stream")

// MarshalIndex returns the reader's index in the format above, or false
// when it is not complete (the stream has not been indexed to its end,
// or was found bad). It holds the whole index in memory: IndexSnapshot writes
// it out a window at a time.
func (r *ReaderAt) MarshalIndex() ([]byte, bool) { return marshal(r.IndexSnapshot()) }

// MarshalPartialIndex returns the reader's index so far as a partial
// index, or false when there is none to save (see PartialSnapshot).
func (r *ReaderAt) MarshalPartialIndex(minSpans int) ([]byte, bool) {
	return marshal(r.PartialIndexSnapshot(minSpans))
}

func marshal(x *IndexSnapshot, ok bool) ([]byte, bool) {
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	if _, err := x.WriteTo(&b); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// An IndexSnapshot is a reader's index as it was when taken (IndexSnapshot,
// PartialIndexSnapshot), for WriteTo to write in the format above.
type IndexSnapshot struct {
	r       *ReaderAt
	cps     []checkpoint
	src     io.ReaderAt // where loaded checkpoints' windows are
	partial bool
}

// IndexSnapshot takes the reader's complete index, or returns false when it
// is not complete (the stream has not been indexed to its end, or was
// found bad).
func (r *ReaderAt) IndexSnapshot() (*IndexSnapshot, bool) { return r.snapshot(false, 0) }

// PartialIndexSnapshot takes the reader's index so far as a partial index, or
// returns false when there is none to save: the index is complete (see
// IndexSnapshot), the stream bad, fewer than minSpans spans indexed, a last
// span shorter than a window, or nothing indexed past what was loaded.
func (r *ReaderAt) PartialIndexSnapshot(minSpans int) (*IndexSnapshot, bool) {
	return r.snapshot(true, minSpans)
}

func (r *ReaderAt) snapshot(partial bool, minSpans int) (*IndexSnapshot, bool) {
	r.mu.RLock()
	cps := slices.Clone(r.cps)
	src := r.indexSrc
	ok := r.done && r.err == nil
	if partial {
		k := len(cps) - 1
		ok = !r.done && r.err == nil && k >= max(1, minSpans) && len(cps) > r.loadedCPs &&
			!r.frontierLoaded && cps[k].out-cps[k-1].out >= windowSize
	}
	r.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if partial {
		last := &cps[len(cps)-1]
		last.win, last.sum, last.loaded, last.winSize = nil, 0, false, 0
	}
	return &IndexSnapshot{r: r, cps: cps, src: src, partial: partial}, true
}

// WriteTo writes the index to w. The windows are written one at a time,
// from memory or from the index file they were loaded from (which must
// still be readable), so that writing an index takes memory for its
// table, not for its windows.
func (x *IndexSnapshot) WriteTo(w io.Writer) (int64, error) {
	r, cps := x.r, x.cps
	sizes := make([]int32, len(cps))
	winOff := int64(indexHeader + indexRecord*len(cps))
	for i := range cps {
		cp := &cps[i]
		switch {
		case cp.pend != nil:
			sizes[i] = int32(len(cp.pend.wait()))
		case inFile(cp):
			sizes[i] = cp.winSize
		default:
			sizes[i] = int32(len(cp.win))
		}
	}
	le := binary.LittleEndian
	b := make([]byte, indexHeader, winOff)
	copy(b, indexMagic)
	le.PutUint32(b[8:], indexVersion)
	if x.partial {
		le.PutUint32(b[12:], 1)
	}
	le.PutUint64(b[16:], uint64(r.csize))
	le.PutUint64(b[24:], uint64(r.size))
	le.PutUint32(b[32:], r.crc)
	le.PutUint32(b[36:], uint32(len(cps)))
	for i, cp := range cps {
		b = le.AppendUint64(b, uint64(cp.out))
		b = le.AppendUint64(b, uint64(cp.bit))
		b = le.AppendUint64(b, uint64(cp.block))
		b = le.AppendUint64(b, uint64(winOff))
		b = le.AppendUint32(b, uint32(cp.stored))
		b = le.AppendUint32(b, uint32(cp.winLen))
		b = le.AppendUint32(b, cp.sum)
		b = le.AppendUint32(b, uint32(sizes[i]))
		final := byte(0)
		if cp.final {
			final = 1
		}
		b = append(b, cp.state, final, 0, 0, 0, 0, 0, 0)
		winOff += int64(sizes[i])
	}
	sum := crc32.Update(crc32.Checksum(b[:40], castagnoli), castagnoli, b[indexHeader:])
	le.PutUint32(b[40:], sum)
	written, err := w.Write(b)
	n := int64(written)
	if err != nil {
		return n, err
	}
	var buf []byte // a loaded window, read back from its file
	for i := range cps {
		cp := &cps[i]
		win := cp.win
		switch {
		case cp.pend != nil:
			win = cp.pend.wait()
		case inFile(cp):
			if x.src == nil {
				return n, fmt.Errorf("%w: its file is gone", ErrBadIndex)
			}
			buf = slices.Grow(buf[:0], int(cp.winSize))[:cp.winSize]
			if _, err := x.src.ReadAt(buf, cp.winOff); err != nil {
				return n, fmt.Errorf("%w: reading the window of the span at %d: %v", ErrBadIndex, cp.out, err)
			}
			win = buf
		}
		written, err := w.Write(win)
		n += int64(written)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// inFile reports a checkpoint whose window is in the index it was loaded
// from, not in memory.
func inFile(cp *checkpoint) bool { return cp.loaded && cp.winSize != 0 }

// wait returns the window once it is packed.
func (p *pendingWindow) wait() []byte {
	if testPendHook != nil {
		testPendHook()
	}
	<-p.done
	return p.win
}

// windowOf is a checkpoint's stored window: in memory, or read from the
// index it was loaded from.
func (r *ReaderAt) windowOf(cp *checkpoint) ([]byte, error) {
	if p := cp.pend; p != nil {
		return p.wait(), nil
	}
	if !inFile(cp) {
		return cp.win, nil
	}
	r.mu.RLock()
	src := r.indexSrc
	r.mu.RUnlock()
	if src == nil {
		return nil, fmt.Errorf("%w: its file is gone", ErrBadIndex)
	}
	w := make([]byte, cp.winSize)
	if _, err := src.ReadAt(w, cp.winOff); err != nil {
		return nil, fmt.Errorf("%w: reading the window of the span at %d: %v", ErrBadIndex, cp.out, err)
	}
	return w, nil
}

// LoadIndex makes the index that src holds (size bytes, as MarshalIndex
// wrote it for this stream) the reader's, so that a read anywhere
// inflates one span. Only the header and the table of checkpoints are
// read now: each window is read from src when its span is inflated, so
// src must stay readable while the reader is used (LoadIndex keeps it).
// It fails, changing nothing, when src does not hold an index of this
// stream's sizes and CRC, or when the reader's own index is complete.
// Each span of a loaded index is checked against its CRC-32 when it is
// inflated (and so inflated whole); on a mismatch, or a span that does
// not inflate, the loaded index is discarded and the stream indexed
// afresh, and Options.BadIndex is told.
func (r *ReaderAt) LoadIndex(src io.ReaderAt, size int64) error {
	r.extMu.Lock()
	defer r.unlockExt()
	return r.loadIndexLocked(src, size)
}

// loadIndexLocked is LoadIndex with r.extMu held. What the reader has
// indexed so far (a prefix of the same stream) is replaced; reads going
// on keep the checkpoints they copied, which are as good.
func (r *ReaderAt) loadIndexLocked(src io.ReaderAt, size int64) error {
	cps, partial, err := parseIndex(src, size, r.csize, r.size, r.crc)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.err != nil {
		return errors.New("inflate: LoadIndex on a reader whose index is complete")
	}
	if partial && cps[len(cps)-1].out <= r.cps[len(r.cps)-1].out {
		return nil // no further than this reader's own: keep that
	}
	if r.windows != nil && !r.released {
		r.windows.used.Add(-r.winBytes)
	}
	r.cps, r.done, r.loaded, r.indexSrc = cps, !partial, true, src
	r.winBytes, r.pendingWin, r.stride = 0, nil, 0
	r.frontierLoaded, r.loadedCPs = partial, len(cps)
	if partial {
		// The running CRC, from the loaded spans' CRCs: checked at the
		// end of the stream (a mismatch discards the loaded index).
		r.crcAcc = 0
		for i := 0; i+1 < len(cps); i++ {
			r.crcAcc = crc32Combine(r.crcAcc, cps[i].sum, cps[i+1].out-cps[i].out)
		}
	}
	return nil
}

// prepareFrontier, with r.extMu held, gives a frontier loaded from a
// partial index its window, before the index grows from it: the span
// before it is inflated from its own loaded checkpoint (so checked
// against its CRC-32), the decoder must end in the frontier's recorded
// state, and the span's last 32 KiB are the window. The span goes into
// the cache. Anything amiss discards the loaded index, and the stream is
// indexed afresh.
func (r *ReaderAt) prepareFrontier(ctx context.Context) error {
	r.mu.RLock()
	if !r.frontierLoaded {
		r.mu.RUnlock()
		return nil
	}
	k := len(r.cps) - 1
	prev, front := r.cps[k-1], r.cps[k]
	r.mu.RUnlock()
	s, err := r.inflateSpan(ctx, &prev, front.out, front.out, &front)
	if err != nil {
		if isCancel(err) || ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, ErrBadIndex) {
			err = fmt.Errorf("%w: the span before its frontier: %w", ErrBadIndex, err)
		}
		r.dropLoadedLocked(err)
		return nil
	}
	win := bytes.Clone(s.data[len(s.data)-windowSize:])
	r.cache.put(cacheKey{r.id, prev.out}, s)
	r.cache.release(s)
	r.mu.Lock()
	r.pendingWin, r.frontierLoaded = win, false
	r.mu.Unlock()
	return nil
}

// isLoaded reports an index from LoadIndex not discarded since.
func (r *ReaderAt) isLoaded() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.loaded
}

func parseIndex(src io.ReaderAt, size, csize, osize int64, crc uint32) (cps []checkpoint, partial bool, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadIndex, fmt.Sprintf(format, args...))
	}
	le := binary.LittleEndian
	var h [indexHeader]byte
	if size < indexHeader+indexRecord {
		return nil, false, bad("not an index file (%d bytes)", size)
	}
	if _, err := src.ReadAt(h[:], 0); err != nil {
		return nil, false, bad("reading it: %v", err)
	}
	if string(h[:8]) != indexMagic {
		return nil, false, bad("not an index file")
	}
	if v := le.Uint32(h[8:]); v != indexVersion {
		return nil, false, bad("format version %d, want %d", v, indexVersion)
	}
	n := int64(le.Uint32(h[36:]))
	if n < 1 || n > (size-indexHeader)/indexRecord {
		return nil, false, bad("%d checkpoints in %d bytes", n, size)
	}
	table := make([]byte, n*indexRecord)
	if _, err := src.ReadAt(table, indexHeader); err != nil {
		return nil, false, bad("reading its table: %v", err)
	}
	if crc32.Update(crc32.Checksum(h[:40], castagnoli), castagnoli, table) != le.Uint32(h[40:]) {
		return nil, false, bad("checksum mismatch (truncated or damaged)")
	}
	flags := le.Uint32(h[12:])
	partial = flags == 1
	if flags > 1 || int64(le.Uint64(h[16:])) != csize || int64(le.Uint64(h[24:])) != osize || le.Uint32(h[32:]) != crc {
		return nil, false, bad("made for another stream")
	}
	tableEnd := indexHeader + n*indexRecord
	cps = make([]checkpoint, 0, n)
	for i := int64(0); i < n; i++ {
		p := table[i*indexRecord:]
		cp := checkpoint{
			seq:     i,
			out:     int64(le.Uint64(p)),
			bit:     int64(le.Uint64(p[8:])),
			block:   int64(le.Uint64(p[16:])),
			winOff:  int64(le.Uint64(p[24:])),
			stored:  int32(le.Uint32(p[32:])),
			winLen:  int32(le.Uint32(p[36:])),
			sum:     le.Uint32(p[40:]),
			winSize: int32(le.Uint32(p[44:])),
			state:   p[48],
			final:   p[49] == 1,
			loaded:  true,
		}
		switch {
		case i == 0 && (cp.out != 0 || cp.bit != 0 || cp.state != stHeader):
			return nil, false, bad("first checkpoint is not the stream's start")
		case i > 0 && (cp.out <= cps[i-1].out || cp.bit < cps[i-1].bit):
			return nil, false, bad("checkpoint %d: offsets not increasing", i)
		case cp.out < 0 || (cp.out >= osize && osize > 0):
			return nil, false, bad("checkpoint %d: output offset %d past the size %d", i, cp.out, osize)
		case cp.bit < 0 || cp.bit > csize*8 || cp.block < 0 || cp.block > cp.bit:
			return nil, false, bad("checkpoint %d: bit position outside the stream", i)
		case cp.state > stHuff || cp.stored < 0 || p[49] > 1:
			return nil, false, bad("checkpoint %d: state %d", i, cp.state)
		case int64(cp.winLen) != min(windowSize, cp.out):
			return nil, false, bad("checkpoint %d: window of %d bytes", i, cp.winLen)
		case cp.winSize < 0 || cp.winSize > maxIndexWindow || (cp.winSize > 0 && (cp.winOff < tableEnd || cp.winOff > size-int64(cp.winSize))):
			return nil, false, bad("checkpoint %d: window outside the file", i)
		}
		cps = append(cps, cp)
	}
	if partial {
		// The frontier: no window of its own; the span before it makes
		// one, so it must be at least a window long.
		last := &cps[n-1]
		if n < 2 || last.winSize != 0 || last.winLen != windowSize || last.out-cps[n-2].out < windowSize {
			return nil, false, bad("partial index: its frontier cannot be resumed from")
		}
		last.sum = 0
	}
	return cps, partial, nil
}

// dropLoaded discards a loaded index that proved wrong, giving back its
// windows, so that the stream is indexed afresh from its start.
func (r *ReaderAt) dropLoaded(why error) {
	r.extMu.Lock()
	defer r.unlockExt()
	r.dropLoadedLocked(why)
}

// dropLoadedLocked is dropLoaded with r.extMu held.
func (r *ReaderAt) dropLoadedLocked(why error) {
	r.mu.Lock()
	if !r.loaded {
		r.mu.Unlock()
		return
	}
	r.loaded, r.indexSrc, r.frontierLoaded, r.loadedCPs = false, nil, false, 0
	if r.windows != nil && !r.released {
		r.windows.used.Add(-r.winBytes)
	}
	r.winBytes = 0
	r.cps = []checkpoint{{state: stHeader}}
	r.done, r.err, r.errAt, r.stride = false, nil, 0, 0
	r.pendingWin, r.crcAcc = nil, 0
	r.mu.Unlock()
	if r.badIndex != nil {
		r.badIndex(why)
	}
}

// crc32Combine returns the CRC-32 (IEEE) of a‖b from the CRC-32s of a
// and b and the length of b: the effect of len2 zero bytes on crc1 is a
// linear map over GF(2), applied by repeated squaring of the one-zero-bit
// operator (as zlib's crc32_combine does).
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reflected polynomial: one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // one zero byte, then 4, 16, ...
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}

// IndexAll extends the index to the end of the stream, checking its
// length and CRC-32, in the calling goroutine (no read-ahead, no span
// kept in the cache), unless ctx ends first: what npzfs index and a
// mount's background indexing run. Reads of the stream go on meanwhile,
// each waiting for no more than the span being indexed.
func (r *ReaderAt) IndexAll(ctx context.Context) error {
	off := max(r.size-1, 0)
	return r.extendFor(ctx, &outRange{start: off, end: off, background: true})
}

// Indexed is how many bytes of output the index covers.
func (r *ReaderAt) Indexed() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.done {
		return r.size
	}
	// A run from a start later found false counts bytes twice.
	return max(r.cps[len(r.cps)-1].out, min(r.parallelDone.Load(), r.size))
}
