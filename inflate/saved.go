package inflate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/npzfs/npzfs/source"
)

// A saved index in use: loaded whole or in part by the frontier (which
// has the turn), checked span by span, and, when a span fails, judged:
// discarded, kept with the stream found damaged, or kept as it is.

// load is LoadIndex with the turn held, reading the index's table with
// ctx.
func (f *frontier) load(ctx context.Context, src io.ReaderAt, size int64) error {
	cps, partial, err := parseIndex(source.WithContext(ctx, src), size, f.s.csize, f.s.size, f.s.crc)
	if err != nil {
		return err
	}
	loaded, err := f.ix.load(cps, partial, src)
	if err != nil {
		return err
	}
	if loaded && partial {
		// The running CRC, from the loaded spans' CRCs: checked at the
		// end of the stream, as the stream's.
		f.crcAcc = f.ix.loadedSums()
	}
	return nil
}

// dropLoaded discards a loaded index that proved wrong, a chunk index
// or a saved one as chunks says, so that the stream is indexed afresh
// from its start; with the chunks gone, the IndexSource is asked for a
// saved index. The turn is held.
func (f *frontier) dropLoaded(why error, chunks bool) {
	if f.ix.drop(why, chunks) {
		f.crcAcc = 0
		if chunks {
			f.saved.reopen()
		}
	}
}

// dropLoadedTurn is dropLoaded for a read, which takes the turn, unless
// ctx is done first: the index is then dropped by the next read it
// fails.
func (f *frontier) dropLoadedTurn(ctx context.Context, why error, chunks bool) {
	if f.take(ctx) != nil {
		return
	}
	defer f.release()
	f.dropLoaded(why, chunks)
}

// prepareFrontier, with the turn held, gives a frontier loaded from a
// partial index its window, before the index grows from it: the span
// before it is inflated from its own loaded checkpoint (so checked
// against its CRC-32), the decoder must end in the frontier's recorded
// state, and the span's last 32 KiB are the window. The span goes into
// the cache. A failure is judged as a read's is (see judge): a bad index
// is discarded, and the stream indexed afresh.
func (f *frontier) prepareFrontier(ctx context.Context) error {
	prev, front, ok := f.ix.loadedFrontier()
	if !ok {
		return nil
	}
	win, err := f.ix.windowOf(ctx, &prev)
	var s *span
	if err == nil {
		s, err = f.s.inflateSpan(ctx, &prev, win, front.out, front.out, &front)
	}
	if err != nil {
		if isCancel(err) || ctx.Err() != nil {
			return err
		}
		switch judge(&prev, err) {
		case blameIndex:
			f.dropLoaded(asBadIndex(&prev, err), false)
			return nil
		case blameStream:
			err = damage(&prev, front.out, err)
			f.ix.damaged(err, prev.out)
		}
		return err
	}
	f.ix.setFrontWin(bytes.Clone(s.data[len(s.data)-windowSize:]))
	f.spans.put(prev.out, s)
	f.s.cache.release(s)
	return nil
}

// blame is whose fault a loaded span's failure is (see judge).
type blame int

const (
	blameNone   blame = iota // reading the source failed: the error passes, the index stays
	blameIndex               // the index is wrong: it is discarded
	blameStream              // the stream is not what the index was made from (ErrDamaged)
)

// judge says whose fault err is, an error (not a cancellation)
// inflating the span of loaded checkpoint cp. The index is evidence
// about the stream: when its own checksums hold, a span that does not
// inflate to what it records is the stream's fault, not the index's;
// unless the span's window is covered by no checksum (an index written
// before windows had them), when either may be at fault and the index is
// given up. A window that fails its checksum or does not inflate, and
// a span that does not end at the next checkpoint, are the index's
// fault. Chunks are no evidence: a chunk span that is not what they say
// is theirs (the stream read from its start then tells whether it is
// the stream's too). Any other error (reading the source: a network or
// I/O error, source.ErrChanged) is neither's.
func judge(cp *checkpoint, err error) blame {
	switch {
	case cp.chunk && chunkFault(err):
		return blameIndex
	case cp.chunk:
		return blameNone
	case errors.Is(err, ErrBadIndex):
		return blameIndex
	case !isStreamError(err) && !errors.Is(err, errSpanLength) && !errors.Is(err, errSpanCRC):
		return blameNone
	case cp.winSize > 0 && !cp.winSummed:
		return blameIndex
	}
	return blameStream
}

// asBadIndex is err, the index's fault, as ErrBadIndex.
func asBadIndex(cp *checkpoint, err error) error {
	if errors.Is(err, ErrBadIndex) {
		return err
	}
	return fmt.Errorf("%w: the span at %d: %w", ErrBadIndex, cp.out, err)
}

// damage is err, found inflating the span [cp.out, end) of a loaded
// index, as the DamageError it means.
func damage(cp *checkpoint, end int64, err error) error {
	var oe *OffsetError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &DamageError{Offset: cp.out, End: end, CompOffset: cp.compStart() >> 3, Err: err}
}
