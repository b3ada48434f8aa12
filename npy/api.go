package npy

// This file fixes the API other packages build on. The implementation
// replaces the bodies; the signatures are the contract.

import (
	"errors"
	"fmt"
	"io"
)

// Magic is the first six bytes of every .npy stream.
const Magic = "\x93NUMPY"

// DefaultMaxHeaderLen bounds the header dictionary's length unless
// Options.MaxHeaderLen raises it: far above numpy's own 10,000-character
// safety limit, which numpy's 2.0 headers for wide records exceed.
const DefaultMaxHeaderLen = 1 << 20

// Options tune header reading. The zero value is the default.
type Options struct {
	// MaxHeaderLen is the longest header accepted, in bytes; 0 means
	// DefaultMaxHeaderLen.
	MaxHeaderLen int
}

// Value is a parsed Python literal: string, int64, bool, List, Tuple or *Dict.
type Value any

// List is a Python list literal.
type List []Value

// Tuple is a Python tuple literal.
type Tuple []Value

// Dict is a Python dict literal, keys in source order (a repeated key is kept
// once, with its last value, as Python does).
type Dict struct {
	Keys   []Value
	Values []Value
}

// Header is a parsed .npy header.
type Header struct {
	Major, Minor int   // format version: 1.0, 2.0 or 3.0
	HeaderLen    int   // the HEADER_LEN field: bytes of the dict, padding and newline
	DataOffset   int64 // where the array data starts, from the start of the stream
	Descr        Value // the descr literal as written
	DType        *DType
	FortranOrder bool
	Shape        []int64
	Count        int64 // product of Shape; 1 for a 0-d array
}

// DType is the data type a descr describes. Its full model is defined by the
// implementation; ItemSize and HasObject are what other packages rely on.
type DType struct {
	ItemSize  int64
	HasObject bool // object arrays (or records containing objects) hold a pickle, not raw data
}

// FormatError reports a malformed header: what is wrong, and where.
type FormatError struct {
	Offset int64 // byte offset in the .npy stream
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("npy: %s (at byte %d)", e.Msg, e.Offset)
}

var errUnimplemented = errors.New("npy: not implemented yet")

// ReadHeader reads the magic, version, length and header dict from r and
// validates them. size is the total length of the stream when known (so a
// header claiming more bytes than exist fails without allocating), or -1.
// It reads no further than the end of the header.
func ReadHeader(r io.Reader, size int64, opts *Options) (*Header, error) {
	return nil, errUnimplemented
}

// DataLength is the number of bytes of array data: Count*ItemSize, or for
// object arrays the bytes of the pickle, size-DataOffset.
func (h *Header) DataLength(size int64) int64 {
	if h.DType != nil && h.DType.HasObject {
		return size - h.DataOffset
	}
	return h.Count * h.DType.ItemSize
}

// JSON renders h as header.json (stable key order, pretty-printed, ending
// in a newline). size is the total length of the .npy stream.
func (h *Header) JSON(size int64) ([]byte, error) {
	return nil, errUnimplemented
}

// EncodeHeader returns the magic, version, length and padded header dict
// exactly as numpy 1.24+ writes them for an array with this descr (a Go
// string such as "<f4", or a List for records), order and shape.
func EncodeHeader(descr Value, fortranOrder bool, shape []int64) ([]byte, error) {
	return nil, errUnimplemented
}
