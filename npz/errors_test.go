package npz

import (
	"errors"
	"testing"

	"github.com/npzfs/npzfs/inflate"
)

// TestInflateError: a deflated member that cannot be read names each
// offset for what it is: in the member, in its deflate stream, and in the
// archive file.
func TestInflateError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&inflate.OffsetError{Offset: 4096, Err: &inflate.CorruptError{Offset: 1000, Msg: "invalid distance"}},
			`npz: "a.npy": cannot inflate at byte 4096 of the member (byte 1000 of its deflate stream, byte 1055 of the archive): corrupt deflate data: invalid distance`},
		{&inflate.OffsetError{Offset: 16000128, Err: inflate.ErrTooLong},
			`npz: "a.npy": cannot inflate at byte 16000128 of the member: stream is longer than its declared size`},
		{errors.New("connection refused"),
			`npz: "a.npy": cannot inflate reading up to byte 12 of the member: connection refused`},
	} {
		e := newInflateError("a.npy", 55, 12, tc.err)
		if e.Error() != tc.want || !errors.Is(e, tc.err) {
			t.Errorf("got  %s\nwant %s", e, tc.want)
		}
	}
}
