package npy

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// headerOf parses the header numpy would write for an array with this
// descr literal, order and shape.
func headerOf(t *testing.T, descr string, fortran bool, shape []int64) *Header {
	t.Helper()
	v, err := parseLiteral([]byte(descr), 0, true, false)
	if err != nil {
		t.Fatalf("descr %s: %v", descr, err)
	}
	b, err := EncodeHeader(v, fortran, shape)
	if err != nil {
		t.Fatalf("descr %s: %v", descr, err)
	}
	h, err := ReadHeader(bytes.NewReader(b), -1, nil)
	if err != nil {
		t.Fatalf("descr %s: %v", descr, err)
	}
	return h
}

// TestRawArrayTypes: every numpy kind maps to the element type, size and
// byte-order flag docs/views.md gives, or has no .ra for the reason given.
func TestRawArrayTypes(t *testing.T) {
	for _, tc := range []struct {
		descr         string
		eltype, flags uint64
		elbyte        int64
		noRA          string // substring of the reason there is no .ra
	}{
		{descr: "'|i1'", eltype: RawArrayInt, elbyte: 1},
		{descr: "'<i2'", eltype: RawArrayInt, elbyte: 2},
		{descr: "'>i4'", eltype: RawArrayInt, elbyte: 4, flags: 1},
		{descr: "'<i8'", eltype: RawArrayInt, elbyte: 8},
		{descr: "'|u1'", eltype: RawArrayUint, elbyte: 1},
		{descr: "'>u2'", eltype: RawArrayUint, elbyte: 2, flags: 1},
		{descr: "'<u8'", eltype: RawArrayUint, elbyte: 8},
		{descr: "'<f2'", eltype: RawArrayFloat, elbyte: 2},
		{descr: "'>f4'", eltype: RawArrayFloat, elbyte: 4, flags: 1},
		{descr: "'<f8'", eltype: RawArrayFloat, elbyte: 8},
		{descr: "'<f16'", eltype: RawArrayUser, elbyte: 16}, // long double: not IEEE interchange
		{descr: "'<c8'", eltype: RawArrayComplex, elbyte: 8},
		{descr: "'>c16'", eltype: RawArrayComplex, elbyte: 16, flags: 1},
		{descr: "'<c32'", eltype: RawArrayUser, elbyte: 32},
		{descr: "'|b1'", eltype: RawArrayUser, elbyte: 1},
		{descr: "'|S7'", eltype: RawArrayUser, elbyte: 7},
		{descr: "'<U3'", eltype: RawArrayUser, elbyte: 12},
		{descr: "'>U3'", eltype: RawArrayUser, elbyte: 12, flags: 1},
		{descr: "'|V5'", eltype: RawArrayUser, elbyte: 5},
		{descr: "'<M8[ns]'", eltype: RawArrayUser, elbyte: 8},
		{descr: "'>m8[s]'", eltype: RawArrayUser, elbyte: 8, flags: 1},
		{descr: "[('a', '<i4'), ('b', '<f8')]", eltype: RawArrayUser, elbyte: 12},
		{descr: "[('a', '>i4'), ('s', '|S3')]", eltype: RawArrayUser, elbyte: 7, flags: 1},
		{descr: "[('a', '|u1'), ('b', '|S2')]", eltype: RawArrayUser, elbyte: 3},
		{descr: "[('a', '<i4'), ('b', [('c', '>f8')])]", noRA: "both byte orders"},
		{descr: "[('a', '<i4'), ('b', '>f8')]", noRA: "both byte orders"},
		{descr: "'|O'", noRA: "pickle"},
		{descr: "[('a', '<i4'), ('o', '|O')]", noRA: "pickle"},
		{descr: "'|S0'", noRA: "no bytes"},
	} {
		h := headerOf(t, tc.descr, false, []int64{2, 3})
		eltype, flags, err := h.DType.RawArrayType()
		if tc.noRA != "" {
			if err == nil || !strings.Contains(err.Error(), tc.noRA) {
				t.Errorf("%s: err %v, want %q", tc.descr, err, tc.noRA)
			}
			if _, err := h.RawArrayHeader(); err == nil {
				t.Errorf("%s: a RawArray header", tc.descr)
			}
			continue
		}
		if err != nil || eltype != tc.eltype || flags != tc.flags || h.DType.ItemSize != tc.elbyte {
			t.Errorf("%s: eltype %d flags %d elbyte %d, %v; want %d %d %d", tc.descr, eltype, flags, h.DType.ItemSize, err, tc.eltype, tc.flags, tc.elbyte)
		}
	}
}

// TestRawArrayHeader: the header's integers, with dimensions listed
// fastest-varying first: reversed for C order, as they are for Fortran
// order; none for a 0-d array.
func TestRawArrayHeader(t *testing.T) {
	for _, tc := range []struct {
		fortran bool
		shape   []int64
		dims    []uint64
	}{
		{false, []int64{2, 3, 5}, []uint64{5, 3, 2}},
		{true, []int64{2, 3, 5}, []uint64{2, 3, 5}},
		{false, []int64{7}, []uint64{7}},
		{false, []int64{}, nil},
		{false, []int64{4, 0}, []uint64{0, 4}},
	} {
		h := headerOf(t, "'>f4'", tc.fortran, tc.shape)
		b, err := h.RawArrayHeader()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != RawArrayHeaderLen(len(tc.shape)) {
			t.Errorf("%v: header of %d bytes", tc.shape, len(b))
		}
		var got []uint64
		for i := 0; i+8 <= len(b); i += 8 {
			got = append(got, binary.LittleEndian.Uint64(b[i:]))
		}
		count := uint64(1)
		for _, d := range tc.shape {
			count *= uint64(d)
		}
		want := append([]uint64{RawArrayMagic, RawArrayFlagBigEndian, RawArrayFloat, 4, 4 * count, uint64(len(tc.shape))}, tc.dims...)
		if len(got) != len(want) {
			t.Fatalf("%v: %d integers, want %d", tc.shape, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%v (fortran %v): integer %d is %d, want %d", tc.shape, tc.fortran, i, got[i], want[i])
			}
		}
		if string(b[:8]) != "rawarray" {
			t.Errorf("magic bytes %q", b[:8])
		}
	}
}
