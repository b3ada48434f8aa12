package inflate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The index file format, version 1: what MarshalIndex writes and
// LoadIndex reads. Every integer is little-endian.
//
//	offset  size  field
//	0       8     magic "NPZFSIDX"
//	8       4     version (1)
//	12      4     flags (0)
//	16      8     compressed size of the stream
//	24      8     inflated size
//	32      4     CRC-32 (IEEE) of the inflated bytes
//	36      4     number of checkpoints N (at least 1)
//	40      ...   N checkpoints, each:
//	                8  output offset (the first is 0; increasing)
//	                8  bit position of the next symbol, block header
//	                   or stored byte in the compressed stream
//	                8  bit position of the current Huffman block's header
//	                4  bytes left in the current stored block
//	                1  state: 0 block header next, 1 in a stored block,
//	                   2 in a Huffman block
//	                1  1 if the current block is the final one
//	                2  zero
//	                4  window length: min(32768, output offset)
//	                4  CRC-32 (IEEE) of the output from this checkpoint
//	                   to the next (to the end, for the last)
//	                4  length L of the stored window
//	                L  the window: the 32 KiB of output before the
//	                   checkpoint with the bytes the span after it does
//	                   not read zeroed, as a raw DEFLATE stream (L = 0:
//	                   all zeros)
//	end     4     CRC-32C (Castagnoli) of everything before it
//
// The index is complete: the last checkpoint's span ends the stream. A
// loaded index is trusted only as far as each span it yields inflates to
// exactly the bytes its CRC-32 says; anything else discards it.
const (
	indexMagic   = "NPZFSIDX"
	indexVersion = 1
	indexHeader  = 40
	indexCPFixed = 44
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadIndex reports an index that does not fit the stream it was loaded
// for (LoadIndex), or a loaded checkpoint whose span did not inflate to
// what the index said (then the reader discards the whole loaded index
// and indexes the stream afresh).
var ErrBadIndex = errors.New("inflate: index does not match the stream")

// MarshalIndex returns the reader's index in the format above, or false
// when it is not complete (the stream has not been indexed to its end,
// or was found bad).
func (r *ReaderAt) MarshalIndex() ([]byte, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.done || r.err != nil {
		return nil, false
	}
	n := indexHeader + 4
	for _, cp := range r.cps {
		n += indexCPFixed + len(cp.win)
	}
	b := make([]byte, indexHeader, n)
	copy(b, indexMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], indexVersion)
	le.PutUint64(b[16:], uint64(r.csize))
	le.PutUint64(b[24:], uint64(r.size))
	le.PutUint32(b[32:], r.crc)
	le.PutUint32(b[36:], uint32(len(r.cps)))
	for _, cp := range r.cps {
		b = le.AppendUint64(b, uint64(cp.out))
		b = le.AppendUint64(b, uint64(cp.bit))
		b = le.AppendUint64(b, uint64(cp.block))
		b = le.AppendUint32(b, uint32(cp.stored))
		final := byte(0)
		if cp.final {
			final = 1
		}
		b = append(b, cp.state, final, 0, 0)
		b = le.AppendUint32(b, uint32(cp.winLen))
		b = le.AppendUint32(b, cp.sum)
		b = le.AppendUint32(b, uint32(len(cp.win)))
		b = append(b, cp.win...)
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli)), true
}

// LoadIndex makes b, an index MarshalIndex wrote for this stream, the
// reader's index, so that a read anywhere inflates one span. It fails,
// changing nothing, when b is not a whole index of this stream's sizes
// and CRC, or when the reader's own index is complete. Each span of
// a loaded index is checked against its CRC-32 when it is inflated (and
// so inflated whole); on a mismatch, or a span that does not inflate,
// the loaded index is discarded and the stream indexed afresh, and
// Options.BadIndex is told.
func (r *ReaderAt) LoadIndex(b []byte) error {
	r.extMu.Lock()
	defer r.unlockExt()
	return r.loadIndexLocked(b)
}

// loadIndexLocked is LoadIndex with r.extMu held. What the reader has
// indexed so far (a prefix of the same stream) is replaced; reads going
// on keep the checkpoints they copied, which are as good.
func (r *ReaderAt) loadIndexLocked(b []byte) error {
	cps, err := parseIndex(b, r.csize, r.size, r.crc)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.err != nil {
		return errors.New("inflate: LoadIndex on a reader whose index is complete")
	}
	var win int64
	for _, cp := range cps {
		win += int64(len(cp.win))
	}
	if r.windows != nil && !r.released {
		r.windows.used.Add(win - r.winBytes)
	}
	r.cps, r.done, r.loaded = cps, true, true
	r.winBytes, r.pendingWin, r.stride = win, nil, 0
	return nil
}

func parseIndex(b []byte, csize, size int64, crc uint32) ([]checkpoint, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadIndex, fmt.Sprintf(format, args...))
	}
	le := binary.LittleEndian
	if len(b) < indexHeader+4 || string(b[:8]) != indexMagic {
		return nil, bad("not an index file")
	}
	if v := le.Uint32(b[8:]); v != indexVersion {
		return nil, bad("format version %d, want %d", v, indexVersion)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[len(b)-4:]) {
		return nil, bad("checksum mismatch (truncated or damaged)")
	}
	if le.Uint32(b[12:]) != 0 || int64(le.Uint64(b[16:])) != csize || int64(le.Uint64(b[24:])) != size || le.Uint32(b[32:]) != crc {
		return nil, bad("made for another stream")
	}
	n := int64(le.Uint32(b[36:]))
	if n < 1 || n > int64(len(body)-indexHeader)/indexCPFixed {
		return nil, bad("%d checkpoints", n)
	}
	cps := make([]checkpoint, 0, n)
	p := body[indexHeader:]
	for i := int64(0); i < n; i++ {
		if len(p) < indexCPFixed {
			return nil, bad("checkpoint %d truncated", i)
		}
		cp := checkpoint{
			seq:    i,
			out:    int64(le.Uint64(p)),
			bit:    int64(le.Uint64(p[8:])),
			block:  int64(le.Uint64(p[16:])),
			stored: int32(le.Uint32(p[24:])),
			state:  p[28],
			final:  p[29] == 1,
			winLen: int32(le.Uint32(p[32:])),
			sum:    le.Uint32(p[36:]),
			loaded: true,
		}
		wl := int64(le.Uint32(p[40:]))
		p = p[indexCPFixed:]
		if wl > int64(len(p)) {
			return nil, bad("checkpoint %d: window truncated", i)
		}
		if wl > 0 {
			cp.win = p[:wl:wl]
		}
		p = p[wl:]
		switch {
		case i == 0 && (cp.out != 0 || cp.bit != 0 || cp.state != stHeader):
			return nil, bad("first checkpoint is not the stream's start")
		case i > 0 && cp.out <= cps[i-1].out:
			return nil, bad("checkpoint %d: output offsets not increasing", i)
		case cp.out >= size && size > 0, cp.out < 0:
			return nil, bad("checkpoint %d: output offset %d past the size %d", i, cp.out, size)
		case cp.bit < 0 || cp.bit > csize*8 || cp.block < 0 || cp.block > cp.bit:
			return nil, bad("checkpoint %d: bit position outside the stream", i)
		case cp.state > stHuff || cp.stored < 0:
			return nil, bad("checkpoint %d: state %d", i, cp.state)
		case int64(cp.winLen) != min(windowSize, cp.out):
			return nil, bad("checkpoint %d: window of %d bytes", i, cp.winLen)
		case i > 0 && (cp.bit < cps[i-1].bit):
			return nil, bad("checkpoint %d: bit positions not increasing", i)
		}
		cps = append(cps, cp)
	}
	if len(p) != 0 {
		return nil, bad("%d bytes past the last checkpoint", len(p))
	}
	return cps, nil
}

// dropLoaded discards a loaded index that proved wrong, giving back its
// windows, so that the stream is indexed afresh from its start.
func (r *ReaderAt) dropLoaded(why error) {
	r.extMu.Lock()
	defer r.unlockExt()
	r.mu.Lock()
	if !r.loaded {
		r.mu.Unlock()
		return
	}
	r.loaded = false
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
	return r.extendTo(ctx, max(r.size-1, 0), max(r.size-1, 0))
}

// Indexed is how many bytes of output the index covers.
func (r *ReaderAt) Indexed() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.done {
		return r.size
	}
	return r.cps[len(r.cps)-1].out
}
