package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
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

// Value is a parsed Python literal: string, int64, bool, List, Tuple or
// *Dict, or nil for None (which numpy accepts only as a field title, where
// it means no title).
type Value any

// List is a Python list literal.
type List []Value

// Tuple is a Python tuple literal.
type Tuple []Value

// Dict is a Python dict literal, keys in source order (a repeated key is kept
// once, with its last value, as Python does).
type Dict struct {
	Keys    []Value
	Values  []Value
	offsets []int64 // stream offset of each value, when parsed from a header
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

// FormatError reports a malformed header: what is wrong, and where.
type FormatError struct {
	Offset int64 // byte offset in the .npy stream
	Msg    string
	Err    error // a sentinel such as ErrHeaderTooLong, or nil
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("npy: %s (at byte %d)", e.Msg, e.Offset)
}

func (e *FormatError) Unwrap() error { return e.Err }

// ErrHeaderTooLong is wrapped by the FormatError ReadHeader returns when
// the header length is over Options.MaxHeaderLen, so a caller can retry
// with a higher limit.
var ErrHeaderTooLong = errors.New("npy: header longer than the limit")

func formatErr(off int64, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// maxArrayDims is NPY_MAXDIMS: numpy cannot make an array with more
// dimensions, so such a header describes nothing numpy can load.
const maxArrayDims = 32

// prefixLen is the length of magic, version and HEADER_LEN for a version.
func prefixLen(major int) int64 {
	if major == 1 {
		return 10
	}
	return 12
}

// ReadHeader reads the magic, version, length and header dict from r and
// validates them. size is the total length of the stream when known (so a
// header claiming more bytes than exist fails without allocating), or -1.
// It reads no further than the end of the header.
//
// Every problem with the bytes is reported as a *FormatError; a failing
// reader's error is returned as is (wrapped), except that running out of
// bytes is a FormatError.
func ReadHeader(r io.Reader, size int64, opts *Options) (*Header, error) {
	maxLen := DefaultMaxHeaderLen
	if opts != nil && opts.MaxHeaderLen > 0 {
		maxLen = opts.MaxHeaderLen
	}
	var pre [12]byte
	if n, err := io.ReadFull(r, pre[:8]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if n < 6 && Magic[:n] != string(pre[:n]) {
				return nil, formatErr(0, "not a .npy stream: bad magic")
			}
			return nil, formatErr(int64(n), "truncated .npy prefix: %d of 8 bytes", n)
		}
		return nil, fmt.Errorf("npy: reading prefix: %w", err)
	}
	if string(pre[:6]) != Magic {
		return nil, formatErr(0, "not a .npy stream: bad magic %q", pre[:6])
	}
	major, minor := int(pre[6]), int(pre[7])
	if !(minor == 0 && major >= 1 && major <= 3) {
		return nil, formatErr(6, "unsupported format version %d.%d", major, minor)
	}
	plen := prefixLen(major)
	if n, err := io.ReadFull(r, pre[8:plen]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, formatErr(8+int64(n), "truncated header length field")
		}
		return nil, fmt.Errorf("npy: reading header length: %w", err)
	}
	var hlen int64
	if major == 1 {
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
	} else {
		hlen = int64(binary.LittleEndian.Uint32(pre[8:12]))
	}
	if hlen > int64(maxLen) {
		e := formatErr(8, "header length %d exceeds the limit of %d bytes", hlen, maxLen)
		e.Err = ErrHeaderTooLong
		return nil, e
	}
	if size >= 0 && plen+hlen > size {
		return nil, formatErr(8, "header length %d runs past the end of the %d-byte stream", hlen, size)
	}
	var text []byte
	if size >= 0 {
		text = make([]byte, hlen)
		if n, err := io.ReadFull(r, text); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, formatErr(plen+int64(n), "truncated header: %d of %d bytes", n, hlen)
			}
			return nil, fmt.Errorf("npy: reading header: %w", err)
		}
	} else {
		// Grow only as bytes arrive, so a lying length costs nothing.
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(r, hlen))
		if err != nil {
			return nil, fmt.Errorf("npy: reading header: %w", err)
		}
		if n < hlen {
			return nil, formatErr(plen+n, "truncated header: %d of %d bytes", n, hlen)
		}
		text = buf.Bytes()
	}
	h := &Header{Major: major, Minor: minor, HeaderLen: int(hlen), DataOffset: plen + hlen}
	if err := h.parse(text, plen); err != nil {
		return nil, err
	}
	return h, nil
}

// parse parses and validates the header dict text found at stream offset
// base.
func (h *Header) parse(text []byte, base int64) error {
	v, err := parseLiteral(text, base, h.Major == 3, h.Major < 3)
	if err != nil {
		return err
	}
	d, ok := v.(*Dict)
	if !ok {
		return formatErr(base, "header is not a dictionary")
	}
	var keys []string
	good := len(d.Keys) == 3
	for _, k := range d.Keys {
		s, isStr := k.(string)
		if !isStr {
			good = false
			keys = append(keys, reprShort(k))
			continue
		}
		keys = append(keys, pyStr(s))
		if s != "descr" && s != "fortran_order" && s != "shape" {
			good = false
		}
	}
	if !good {
		sort.Strings(keys)
		return formatErr(base, "header does not contain exactly the keys 'descr', 'fortran_order', 'shape': [%s]", strings.Join(keys, ", "))
	}
	shapeV, _ := d.Get("shape")
	shapeT, ok := shapeV.(Tuple)
	if !ok {
		return formatErr(d.offset("shape"), "shape is not a tuple of non-negative integers: %s", reprShort(shapeV))
	}
	if len(shapeT) > maxArrayDims {
		return formatErr(d.offset("shape"), "shape has %d dimensions; numpy arrays have at most %d", len(shapeT), maxArrayDims)
	}
	shape := make([]int64, len(shapeT))
	for i, e := range shapeT {
		n, ok := e.(int64)
		if !ok || n < 0 {
			return formatErr(d.offset("shape"), "shape is not a tuple of non-negative integers: %s", reprShort(shapeV))
		}
		shape[i] = n
	}
	fo, _ := d.Get("fortran_order")
	fortran, ok := fo.(bool)
	if !ok {
		return formatErr(d.offset("fortran_order"), "fortran_order is not a valid bool: %s", reprShort(fo))
	}
	descr, _ := d.Get("descr")
	dt, err := DTypeFromDescr(descr)
	if err != nil {
		return formatErr(d.offset("descr"), "descr: %v", err)
	}
	count, err := checkSizes(shape, dt.ItemSize)
	if err != nil {
		return formatErr(d.offset("shape"), "%v", err)
	}
	h.Descr, h.DType, h.FortranOrder, h.Shape, h.Count = descr, dt, fortran, shape, count
	return nil
}

// checkSizes returns the element count of shape and checks that the data
// size, and numpy's extent (the product of the non-zero dimensions times
// the itemsize, from which strides are made), fit in an int64.
func checkSizes(shape []int64, itemSize int64) (int64, error) {
	count := int64(1)
	extent := itemSize
	if extent == 0 {
		extent = 1
	}
	for _, n := range shape {
		if n == 0 {
			count = 0
			continue
		}
		if extent > math.MaxInt64/n {
			return 0, fmt.Errorf("array too big: shape %v with itemsize %d overflows 64 bits", shape, itemSize)
		}
		extent *= n
		if count != 0 {
			count *= n
		}
	}
	return count, nil
}

// DataLength is the number of bytes of array data: Count*ItemSize, or for
// object arrays the bytes of the pickle, size-DataOffset.
func (h *Header) DataLength(size int64) int64 {
	if h.DType != nil && h.DType.HasObject {
		return size - h.DataOffset
	}
	return h.Count * h.DType.ItemSize
}

// Strides are numpy's .strides for an array of this shape, itemsize and
// order: the step in bytes along each axis. numpy 1.24 gives every axis of
// an empty array (count 0) a stride of 0.
func (h *Header) Strides() []int64 {
	n := len(h.Shape)
	st := make([]int64, n)
	if h.Count == 0 {
		return st
	}
	step := h.DType.ItemSize
	axis := func(i int) {
		st[i] = step
		if h.Shape[i] != 0 {
			step *= h.Shape[i]
		}
	}
	if h.FortranOrder {
		for i := 0; i < n; i++ {
			axis(i)
		}
	} else {
		for i := n - 1; i >= 0; i-- {
			axis(i)
		}
	}
	return st
}

// Version is the format version as "1.0", "2.0" or "3.0".
func (h *Header) Version() string {
	return fmt.Sprintf("%d.%d", h.Major, h.Minor)
}
