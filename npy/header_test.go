package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// mk builds a .npy prefix and header text exactly as given.
func mk(major int, text string) []byte {
	b := []byte(Magic)
	b = append(b, byte(major), 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	return append(b, text...)
}

func dictWith(descr, fortran, shape string) string {
	return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n"
}

// deepDescr nests records 5,000 deep.
var deepDescr = strings.Repeat("[('a', ", 5000) + "'<i4'" + strings.Repeat(")]", 5000)

// malformedHeaders are headers ReadHeader refuses, each with what its
// error says and where (offset -1: not checked).
var malformedHeaders = []struct {
	name   string
	data   []byte
	msg    string
	offset int64 // -1: do not check
}{
	{"empty stream", nil, "truncated .npy prefix", 0},
	{"bad magic", []byte("\x93NUMPX\x01\x00\x00\x00"), "bad magic", 0},
	{"not npy", []byte("PK\x03\x04"), "bad magic", 0},
	{"short prefix", []byte("\x93NUMPY\x01"), "truncated .npy prefix", 7},
	{"version 1.1", []byte("\x93NUMPY\x01\x01\x00\x00"), "unsupported format version 1.1", 6},
	{"version 4.0", []byte("\x93NUMPY\x04\x00\x00\x00\x00\x00"), "unsupported format version 4.0", 6},
	{"version 0.0", []byte("\x93NUMPY\x00\x00\x00\x00"), "unsupported format version 0.0", 6},
	{"short length", []byte("\x93NUMPY\x02\x00\x10\x00"), "truncated header length field", 10},
	{"past end", mk(1, "{}")[:11], "runs past the end of the 11-byte stream", 8},
	{"4 GiB claimed", append([]byte("\x93NUMPY\x02\x00\xf0\xff\xff\xff"), "{}"...), "exceeds the limit", 8},
	{"empty header", mk(1, ""), "header is empty", 10},
	{"blank header", mk(1, "   \n  "), "header is empty", 16},
	{"NUL", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\x00"), "NUL byte", 63},
	{"not a dict", mk(1, "[1, 2]"), "header is not a dictionary", 10},
	{"set", mk(1, "{'descr', 'shape'}"), "sets are not supported", 18},
	{"unhashable key", mk(1, "{[1]: 2}"), "unhashable dict key", 11},
	{"missing key", mk(1, "{'descr': '<i4', 'shape': ()}"), "exactly the keys 'descr', 'fortran_order', 'shape': ['descr', 'shape']", 10},
	{"extra key", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), 1: 2}"), "['descr', 'fortran_order', 'shape', 1]", 10},
	{"shape list", mk(1, dictWith("'<i4'", "False", "[3]")), "shape is not a tuple of non-negative integers: [3]", 60},
	{"shape int", mk(1, dictWith("'<i4'", "False", "(3)")), "shape is not a tuple of non-negative integers: 3", 60},
	{"shape negative", mk(1, dictWith("'<i4'", "False", "(2, -1)")), "(2, -1)", 60},
	{"shape bool", mk(1, dictWith("'<i4'", "False", "(True,)")), "(True,)", 60},
	{"shape float", mk(1, dictWith("'<i4'", "False", "(1.5,)")), "floating-point numbers are not allowed", 61},
	{"shape complex", mk(1, dictWith("'<i4'", "False", "(1j,)")), "complex numbers are not allowed", 61},
	{"shape expr", mk(1, dictWith("'<i4'", "False", "(1+1,)")), "unexpected \"+\", expected ',' or ')'", 62},
	{"shape 33 dims", mk(1, dictWith("'<i4'", "False", "("+strings.Repeat("1,", 33)+")")), "at most 32", 60},
	{"shape overflow", mk(1, dictWith("'<f8'", "False", "(4294967296, 4294967296)")), "overflows 64 bits", 60},
	{"int too big", mk(1, dictWith("'<f8'", "False", "(9223372036854775808,)")), "does not fit in 64 bits", 61},
	{"leading zero", mk(1, dictWith("'<f8'", "False", "(03,)")), "leading zeros", 61},
	{"L in v3", mk(3, dictWith("'<f8'", "False", "(3L,)")), "invalid integer literal \"3L\"", 63},
	{"lower l", mk(1, dictWith("'<f8'", "False", "(3l,)")), "invalid integer literal \"3l\"", 61},
	{"fortran int", mk(1, dictWith("'<i4'", "0", "()")), "fortran_order is not a valid bool: 0", 44},
	{"fortran None", mk(1, dictWith("'<i4'", "None", "()")), "fortran_order is not a valid bool: None", 44},
	{"shape None", mk(1, dictWith("'<i4'", "False", "(None,)")), "shape is not a tuple of non-negative integers: (None,)", 60},
	{"descr None", mk(1, dictWith("None", "False", "()")), "not a valid dtype descriptor: None", 20},
	{"field name None", mk(1, dictWith("[(('t', None), '<i4')]", "False", "()")), "field names must be strings", 20},
	{"descr unknown", mk(1, dictWith("'<i5'", "False", "()")), "descr: data type '<i5' not understood", 20},
	{"descr endian name", mk(1, dictWith("'<int16'", "False", "()")), "data type '<int16' not understood", 20},
	{"descr int", mk(1, dictWith("4", "False", "()")), "not a valid dtype descriptor: 4", 20},
	{"descr bytes", mk(1, dictWith("b'<i4'", "False", "()")), "unsupported string prefix \"b\"", 20},
	{"descr comma order", mk(1, dictWith("'i4,<>f8'", "False", "()")), "inconsistent byte-order specification < and >", 20},
	{"descr comma junk", mk(1, dictWith("'i4,f8;'", "False", "()")), "format number 2 of 'i4,f8;' is not recognized", 20},
	{"descr comma repeat", mk(1, dictWith("' 2 3i4,f8'", "False", "()")), "invalid repeat", 20},
	{"descr dup name", mk(1, dictWith("[('a', '<i4'), ('a', '<f4')]", "False", "()")), "field 1: name 'a' already used", 20},
	{"descr title clash", mk(1, dictWith("[(('a', 'a'), '<i4')]", "False", "()")), "title 'a' already used", 20},
	{"descr name int", mk(1, dictWith("[(1, '<i4')]", "False", "()")), "field names must be strings", 20},
	{"descr 4 items", mk(1, dictWith("[('a', '<i4', 2, 3)]", "False", "()")), "has 4 items, expected 2 or 3", 20},
	{"descr 1 item", mk(1, dictWith("[('a',)]", "False", "()")), "field 0 has 1 item, expected 2 or 3", 20},
	{"descr tuple of 1", mk(1, dictWith("('<i4',)", "False", "()")), "descr tuple needs a type and a shape, got 1 item", 20},
	{"descr sub negative", mk(1, dictWith("[('a', '<i4', -2)]", "False", "()")), "dimension smaller than zero", 20},
	{"descr sub too big", mk(1, dictWith("('<i4', (536870912,))", "False", "()")), "must fit into a C int", 20},
	{"descr record too big", mk(1, dictWith("[('a', 'S2147483647'), ('b', 'u1')]", "False", "()")), "record itemsize does not fit", 20},
	{"descr union", mk(1, dictWith("('<i4', '<f4')", "False", "()")), "invalid shape in fixed-type tuple: '<f4'", 20},
	{"descr flexible shape", mk(1, dictWith("('S0', (5,))", "False", "()")), "invalid itemsize in generic type tuple", 20},
	{"descr bad unit", mk(1, dictWith("'M8[B]'", "False", "()")), "invalid datetime unit", 20},
	{"descr bad divisor", mk(1, dictWith("'M8[3s/3]'", "False", "()")), "divisor (3) is not a multiple", 20},
	{"descr zero divisor", mk(1, dictWith("'M8[3s/0]'", "False", "()")), "zero divisor", 20},
	{"descr deep 5000", mk(2, dictWith(deepDescr, "False", "()")), "nested deeper than 64", 12 + 10 + 31*7 + 1},
	{"unterminated", mk(1, "{'descr': '<i4, 'fortran_order': False, 'shape': ()}"), "unexpected \"f\"", 27},
	{"unterminated at end", mk(1, "{'descr': '<i4"), "unterminated string literal", 20},
	{"string newline", mk(1, "{'descr': '<i\n4'}"), "unterminated string literal", 20},
	{"named escape", mk(1, dictWith("[('\\N{BULLET}', '<i4')]", "False", "()")), "\\N{...} escapes are not supported", 23},
	{"surrogate", mk(1, dictWith("[('\\ud800', '<i4')]", "False", "()")), "surrogate", 23},
	{"bad hex escape", mk(1, dictWith("'\\x4'", "False", "()")), "truncated \\x escape", 21},
	{"big U escape", mk(1, dictWith("'\\U00110000'", "False", "()")), "illegal Unicode character", 21},
	{"double comma", mk(1, "{'descr': '<i4',, 'fortran_order': False, 'shape': ()}"), "unexpected \",\"", 26},
	{"trailing junk", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()};"), "unexpected \";\" after the header literal", 63},
	{"second line", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\n{}"), "newline inside the header literal", 63},
	{"vertical tab", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\v"), "unexpected byte 0x0b", 63},
	{"indent", mk(1, "\n {'descr': '<i4', 'fortran_order': False, 'shape': ()}"), "unexpected indent", 12},
	{"continuation at end", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\\\n"), "line continuation at the end", 63},
	{"non-ASCII outside string", mk(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\xa0"), "unexpected byte 0xa0", 63},
	{"invalid utf-8 v3", mk(3, "{'descr': [('\xff', '<i4')], 'fortran_order': False, 'shape': ()}"), "not valid UTF-8", 12 + 13},
	{"call", mk(1, dictWith("dtype('<i4')", "False", "()")), "unsupported name \"dtype\"", 20},
}

func TestMalformedHeaders(t *testing.T) {
	for _, tc := range malformedHeaders {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int64{int64(len(tc.data)), -1} {
				_, err := ReadHeader(bytes.NewReader(tc.data), size, nil)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("size %d: want FormatError containing %q, got %v", size, tc.msg, err)
				}
				if size == -1 && tc.name == "past end" {
					continue // with no size the short read is what fails
				}
				if !strings.Contains(fe.Msg, tc.msg) {
					t.Errorf("size %d: error %q lacks %q", size, fe.Error(), tc.msg)
				}
				if tc.offset >= 0 && fe.Offset != tc.offset {
					t.Errorf("size %d: error %q at offset %d, want %d", size, fe.Error(), fe.Offset, tc.offset)
				}
			}
		})
	}
}

func TestTruncatedWithoutSize(t *testing.T) {
	// A 4 GiB (within the raised limit) claim in a short stream of unknown
	// size must fail on the missing bytes, allocating only what arrived.
	data := append([]byte("\x93NUMPY\x02\x00\x00\x00\x00\xf0"), "{'descr': '<i4'"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadHeader(bytes.NewReader(data), -1, &Options{MaxHeaderLen: 1 << 32})
	runtime.ReadMemStats(&after)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "truncated header: 15 of 4026531840 bytes") || fe.Offset != 27 {
		t.Fatalf("got %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("allocated %d bytes for a 27-byte stream", grew)
	}
	// With the size known it fails before reading at all.
	_, err = ReadHeader(bytes.NewReader(data), int64(len(data)), &Options{MaxHeaderLen: 1 << 32})
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "runs past the end") || fe.Offset != 8 {
		t.Fatalf("got %v", err)
	}
}

func TestMaxHeaderLen(t *testing.T) {
	enc, err := EncodeHeader("<f8", false, []int64{3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadHeader(bytes.NewReader(enc), -1, &Options{MaxHeaderLen: 117})
	if err == nil || !strings.Contains(err.Error(), "header length 118 exceeds the limit of 117 bytes") {
		t.Errorf("got %v", err)
	}
	if !errors.Is(err, ErrHeaderTooLong) {
		t.Errorf("errors.Is(%v, ErrHeaderTooLong) = false", err)
	}
	if _, err := ReadHeader(bytes.NewReader(enc), -1, &Options{MaxHeaderLen: 118}); err != nil {
		t.Errorf("got %v", err)
	}
}

// errReader fails after its bytes run out with a non-EOF error.
type errReader struct {
	b []byte
}

var errBoom = errors.New("boom")

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errBoom
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func TestReaderErrors(t *testing.T) {
	enc, _ := EncodeHeader("<f8", false, []int64{3})
	for _, cut := range []int{0, 5, 9, 40} {
		for _, size := range []int64{int64(len(enc)), -1} {
			_, err := ReadHeader(&errReader{b: enc[:cut]}, size, nil)
			if !errors.Is(err, errBoom) {
				t.Errorf("cut %d size %d: want the reader's error, got %v", cut, size, err)
			}
		}
	}
}

func TestReadsNoFurther(t *testing.T) {
	enc, _ := EncodeHeader("<f8", false, []int64{3})
	r := bytes.NewReader(append(enc, "DATA"...))
	h, err := ReadHeader(r, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "DATA" || h.DataOffset != int64(len(enc)) {
		t.Errorf("left %q, data offset %d", rest, h.DataOffset)
	}
}

func TestDataLength(t *testing.T) {
	enc, _ := EncodeHeader("|O", false, []int64{3})
	h, err := ReadHeader(bytes.NewReader(enc), -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !h.DType.HasObject || h.DataLength(int64(len(enc))+100) != 100 {
		t.Errorf("object data length %d", h.DataLength(int64(len(enc))+100))
	}
	js, err := h.JSON(-1)
	if err != nil || !bytes.Contains(js, []byte(`"data_length": null`)) {
		t.Errorf("unknown size: %s %v", js, err)
	}
	enc, _ = EncodeHeader(List{Tuple{"a", ">c16"}, Tuple{"", "|V3"}}, true, []int64{2, 5})
	h, err = ReadHeader(bytes.NewReader(enc), -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.DType.HasObject || h.DataLength(0) != 10*19 || h.Count != 10 {
		t.Errorf("data length %d count %d", h.DataLength(0), h.Count)
	}
	if got := fmt.Sprint(h.Strides()); got != "[19 38]" {
		t.Errorf("fortran strides %s", got)
	}
}

func TestEncodeHeader(t *testing.T) {
	// Python's repr picks quotes and escapes as numpy's writer does.
	cases := []struct {
		descr Value
		want  string
	}{
		{List{Tuple{"it's", "u1"}}, `[("it's", 'u1')]`},
		{List{Tuple{`a'b"c`, "u1"}}, `[('a\'b"c', 'u1')]`},
		{List{Tuple{"t\tn\n\\\x01\x7f\u00a0\u00e9\u0378\U000e0001", "u1"}}, `[('t\tn\n\\\x01\x7f\xa0é\u0378\U000e0001', 'u1')]`},
		{List{Tuple{Tuple{int64(1), "a"}, "<i4", Tuple{int64(2)}}}, `[((1, 'a'), '<i4', (2,))]`},
	}
	for _, tc := range cases {
		if r, err := Repr(tc.descr); r != tc.want || err != nil {
			t.Errorf("Repr(%v) = %s, %v; want %s", tc.descr, r, err, tc.want)
		}
		enc, err := EncodeHeader(tc.descr, false, []int64{1})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := latin1("{'descr': " + tc.want + ", 'fortran_order': False, 'shape': (1,), }")
		if !bytes.Contains(enc, want) {
			t.Errorf("got %q, want descr %s", enc, tc.want)
		}
		if enc[6] != 1 {
			t.Errorf("version %d for a latin-1 header", enc[6])
		}
		h, err := ReadHeader(bytes.NewReader(enc), -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, h, enc)
	}
	enc, err := EncodeHeader(List{Tuple{"\u03b1", "u1"}}, false, nil)
	if err != nil || enc[6] != 3 || len(enc)%64 != 0 {
		t.Errorf("non-latin-1 name: version %d, %d bytes, %v", enc[6], len(enc), err)
	}
	for _, bad := range []struct {
		descr Value
		shape []int64
	}{{"<i5", nil}, {"<i4", []int64{-1}}, {int64(3), nil}} {
		if _, err := EncodeHeader(bad.descr, false, bad.shape); err == nil {
			t.Errorf("EncodeHeader(%v, %v) accepted", bad.descr, bad.shape)
		}
	}
}

func TestLiteralValues(t *testing.T) {
	v, err := parseLiteral([]byte(`{'a': [1, -2, 0x1F, 0o17, 0b101, 1_000], 'b': ((), (1,), ('x'), "y" 'z', u'\u00e9', r'\n', '''t''', '\101\x41\u0041'), 'a': True}`), 0, true, false)
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*Dict)
	if len(d.Keys) != 2 || d.Keys[0] != "a" {
		t.Fatalf("keys %v", d.Keys)
	}
	if d.Values[0] != true {
		t.Errorf("repeated key kept %v", d.Values[0])
	}
	want := Tuple{Tuple{}, Tuple{int64(1)}, "x", "yz", "é", `\n`, "t", "AAA"}
	got := d.Values[1].(Tuple)
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	v, err = parseLiteral([]byte(`[1, -2, 0x1F, 0o17, 0b101, 1_000, -9223372036854775808]`), 0, true, false)
	if err != nil || fmt.Sprint(v) != "[1 -2 31 15 5 1000 -9223372036854775808]" {
		t.Errorf("ints: %v %v", v, err)
	}
}

func BenchmarkReadHeaderTypical(b *testing.B) {
	enc, _ := EncodeHeader("<f8", false, []int64{1000, 3})
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for i := 0; i < b.N; i++ {
		if _, err := ReadHeader(bytes.NewReader(enc), int64(len(enc)), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadHeaderWide(b *testing.B) {
	fields := make(List, 1500)
	for i := range fields {
		fields[i] = Tuple{fmt.Sprintf("a_fairly_long_column_name_number_%04d", i), "<f8"}
	}
	enc, err := EncodeHeader(fields, false, []int64{10})
	if err != nil {
		b.Fatal(err)
	}
	if enc[6] != 2 {
		b.Fatalf("want a 2.0 header, got %d.0 (%d bytes)", enc[6], len(enc))
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for i := 0; i < b.N; i++ {
		if _, err := ReadHeader(bytes.NewReader(enc), int64(len(enc)), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeaderJSON(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "good", "record_nested.npy"))
	if err != nil {
		b.Fatal(err)
	}
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := h.JSON(int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEncodeHeaderGoInts(t *testing.T) {
	a, err := EncodeHeader(List{Tuple{"a", "<i4", 2}, Tuple{"b", Tuple{"<f8", Tuple{3, 1}}}}, false, []int64{4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeHeader(List{Tuple{"a", "<i4", int64(2)}, Tuple{"b", Tuple{"<f8", Tuple{int64(3), int64(1)}}}}, false, []int64{4})
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("Go ints and int64s encode differently: %q %q %v", a, b, err)
	}
}
