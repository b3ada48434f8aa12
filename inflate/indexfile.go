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

	"github.com/npzfs/npzfs/source"
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
//	50   1  1 if bytes 52-55 hold the window's checksum, else 0
//	51   1  zero
//	52   4  CRC-32C of the W bytes of the stored window
//	windows: each W bytes at its file offset, after the table: the 32
//	KiB of output before the checkpoint with the bytes the span after it
//	does not read zeroed, as a raw DEFLATE stream.
//
// Indexes written before the windows' checksums have zeros in bytes
// 50-55: their windows are covered by no checksum. Readers of either
// kind read both (bytes 50-55 were zero and ignored).
//
// A complete index's last checkpoint's span ends the stream. A partial
// index (flag 1) covers the stream up to its last checkpoint, the
// frontier, which has no span CRC-32 and no window: a reader that goes
// on from it first inflates the span before it (checked against its
// CRC-32), requires the decoder to end in the frontier's state, and takes
// the window from that span's output, which must be at least 32 KiB.
//
// An index is evidence about the stream it was made for: once its own
// checksums hold (of its header and table, and of each window as it is
// read) and its sizes and CRC-32 are the stream's, a span that does not
// inflate to the CRC-32 it records means the stream changed, and the
// reader reports the stream damaged there (see ErrDamaged) and keeps the
// index. An index whose checksums fail, that was made for another
// stream, or whose checkpoints cannot be what they say (a window that
// does not inflate, a frontier the span before it does not end at) is
// discarded (ErrBadIndex). An index without windows' checksums cannot
// tell a damaged window from a damaged stream where a window is not
// empty: such a span's failure discards it, as a bad window would.
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
// for (LoadIndex), or one found wrong in use (see above): the reader
// then discards the whole loaded index and indexes the stream afresh.
var ErrBadIndex = errors.New("inflate: index does not match the stream")

// MarshalIndex returns the reader's index in the format above, or false
// when it is not complete (the stream has not been indexed to its end,
// or was found bad). It holds the whole index in memory: an
// IndexSnapshot writes it a window at a time.
func (r *ReaderAt) MarshalIndex() ([]byte, bool) { return marshal(r.IndexSnapshot()) }

// MarshalPartialIndex returns the reader's index so far as a partial
// index, or false when there is none to save (see PartialIndexSnapshot).
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

// An IndexSnapshot is a reader's index as it was when taken
// (IndexSnapshot, PartialIndexSnapshot), for WriteTo to write in the
// format above.
type IndexSnapshot struct {
	r       *ReaderAt
	cps     []checkpoint
	src     io.ReaderAt // the loaded index's file, where loaded windows are
	partial bool
}

// IndexSnapshot takes the reader's complete index, or returns false when
// it is not complete (the stream has not been indexed to its end, or was
// found bad).
func (r *ReaderAt) IndexSnapshot() (*IndexSnapshot, bool) {
	cps, src, ok := r.ix.snapshot(false, 0)
	if !ok {
		return nil, false
	}
	return &IndexSnapshot{r: r, cps: cps, src: src}, true
}

// PartialIndexSnapshot takes the reader's index so far as a partial
// index, or returns false when there is none to save: the index is
// complete (see IndexSnapshot), the stream bad, fewer than minSpans spans
// indexed, a last span shorter than a window, or nothing indexed past
// what was loaded.
func (r *ReaderAt) PartialIndexSnapshot(minSpans int) (*IndexSnapshot, bool) {
	cps, src, ok := r.ix.snapshot(true, minSpans)
	if !ok {
		return nil, false
	}
	last := &cps[len(cps)-1]
	last.win, last.pend, last.sum, last.loaded, last.winSize = nil, nil, 0, false, 0
	return &IndexSnapshot{r: r, cps: cps, src: src, partial: true}, true
}

// WriteTo writes the index to w. The windows are written one at a time,
// from memory or from the index file they were loaded from (which must
// still be readable), so that writing an index takes memory for its
// table and a window, not for all its windows. A loaded window is read
// twice when its index had no checksum for it (one is written in the
// table first).
func (x *IndexSnapshot) WriteTo(w io.Writer) (int64, error) {
	r, cps := x.r, x.cps
	sizes := make([]int32, len(cps))
	sums := make([]uint32, len(cps))
	var buf []byte // a loaded window, read back from its file
	for i := range cps {
		cp := &cps[i]
		if inFile(cp) && cp.winSummed {
			sizes[i], sums[i] = cp.winSize, cp.winSum
			continue
		}
		win, err := x.window(cp, &buf)
		if err != nil {
			return 0, err
		}
		sizes[i], sums[i] = int32(len(win)), crc32.Checksum(win, castagnoli)
	}
	le := binary.LittleEndian
	winOff := int64(indexHeader + indexRecord*len(cps))
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
		b = append(b, cp.state, final, 1, 0)
		b = le.AppendUint32(b, sums[i])
		winOff += int64(sizes[i])
	}
	sum := crc32.Update(crc32.Checksum(b[:40], castagnoli), castagnoli, b[indexHeader:])
	le.PutUint32(b[40:], sum)
	written, err := w.Write(b)
	n := int64(written)
	if err != nil {
		return n, err
	}
	for i := range cps {
		win, err := x.window(&cps[i], &buf)
		if err == nil && int32(len(win)) != sizes[i] {
			err = fmt.Errorf("%w: the window of the span at %d changed size", ErrBadIndex, cps[i].out)
		}
		if err != nil {
			return n, err
		}
		written, err := w.Write(win)
		n += int64(written)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// window is cp's packed window, from memory or read from the loaded
// index's file into *buf.
func (x *IndexSnapshot) window(cp *checkpoint, buf *[]byte) ([]byte, error) {
	switch {
	case cp.pend != nil:
		return cp.pend.wait(context.Background())
	case inFile(cp):
		return loadedWindow(context.Background(), cp, x.src, buf)
	case cp.loaded && cp.winSummed && cp.winSum != 0:
		return nil, badIndexf("the window of the span at %d fails its checksum", cp.out)
	}
	return cp.win, nil
}

// inFile reports a checkpoint whose window is in the index it was loaded
// from, not in memory.
func inFile(cp *checkpoint) bool { return cp.loaded && cp.winSize != 0 }

// loadedWindow reads a loaded checkpoint's window from src, the index's
// file, with ctx, into *buf, checking its checksum where the index has
// one.
func loadedWindow(ctx context.Context, cp *checkpoint, src io.ReaderAt, buf *[]byte) ([]byte, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: its file is gone", ErrBadIndex)
	}
	w := slices.Grow((*buf)[:0], int(cp.winSize))[:cp.winSize]
	*buf = w
	if _, err := source.ReadAt(ctx, src, w, cp.winOff); err != nil {
		return nil, indexReadErr(fmt.Sprintf("reading the window of the span at %d", cp.out), err)
	}
	if cp.winSummed && crc32.Checksum(w, castagnoli) != cp.winSum {
		return nil, badIndexf("the window of the span at %d fails its checksum", cp.out)
	}
	return w, nil
}

// windowOf is a checkpoint's packed window: in memory (once packed,
// waited for until ctx is done), or read from the index it was loaded
// from, checked against its checksum where the index has one.
func (ix *index) windowOf(ctx context.Context, cp *checkpoint) ([]byte, error) {
	if p := cp.pend; p != nil {
		ix.hooks.waiting(forWindow)
		return p.wait(ctx)
	}
	if !inFile(cp) {
		if cp.loaded && cp.winSummed && cp.winSum != 0 {
			return nil, badIndexf("the window of the span at %d fails its checksum", cp.out)
		}
		return cp.win, nil // a loaded frontier's, once it grew
	}
	ix.mu.RLock()
	var src io.ReaderAt
	if ix.loaded != nil {
		src = ix.loaded.src
	}
	ix.mu.RUnlock()
	var buf []byte
	return loadedWindow(ctx, cp, src, &buf)
}

// LoadIndex makes the index that src holds (size bytes, as MarshalIndex
// wrote it for this stream) the reader's, so that a read anywhere
// inflates one span. Only the header and the table of checkpoints are
// read now: each window is read from src when its span is inflated, so
// src must stay readable while the reader is used (LoadIndex keeps it).
// It fails, changing nothing, when src does not hold an index of this
// stream's sizes and CRC, or when the reader's own index is complete.
// Each span of a loaded index is checked against its CRC-32 when it is
// inflated (and so inflated whole): a span that fails is judged (see
// above), and the loaded index discarded only when it is at fault
// (Progress says why), the stream then indexed afresh.
func (r *ReaderAt) LoadIndex(src io.ReaderAt, size int64) error {
	r.front.take(context.Background()) // no error: it is never done
	defer r.front.release()
	return r.front.load(context.Background(), src, size)
}

// parseIndex reads the index that src holds (size bytes) for a stream
// of csize compressed bytes inflating to osize bytes with CRC-32 crc:
// its checkpoints, and whether it is partial.
func parseIndex(src io.ReaderAt, size, csize, osize int64, crc uint32) (cps []checkpoint, partial bool, err error) {
	table, partial, err := readIndexTable(src, size, csize, osize, crc)
	if err != nil {
		return nil, false, err
	}
	n := int64(len(table) / indexRecord)
	tableEnd := indexHeader + n*indexRecord
	cps = make([]checkpoint, 0, n)
	for i := int64(0); i < n; i++ {
		cp := parseRecord(table[i*indexRecord:], i)
		var prev *checkpoint
		if i > 0 {
			prev = &cps[i-1]
		}
		if err := checkRecord(&cp, prev, table[i*indexRecord+49], tableEnd, size, csize, osize); err != nil {
			return nil, false, err
		}
		cps = append(cps, cp)
	}
	if partial {
		// The frontier: no window of its own; the span before it makes
		// one, so it must be at least a window long.
		last := &cps[n-1]
		if n < 2 || last.winSize != 0 || last.winLen != windowSize || last.out-cps[n-2].out < windowSize {
			return nil, false, badIndexf("partial index: its frontier cannot be resumed from")
		}
		last.sum = 0
	}
	return cps, partial, nil
}

func badIndexf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadIndex, fmt.Sprintf(format, args...))
}

// indexReadErr is err, reading a saved index to do what, as ErrBadIndex
// unless it may pass (see passes).
func indexReadErr(what string, err error) error {
	if passes(err) {
		return fmt.Errorf("inflate: the saved index: %s: %w", what, err)
	}
	return badIndexf("%s: %v", what, err)
}

// readIndexTable reads and checks an index's header and returns its
// table of checkpoints, and whether the index is partial.
func readIndexTable(src io.ReaderAt, size, csize, osize int64, crc uint32) ([]byte, bool, error) {
	le := binary.LittleEndian
	var h [indexHeader]byte
	if size < indexHeader+indexRecord {
		return nil, false, badIndexf("not an index file (%d bytes)", size)
	}
	if _, err := src.ReadAt(h[:], 0); err != nil {
		return nil, false, indexReadErr("reading it", err)
	}
	if string(h[:8]) != indexMagic {
		return nil, false, badIndexf("not an index file")
	}
	if v := le.Uint32(h[8:]); v != indexVersion {
		return nil, false, badIndexf("format version %d, want %d", v, indexVersion)
	}
	n := int64(le.Uint32(h[36:]))
	if n < 1 || n > (size-indexHeader)/indexRecord {
		return nil, false, badIndexf("%d checkpoints in %d bytes", n, size)
	}
	table := make([]byte, n*indexRecord)
	if _, err := src.ReadAt(table, indexHeader); err != nil {
		return nil, false, indexReadErr("reading its table", err)
	}
	if crc32.Update(crc32.Checksum(h[:40], castagnoli), castagnoli, table) != le.Uint32(h[40:]) {
		return nil, false, badIndexf("checksum mismatch (truncated or damaged)")
	}
	flags := le.Uint32(h[12:])
	if flags > 1 || int64(le.Uint64(h[16:])) != csize || int64(le.Uint64(h[24:])) != osize || le.Uint32(h[32:]) != crc {
		return nil, false, badIndexf("made for another stream")
	}
	return table, flags == 1, nil
}

// parseRecord reads checkpoint i's record p.
func parseRecord(p []byte, i int64) checkpoint {
	le := binary.LittleEndian
	return checkpoint{
		seq:       i,
		out:       int64(le.Uint64(p)),
		bit:       int64(le.Uint64(p[8:])),
		block:     int64(le.Uint64(p[16:])),
		winOff:    int64(le.Uint64(p[24:])),
		stored:    int32(le.Uint32(p[32:])),
		winLen:    int32(le.Uint32(p[36:])),
		sum:       le.Uint32(p[40:]),
		winSize:   int32(le.Uint32(p[44:])),
		state:     p[48],
		final:     p[49] == 1,
		winSummed: p[50]&1 == 1,
		winSum:    le.Uint32(p[52:]),
		loaded:    true,
	}
}

// checkRecord checks that checkpoint cp, after prev (nil for the first),
// can be what it says in an index file of size bytes whose table ends at
// tableEnd; final is its record's final-block byte.
func checkRecord(cp, prev *checkpoint, final byte, tableEnd, size, csize, osize int64) error {
	i := cp.seq
	switch {
	case prev == nil && (cp.out != 0 || cp.bit != 0 || cp.state != stHeader):
		return badIndexf("first checkpoint is not the stream's start")
	case prev != nil && (cp.out <= prev.out || cp.bit < prev.bit):
		return badIndexf("checkpoint %d: offsets not increasing", i)
	case cp.out < 0 || (cp.out >= osize && osize > 0):
		return badIndexf("checkpoint %d: output offset %d past the size %d", i, cp.out, osize)
	case cp.bit < 0 || cp.bit > csize*8 || cp.block < 0 || cp.block > cp.bit:
		return badIndexf("checkpoint %d: bit position outside the stream", i)
	case cp.state > stHuff || cp.stored < 0 || final > 1:
		return badIndexf("checkpoint %d: state %d", i, cp.state)
	case int64(cp.winLen) != min(windowSize, cp.out):
		return badIndexf("checkpoint %d: window of %d bytes", i, cp.winLen)
	case cp.winSize < 0 || cp.winSize > maxIndexWindow || (cp.winSize > 0 && (cp.winOff < tableEnd || cp.winOff > size-int64(cp.winSize))):
		return badIndexf("checkpoint %d: window outside the file", i)
	}
	return nil
}

// IndexHeadLen is about how many bytes an index of a stream of size
// inflated bytes, with a checkpoint every span bytes, holds before its
// windows (its header and table, a few checkpoints to spare): what a
// reader of an index far away fetches at once, before LoadIndex reads it.
func IndexHeadLen(size, span int64) int64 {
	if span <= 0 {
		span = defaultSpan
	}
	n := size/span + 2
	return indexHeader + indexRecord*(n+n/16)
}

// CheckIndex reports whether src (size bytes) holds an index made for a
// stream of csize compressed bytes inflating to osize bytes with CRC-32
// crc, whose header and table are whole and hold (as LoadIndex checks
// them; its windows are checked when read), and whether it is partial.
func CheckIndex(src io.ReaderAt, size, csize, osize int64, crc uint32) (partial bool, err error) {
	_, partial, err = parseIndex(src, size, csize, osize, crc)
	return partial, err
}
