package inflate

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/npzfs/npzfs/source"
)

// stream is what the parts of a ReaderAt share and none of them changes:
// the compressed stream, what it must inflate to, and the cache its
// spans go in.
type stream struct {
	src   io.ReaderAt
	csize int64  // compressed bytes
	size  int64  // the declared inflated size
	crc   uint32 // the declared CRC-32 of the inflated bytes
	span  int64  // output between checkpoints
	cache *Cache
	id    uint64 // the reader's part of the cache's keys
	hooks *testHooks
}

// spanCost is what inflating a span takes of the cache: its output, the
// window before it and the slack a decoder may write past it.
func (s *stream) spanCost() int64 { return s.span + windowSize + outSlack }

var decoders = sync.Pool{New: func() any { return newDecoder() }}

// resume prepares d to decode from cp into buf, whose first cp.winLen
// bytes the caller has filled with the window.
func (s *stream) resume(ctx context.Context, d *decoder, cp *checkpoint, buf []byte) error {
	return s.resumeWithin(ctx, d, cp, buf, s.csize)
}

// resumeWithin is resume for a decoder that reads the stream's first
// limit bytes alone (a chunk's, which it must not run past): its reads
// carry limit as their source.ReadLimit, so that a source reads no
// further ahead either.
func (s *stream) resumeWithin(ctx context.Context, d *decoder, cp *checkpoint, buf []byte, limit int64) error {
	if limit < s.csize {
		ctx = source.WithReadLimit(ctx, limit)
	}
	d.r, d.ra, d.raSize = nil, source.WithContext(ctx, s.src), limit
	d.out = buf
	d.pos = int(cp.winLen)
	d.minPos = 0
	d.trackEnd, d.stopBit = 0, 0
	d.bits, d.nb = 0, 0
	// What the checkpoint says of the current block, so that a decoder
	// from the pool carries nothing over into the next checkpoint (a
	// span that ends in the stored block it began in records its header).
	d.blockBit, d.stored, d.final = cp.block, int(cp.stored), cp.final
	switch cp.state {
	case stHeader:
		d.state = stHeader
		return d.seekBit(cp.bit, inBufSize)
	case stStored:
		d.state = stStored
		return d.seekBit(cp.bit, inBufSize)
	default:
		if err := d.seekBit(cp.block, smallFill); err != nil {
			return err
		}
		if err := d.readHeader(); err != nil {
			return err
		}
		if d.state != stHuff {
			return &CorruptError{Offset: cp.block >> 3, Msg: "checkpoint block is not a Huffman block"}
		}
		return d.seekBit(cp.bit, inBufSize)
	}
}

// inflateSpan inflates the indexed span [cp.out, end) from its
// checkpoint, whose packed window is win, as far as the first symbol
// boundary at or after target (end itself is one), into a span held for
// the caller. A loaded checkpoint's span is inflated whole (target is
// end) and its output checked against the CRC-32 stored with it.
//
// With check set, the decoder must end in check's state (its bit and
// block positions, block state), as when check was recorded: see
// frontier.prepareFrontier.
func (s *stream) inflateSpan(ctx context.Context, cp *checkpoint, win []byte, end, target int64, check *checkpoint) (*span, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	w := int(cp.winLen)
	n := int(target - cp.out)
	buf := s.cache.alloc(w + n + outSlack)
	sp, err := s.decodeSpan(ctx, d, cp, win, buf, end, target, check)
	d.out = nil
	if err != nil {
		s.cache.recycle(buf)
		return nil, err
	}
	return sp, nil
}

// decodeSpan is inflateSpan's work, with d and buf.
func (s *stream) decodeSpan(ctx context.Context, d *decoder, cp *checkpoint, win, buf []byte, end, target int64, check *checkpoint) (*span, error) {
	w := int(cp.winLen)
	n := int(target - cp.out)
	if err := unpackWindow(d, win, buf, w); err != nil {
		if cp.loaded {
			return nil, fmt.Errorf("%w: the window of the span at %d does not inflate", ErrBadIndex, cp.out)
		}
		return nil, err
	}
	if err := s.resume(ctx, d, cp, buf); err != nil {
		return nil, decodeErr(d, err, cp.out)
	}
	if err := d.decode(w + n); err != nil {
		return nil, decodeErr(d, err, cp.out+int64(d.pos-w))
	}
	got := d.pos - w
	if got < n || int64(got) > end-cp.out || (target == end && got != n) {
		return nil, &OffsetError{Offset: cp.out, Err: errSpanLength}
	}
	if cp.loaded && crc32.ChecksumIEEE(buf[w:w+got]) != cp.sum {
		return nil, errSpanCRC
	}
	if check != nil && !d.at(check) {
		return nil, fmt.Errorf("%w: the span at %d does not end where the next checkpoint says", ErrBadIndex, cp.out)
	}
	return newSpan(buf, buf[w:w+got:w+got]), nil
}

// at reports whether d is in the state cp recorded: at its bit, in its
// block, with what it says of that block.
func (d *decoder) at(cp *checkpoint) bool {
	return uint8(d.state) == cp.state && d.bitPos() == cp.bit && d.blockBit == cp.block &&
		int32(storedLeft(d)) == cp.stored && d.final == cp.final
}

// checkpoint records where d is, as at checks it, at output offset out
// with winLen bytes of window before it.
func (d *decoder) checkpoint(out, winLen int64) checkpoint {
	return checkpoint{out: out, bit: d.bitPos(), block: d.blockBit, stored: int32(storedLeft(d)),
		state: uint8(d.state), final: d.final, winLen: int32(winLen)}
}

// storedLeft is what a checkpoint records of d's stored block: the bytes
// left in it, or 0 outside one (where d.stored is what an earlier block
// left, which depends on the decoder's history, not the stream's).
func storedLeft(d *decoder) int {
	if d.state == stStored {
		return d.stored
	}
	return 0
}

// decodeErr is a decoding error as a ReaderAt reports it: with the
// output offset it was found at, a truncated stream as truncatedError.
func decodeErr(d *decoder, err error, outOff int64) error {
	if err == io.ErrUnexpectedEOF {
		return &OffsetError{Offset: outOff, Err: &truncatedError{compOffset: d.bitPos() >> 3}}
	}
	return &OffsetError{Offset: outOff, Err: err}
}

// Errors of a span inflated again from its checkpoint.
var (
	errSpanLength = errors.New("inflate: span does not reproduce its indexed length (source changed?)")
	errSpanCRC    = errors.New("inflate: the span does not inflate to its saved CRC-32")
)

// isCancel reports an error that ended a read because its context was done.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isStreamError reports an error in the stream itself, as opposed to one
// reading it: such errors stick (see index.fail).
func isStreamError(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) || errors.Is(err, ErrTooLong) || errors.Is(err, ErrTooShort) || errors.Is(err, ErrChecksum)
}
