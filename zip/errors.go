package zip

import (
	"fmt"
	"strconv"
)

// FormatError reports a malformed archive or member: what is wrong and the
// byte offset in the archive file where it was found. Err, when set, is the
// underlying cause (for example io.ErrUnexpectedEOF for an archive that is
// shorter than its central directory claims).
type FormatError struct {
	Offset int64
	Msg    string
	Err    error
}

func (e *FormatError) Error() string {
	s := "zip: " + e.Msg + " (at byte " + strconv.FormatInt(e.Offset, 10) + ")"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause, if any.
func (e *FormatError) Unwrap() error { return e.Err }

// MethodError reports a member that npzfs lists but cannot read: its
// compression method is neither stored (0) nor deflated (8), or it is
// encrypted.
type MethodError struct {
	Name      string // the member's name in the archive
	Method    uint16 // the compression method field
	Encrypted bool   // general-purpose flag bit 0 (or 6) is set
}

func (e *MethodError) Error() string {
	if e.Encrypted {
		return fmt.Sprintf("zip: member %q is encrypted", e.Name)
	}
	return fmt.Sprintf("zip: member %q uses compression method %d (%s), which npzfs cannot read",
		e.Name, e.Method, MethodName(e.Method))
}

// MethodName names a zip compression method as APPNOTE does.
func MethodName(m uint16) string {
	switch m {
	case 0:
		return "stored"
	case 1:
		return "shrunk"
	case 6:
		return "imploded"
	case 8:
		return "deflate"
	case 9:
		return "deflate64"
	case 12:
		return "bzip2"
	case 14:
		return "lzma"
	case 18:
		return "terse"
	case 19:
		return "lz77"
	case 93:
		return "zstd"
	case 94:
		return "mp3"
	case 95:
		return "xz"
	case 96:
		return "jpeg"
	case 97:
		return "wavpack"
	case 98:
		return "ppmd"
	case 99:
		return "aes"
	}
	return "method " + strconv.Itoa(int(m))
}
