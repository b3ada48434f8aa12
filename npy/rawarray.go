package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The RawArray format (the .ra files of the RawArray paper and its
// readers for C, Julia, Rust and MATLAB) is a header of 64-bit
// little-endian unsigned integers, then the array's bytes:
//
//	magic   RawArrayMagic, the ASCII bytes "rawarray"
//	flags   bit 0 set when the data is big-endian
//	eltype  RawArrayUser, RawArrayInt, RawArrayUint, RawArrayFloat or RawArrayComplex
//	elbyte  bytes per element
//	size    bytes of data
//	ndims   number of dimensions
//	dims    ndims integers, fastest-varying first
//
// Dimensions are listed fastest-varying first (column-major, as Julia and
// MATLAB index), so a C-order array of shape (a, b, c) has dims c, b, a
// and a Fortran-order one a, b, c: no byte of the data moves.
const (
	RawArrayMagic = 0x7961727261776172

	RawArrayUser    = 0 // records, strings, bool, datetimes: the reader decides
	RawArrayInt     = 1 // two's complement signed integers
	RawArrayUint    = 2 // unsigned integers
	RawArrayFloat   = 3 // IEEE 754 binary16, binary32, binary64
	RawArrayComplex = 4 // pairs of IEEE 754 floats, real part first

	// RawArrayFlagBigEndian is flags' bit 0.
	RawArrayFlagBigEndian = 1

	rawArrayFixed = 6 // header integers before the dims
)

// RawArrayHeaderLen is the length of the RawArray header of an array of
// ndim dimensions.
func RawArrayHeaderLen(ndim int) int64 { return 8 * int64(rawArrayFixed+ndim) }

// RawArrayType maps a dtype to its RawArray element type and flags, or
// reports why arrays of it have no faithful RawArray form: object
// arrays (their data is a pickle), elements of no bytes, and records whose
// fields have both byte orders (RawArray has one flag for the whole
// element). See docs/views.md for the table.
func (d *DType) RawArrayType() (eltype, flags uint64, err error) {
	if d.HasObject {
		return 0, 0, errors.New("an object array's data is a pickle, not raw values")
	}
	if d.ItemSize <= 0 {
		return 0, 0, errors.New("its elements have no bytes")
	}
	order, err := d.leafOrder()
	if err != nil {
		return 0, 0, err
	}
	if order == '>' {
		flags = RawArrayFlagBigEndian
	}
	if d.Record || d.Subarray != nil {
		return RawArrayUser, flags, nil
	}
	switch {
	case d.Kind == 'i':
		eltype = RawArrayInt
	case d.Kind == 'u':
		eltype = RawArrayUint
	case d.Kind == 'f' && (d.ItemSize == 2 || d.ItemSize == 4 || d.ItemSize == 8):
		eltype = RawArrayFloat
	case d.Kind == 'c' && (d.ItemSize == 8 || d.ItemSize == 16):
		eltype = RawArrayComplex
	default:
		// bool, bytes, str, void, datetime64, timedelta64, and the
		// platform's long double (not an IEEE interchange format).
		eltype = RawArrayUser
	}
	return eltype, flags, nil
}

// leafOrder is the byte order shared by every part of an element: '<',
// '>', or '|' when no part has one.
func (d *DType) leafOrder() (byte, error) {
	switch {
	case d.Subarray != nil:
		return d.Subarray.Base.leafOrder()
	case d.Record:
		order := byte('|')
		for _, f := range d.Fields {
			o, err := f.DType.leafOrder()
			if err != nil {
				return 0, err
			}
			if o == '|' {
				continue
			}
			if order != '|' && o != order {
				return 0, fmt.Errorf("its record has fields of both byte orders (%q)", f.Name)
			}
			order = o
		}
		return order, nil
	}
	if d.ByteOrder == '<' || d.ByteOrder == '>' {
		return d.ByteOrder, nil
	}
	return '|', nil
}

// RawArrayHeader is the RawArray header of the array h describes, or why
// it has no faithful RawArray form. The data that follows it is the npy
// data unchanged (Header.DataLength bytes from Header.DataOffset).
func (h *Header) RawArrayHeader() ([]byte, error) {
	if h.DType == nil {
		return nil, errors.New("npy: header has no dtype")
	}
	eltype, flags, err := h.DType.RawArrayType()
	if err != nil {
		return nil, err
	}
	dataLen := h.Count * h.DType.ItemSize
	n := len(h.Shape)
	b := make([]byte, 0, RawArrayHeaderLen(n))
	for _, v := range []uint64{RawArrayMagic, flags, eltype, uint64(h.DType.ItemSize), uint64(dataLen), uint64(n)} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	for i := range n {
		dim := h.Shape[n-1-i] // C order: the last axis varies fastest
		if h.FortranOrder {
			dim = h.Shape[i]
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(dim))
	}
	return b, nil
}
