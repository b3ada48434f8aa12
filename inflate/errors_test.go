package inflate

import (
	"fmt"
	"testing"
)

// TestOffsetsAndCause: what a ReaderAt reports says where (in the output,
// in the compressed stream) and what, whatever wraps it.
func TestOffsetsAndCause(t *testing.T) {
	for _, tc := range []struct {
		err       error
		out, comp int64
		cause     string
	}{
		{&OffsetError{Offset: 700, Err: ErrTooLong}, 700, -1, "stream is longer than its declared size"},
		{&OffsetError{Offset: 9, Err: &CorruptError{Offset: 5, Msg: "invalid distance"}}, 9, 5, "corrupt deflate data: invalid distance"},
		{&OffsetError{Offset: 1, Err: &truncatedError{compOffset: 77}}, 1, 77, "the compressed data ends early"},
		{&DamageError{Offset: 4096, End: 8192, CompOffset: 300}, 4096, 300, "it does not inflate as its saved index records (the archive changed since it was indexed)"},
		{&OffsetError{Offset: 3, Err: ErrChecksum}, 3, -1, "CRC-32 mismatch"},
	} {
		out, comp := Offsets(tc.err)
		if out != tc.out || comp != tc.comp {
			t.Errorf("Offsets(%v) = %d, %d, want %d, %d", tc.err, out, comp, tc.out, tc.comp)
		}
		if got := Cause(tc.err); got != tc.cause {
			t.Errorf("Cause(%v) = %q, want %q", tc.err, got, tc.cause)
		}
		// Wrapped, the offsets are still found.
		if out, comp := Offsets(fmt.Errorf("read: %w", tc.err)); out != tc.out || comp != tc.comp {
			t.Errorf("Offsets of %v wrapped = %d, %d", tc.err, out, comp)
		}
	}
}
