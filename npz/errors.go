package npz

import (
	"context"
	"errors"
	"fmt"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// The errors of the zip layer, under the names npz has always given them.
type (
	// FormatError reports a malformed archive or member and the byte
	// offset in the archive file where it was found.
	FormatError = zip.FormatError
	// MethodError reports a member npzfs lists but cannot read: an
	// unsupported compression method, or encryption.
	MethodError = zip.MethodError
)

// MethodName names a zip compression method as APPNOTE does.
func MethodName(m uint16) string { return zip.MethodName(m) }

// InflateError reports a deflated member that cannot be read, naming each
// offset for what it is: where the damage was found in the member's
// inflated bytes, in its deflate stream, and where that stream byte lies
// in the archive file (each -1 when not known), or else where the read
// stopped in the member.
type InflateError struct {
	Member  string // the member's name in the archive
	ReadEnd int64  // where the read stopped, in the member
	Found   int64  // where the inflater found what is wrong, in the member
	Stream  int64  // that place in the member's deflate stream
	Archive int64  // Stream's byte in the archive file
	Err     error  // from package inflate
}

// newInflateError wraps err, from reading a deflated member whose
// compressed data starts at archive byte dataOff, stopped at byte end.
func newInflateError(name string, dataOff, end int64, err error) *InflateError {
	out, comp := inflate.Offsets(err)
	e := &InflateError{Member: name, ReadEnd: end, Found: out, Stream: comp, Archive: -1, Err: err}
	if comp >= 0 {
		e.Archive = dataOff + comp
	}
	return e
}

func (e *InflateError) Error() string {
	var where []string
	if e.Found >= 0 {
		where = append(where, fmt.Sprintf("at byte %d of the member", e.Found))
	} else {
		where = append(where, fmt.Sprintf("reading up to byte %d of the member", e.ReadEnd))
	}
	if e.Stream >= 0 {
		where = append(where, fmt.Sprintf("byte %d of its deflate stream, byte %d of the archive", e.Stream, e.Archive))
	}
	s := fmt.Sprintf("npz: %q: cannot inflate %s", e.Member, where[0])
	if len(where) > 1 {
		s += " (" + where[1] + ")"
	}
	return s + ": " + inflate.Cause(e.Err)
}

func (e *InflateError) Unwrap() error { return e.Err }

// passing reports an error that may pass, which nothing keeps: a source
// failing for now (source.ErrTransient), or the reader having given up
// (its context cancelled or past its deadline), which says nothing of
// the archive.
func passing(err error) bool {
	return errors.Is(err, source.ErrTransient) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// TruncatedError reports a .npy whose data ends before its header's
// shape and dtype say: the file (or member) was cut short.
type TruncatedError struct {
	What  string // "file" or "member"
	Need  int64  // bytes of data the header needs
	Start int64  // where the data starts
	End   int64  // where the file or member ends
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("npz: truncated: the header's shape and dtype need %d bytes of data from byte %d, but the %s ends at byte %d (%d bytes missing)",
		e.Need, e.Start, e.What, e.End, e.Need-(e.End-e.Start))
}
