package inflate

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Errors a ReaderAt reports besides *CorruptError. Each is wrapped with the
// offset it was found at; test with errors.Is.
var (
	// ErrTooLong: the stream inflates to more than the declared size.
	ErrTooLong = errors.New("inflate: stream is longer than its declared size")
	// ErrTooShort: the stream ends before the declared size. A truncated
	// compressed stream reports an error matching both ErrTooShort and
	// io.ErrUnexpectedEOF.
	ErrTooShort = errors.New("inflate: stream ends before its declared size")
	// ErrChecksum: the CRC-32 of the whole output does not match.
	ErrChecksum = errors.New("inflate: CRC-32 mismatch")
	// ErrDamaged: a span of a loaded index does not inflate to what the
	// index recorded of it (see DamageError).
	ErrDamaged = errors.New("inflate: the stream is damaged: it does not inflate to what its index recorded")
)

// A DamageError reports a stream whose bytes are not those its loaded
// index was made from: the span of output [Offset, End), whose
// compressed bytes start at CompOffset, did not inflate to the CRC-32
// the index records for it (or did not inflate at all, Err says how),
// though the index's own checksums hold and it was made for a stream of
// this length and CRC-32. The stream changed after the index was made
// (bit rot, tampering, a rewrite in place); that span and every later
// one fail with this error, and the index is kept. It matches
// ErrDamaged.
type DamageError struct {
	Offset, End int64 // the span, in the inflated output
	CompOffset  int64 // where its compressed bytes start
	Err         error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("inflate: the stream is damaged: output bytes %d to %d (compressed from byte %d) do not inflate as its index says: %v",
		e.Offset, e.End, e.CompOffset, e.Err)
}

func (e *DamageError) Unwrap() error { return e.Err }

func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// CorruptError reports invalid DEFLATE data at a byte offset of the
// compressed stream.
type CorruptError struct {
	Offset int64
	Msg    string
}

func (e *CorruptError) Error() string {
	return "inflate: corrupt input at compressed byte " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}

// OffsetError wraps an error a ReaderAt found with the offset of the
// inflated output at which it was found.
type OffsetError struct {
	Offset int64 // offset in the inflated output
	Err    error
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("inflate: at output offset %d: %v", e.Offset, e.Err)
}

func (e *OffsetError) Unwrap() error { return e.Err }

// truncatedError is how a ReaderAt reports compressed data that ends in the
// middle of the stream: it matches ErrTooShort and io.ErrUnexpectedEOF.
type truncatedError struct{ compOffset int64 }

func (e *truncatedError) Error() string {
	return "inflate: compressed data truncated at byte " + strconv.FormatInt(e.compOffset, 10) +
		" (" + io.ErrUnexpectedEOF.Error() + "): " + ErrTooShort.Error()
}

func (e *truncatedError) Is(target error) bool {
	return target == ErrTooShort || target == io.ErrUnexpectedEOF
}

// Offsets reports where err (an error of a ReaderAt, wrapped or not) was
// found: in the inflated output and in the compressed stream, each -1
// when err does not say.
func Offsets(err error) (out, comp int64) {
	out, comp = -1, -1
	var oe *OffsetError
	if errors.As(err, &oe) {
		out = oe.Offset
	}
	var de *DamageError
	if errors.As(err, &de) {
		out, comp = de.Offset, de.CompOffset
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		comp = ce.Offset
	}
	var te *truncatedError
	if errors.As(err, &te) {
		comp = te.compOffset
	}
	return out, comp
}

// Cause is what went wrong, without the offsets Offsets gives and without
// the package's prefix: "stream is longer than its declared size",
// "corrupt input: invalid distance", and so on.
func Cause(err error) string {
	for {
		switch e := err.(type) {
		case *OffsetError:
			err = e.Err
			continue
		case *DamageError:
			const what = "it does not inflate as its saved index records (the archive changed since it was indexed)"
			if e.Err == nil {
				return what
			}
			return what + ": " + Cause(e.Err)
		case *CorruptError:
			return "corrupt deflate data: " + e.Msg
		case *truncatedError:
			return "the compressed data ends early"
		case nil:
			return ""
		}
		return strings.TrimPrefix(err.Error(), "inflate: ")
	}
}
