package npy

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// datetimeUnits are the units numpy accepts inside M8[...] and m8[...].
var datetimeUnits = []string{"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as"}

func isDatetimeUnit(s string) bool {
	for _, u := range datetimeUnits {
		if s == u {
			return true
		}
	}
	return false
}

// typeNames are the names numpy 1.24 (x86-64 Linux) finds in np.sctypeDict
// that are not already handled as a one-letter code or kind+size; they map
// to the equivalent type string.
var typeNames = map[string]string{
	"bool": "?", "bool8": "?", "bool_": "?",
	"byte": "b", "ubyte": "B", "short": "h", "ushort": "H",
	"intc": "i", "uintc": "I", "int": "l", "int_": "l", "uint": "L",
	"long": "l", "ulong": "L", "longlong": "q", "ulonglong": "Q",
	"intp": "p", "uintp": "P", "int0": "p", "uint0": "P",
	"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
	"uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
	"half": "e", "single": "f", "double": "d", "float": "d", "float_": "d",
	"longdouble": "g", "longfloat": "g",
	"float16": "f2", "float32": "f4", "float64": "f8", "float128": "f16",
	"csingle": "F", "singlecomplex": "F", "cdouble": "D", "cfloat": "D",
	"complex": "D", "complex_": "D", "clongdouble": "G", "clongfloat": "G",
	"longcomplex": "G", "complex64": "c8", "complex128": "c16", "complex256": "c32",
	"object": "O", "object0": "O", "object_": "O",
	"bytes": "S", "bytes0": "S", "bytes_": "S", "string_": "S",
	"str": "U", "str0": "U", "str_": "U", "unicode": "U", "unicode_": "U",
	"void": "V", "void0": "V",
	"datetime64": "M8", "timedelta64": "m8",
}

// charCodes maps numpy's one-character type codes to kind and itemsize on
// x86-64 Linux.
var charCodes = map[byte]struct {
	kind byte
	size int64
}{
	'?': {'b', 1}, 'b': {'i', 1}, 'B': {'u', 1}, 'h': {'i', 2}, 'H': {'u', 2},
	'i': {'i', 4}, 'I': {'u', 4}, 'l': {'i', 8}, 'L': {'u', 8}, 'q': {'i', 8},
	'Q': {'u', 8}, 'p': {'i', 8}, 'P': {'u', 8}, 'e': {'f', 2}, 'f': {'f', 4},
	'd': {'f', 8}, 'g': {'f', 16}, 'F': {'c', 8}, 'D': {'c', 16}, 'G': {'c', 32},
	'S': {'S', 0}, 'a': {'S', 0}, 'c': {'S', 1}, 'U': {'U', 0}, 'V': {'V', 0},
	'O': {'O', 8}, 'M': {'M', 8}, 'm': {'m', 8},
}

// sizedKind reports whether numpy's generic kind+size form (PyArray_
// TypestrConvert) accepts kind with this size.
func sizedKind(kind byte, size int64) bool {
	switch kind {
	case 'b':
		return size == 1
	case 'i', 'u':
		return size == 1 || size == 2 || size == 4 || size == 8
	case 'f':
		return size == 2 || size == 4 || size == 8 || size == 16
	case 'c':
		return size == 8 || size == 16 || size == 32
	case 'O':
		return size == 4 || size == 8
	case 'M', 'm':
		return size == 8
	}
	return false
}

// cStrtol mimics C strtol(s, &end, 10) on an LP64 machine: leading white
// space, an optional sign, digits, saturating at the long range. It returns
// the value and how many bytes were consumed (0 if no digits).
func cStrtol(s string) (int64, int) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var v uint64
	sat := false
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if v > (math.MaxInt64+1-uint64(s[i]-'0'))/10 {
			sat = true
		} else {
			v = v*10 + uint64(s[i]-'0')
		}
		i++
	}
	if i == start {
		return 0, 0
	}
	if sat {
		if neg {
			return math.MinInt64, i
		}
		return math.MaxInt64, i
	}
	if neg {
		return -int64(v), i
	}
	if v > math.MaxInt64 {
		return math.MaxInt64, i
	}
	return int64(v), i
}

// parseTypeStr mirrors numpy 1.24's numpy.dtype(str): an optional byte
// order (< > = |), then a one-character code ('f', '?'), a kind and size
// ('f8', 'S5', 'U3', 'V0'), a datetime type ('M8[ns]', 'm8[3h]',
// 'datetime64[us]', with numpy's '[N unit/den]' divisor), or a numpy type
// name ('int16', 'float64', only without a byte order, as numpy requires);
// or a comma string ('i4,f8', '(2,3)i4', '>2f4'), which numpy turns into a
// record with fields f0, f1, ... or a subarray type.
func parseTypeStr(s string) (*DType, error) {
	orig := s
	if isCommaString(s) {
		return parseCommaString(s)
	}
	endian := byte('=')
	if len(s) > 1 {
		switch s[0] {
		case '<', '>', '=':
			endian = s[0]
			s = s[1:]
		case '|':
			s = s[1:]
		}
	}
	if s == "" {
		return nil, descrErrorf("data type %s not understood", reprShort(orig))
	}
	if endian == '=' {
		endian = nativeOrder
	}
	if base, rest, ok := datetimePrefix(s); ok {
		d, err := parseDatetime(base, rest, orig)
		if err != nil {
			return nil, err
		}
		d.ByteOrder = endian
		return d, nil
	}
	kind, size, found, err := kindAndSize(s, orig)
	if err != nil {
		return nil, err
	}
	if !found {
		// numpy looks the whole original string up in np.sctypeDict.
		t, ok := typeNames[orig]
		if !ok {
			return nil, descrErrorf("data type %s not understood", reprShort(orig))
		}
		return parseTypeStr(t)
	}
	if kind == 'M' || kind == 'm' {
		d := &DType{Kind: kind, ItemSize: 8, Unit: "generic", UnitCount: 1, ByteOrder: endian}
		return d, nil
	}
	d := &DType{Kind: kind, ItemSize: size}
	switch {
	case kind == 'O':
		d.ItemSize = 8
		d.HasObject = true
		d.ByteOrder = '|'
	case kind == 'S' || kind == 'V' || kind == 'b' || size == 1 && kind != 'U':
		d.ByteOrder = '|'
	default:
		d.ByteOrder = endian
	}
	return d, nil
}

// kindAndSize reads a type string without its byte order (s, of orig): a
// character code ("f", "d") or a kind and item size ("f4", "S10").
func kindAndSize(s, orig string) (kind byte, size int64, found bool, err error) {
	if len(s) == 1 {
		c, ok := charCodes[s[0]]
		return c.kind, c.size, ok, nil
	}
	n, used := cStrtol(s[1:])
	if n < 0 || used != len(s)-1 {
		return 0, 0, false, nil
	}
	k := s[0]
	sz := int64(int32(n)) // numpy keeps the size in a C int: it wraps
	switch k {
	case 'S', 'a', 'U', 'V':
		if k == 'U' {
			sz = int64(int32(uint32(sz) << 2))
		}
		if sz < 0 {
			return 0, 0, false, descrErrorf("data type %s has a negative itemsize", reprShort(orig))
		}
		if k == 'a' {
			k = 'S'
		}
		return k, sz, true, nil
	}
	if n != 0 && sizedKind(k, sz) {
		return k, sz, true, nil
	}
	return 0, 0, false, nil
}

// isCommaString is numpy's _check_for_commastring: a leading digit (after
// an optional byte order), a leading "()", or a comma outside brackets.
func isCommaString(s string) bool {
	isOrder := func(c byte) bool { return c == '<' || c == '>' || c == '|' || c == '=' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	switch {
	case len(s) > 0 && isDigit(s[0]):
		return true
	case len(s) > 1 && isOrder(s[0]) && isDigit(s[1]):
		return true
	case strings.HasPrefix(s, "()"):
		return true
	case len(s) > 3 && isOrder(s[0]) && s[1:3] == "()":
		return true
	}
	return hasTopComma(s)
}

// commaItem is numpy's format_re (numpy/core/_internal.py): byte order,
// repeat count or shape, byte order, type.
var commaItem = regexp.MustCompile(`^([<>|=]?)( *[(]?[ ,0-9]*[)]? *)([<>|=]?)([A-Za-z0-9.?]*(?:\[[a-zA-Z0-9,.]+\])?)`)

// isPySpace is Python's str.isspace for one character (what \s matches).
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// parseCommaString mirrors numpy's _commastring and
// _convert_from_commastring: one item gives that type (with a shape, a
// subarray type), several give a packed record with fields f0, f1, ...
func parseCommaString(s string) (*DType, error) {
	bad := func(n int) error {
		return descrErrorf("format number %d of %s is not recognized", n, reprShort(s))
	}
	var items []Value
	for start := 0; start < len(s); {
		m := commaItem.FindStringSubmatch(s[start:])
		if m == nil {
			return nil, bad(len(items) + 1)
		}
		order1, repeats, order2, typ := m[1], m[2], m[3], m[4]
		start += len(m[0])
		if start < len(s) {
			rest := s[start:]
			if strings.TrimFunc(rest, isPySpace) == "" {
				start = len(s)
			} else {
				r := strings.TrimLeftFunc(rest, isPySpace)
				if !strings.HasPrefix(r, ",") {
					return nil, bad(len(items) + 1)
				}
				r = strings.TrimLeftFunc(r[1:], isPySpace)
				start = len(s) - len(r)
			}
		}
		order, err := commaOrder(order1, order2, s)
		if err != nil {
			return nil, err
		}
		typ = order + typ
		if repeats == "" {
			items = append(items, typ)
			continue
		}
		// Python's literal_eval of the repeat: an int, or a tuple (with or
		// without parentheses).
		src := strings.TrimLeft(repeats, " ")
		if hasTopParenComma(src) {
			src = "(" + src + ")"
		}
		rv, err := parseLiteral([]byte(src), 0, true, false)
		if err != nil {
			return nil, descrErrorf("invalid repeat %q in %s", repeats, reprShort(s))
		}
		items = append(items, Tuple{typ, rv})
	}
	if len(items) == 0 {
		return nil, bad(1)
	}
	if len(items) == 1 {
		return descrToDType(items[0], 1)
	}
	// numpy's _convert_from_list ignores a trailing empty item ('f8,<').
	if last, ok := items[len(items)-1].(string); ok && last == "" {
		items = items[:len(items)-1]
	}
	d := &DType{Kind: 'V', ByteOrder: '|', Record: true, Fields: []Field{}}
	for i, it := range items {
		dt, err := descrToDType(it, 1)
		if err != nil {
			return nil, err
		}
		d.Fields = append(d.Fields, Field{Name: "f" + strconv.Itoa(i), Offset: d.ItemSize, DType: dt})
		d.ItemSize += dt.ItemSize
		if d.ItemSize > maxItemSize {
			return nil, descrErrorf("record itemsize does not fit into a C int")
		}
		d.HasObject = d.HasObject || dt.HasObject
	}
	return d, nil
}

// commaOrder is the byte order of an item of the comma string s, given
// before its repeat (order1), after it (order2) or both, as a prefix of
// its type: empty where it is the machine's or means none.
func commaOrder(order1, order2, s string) (string, error) {
	native := func(o string) string {
		if o == "=" {
			return string(nativeOrder)
		}
		return o
	}
	order := order1
	if order1 == "" {
		order = order2
	} else if order2 != "" && native(order1) != native(order2) {
		return "", descrErrorf("inconsistent byte-order specification %s and %s in %s", order1, order2, reprShort(s))
	}
	if order == "|" || native(order) == string(nativeOrder) {
		return "", nil
	}
	return order, nil
}

// hasTopParenComma reports a comma outside parentheses.
func hasTopParenComma(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

// hasTopComma reports a comma outside square brackets, which makes numpy
// read the string as a comma-separated record.
func hasTopComma(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',':
			if depth == 0 {
				return true
			}
		case '[':
			depth++
		case ']':
			depth--
		}
	}
	return false
}

// datetimePrefix splits "M8[ns]" / "datetime64[ns]" into kind and the rest.
func datetimePrefix(s string) (byte, string, bool) {
	for _, p := range []struct {
		prefix string
		kind   byte
	}{{"M8", 'M'}, {"m8", 'm'}, {"datetime64", 'M'}, {"timedelta64", 'm'}} {
		if strings.HasPrefix(s, p.prefix) {
			rest := s[len(p.prefix):]
			if rest == "" || rest[0] == '[' {
				return p.kind, rest, true
			}
		}
	}
	return 0, "", false
}

// divisorTable mirrors numpy 1.24's table for '[N unit/den]': the smaller
// units tried, in order, and how many of each make one unit. numpy's week
// row reads one entry past its data (a zero count of years); that is
// mirrored, since numpy accepts the result.
var divisorTable = map[string][]struct {
	factor int64
	unit   string
}{
	"Y":  {{12, "M"}, {52, "W"}, {365, "D"}},
	"M":  {{4, "W"}, {30, "D"}, {720, "h"}},
	"W":  {{7, "D"}, {168, "h"}, {10080, "m"}, {0, "Y"}},
	"D":  {{24, "h"}, {1440, "m"}, {86400, "s"}},
	"h":  {{60, "m"}, {3600, "s"}},
	"m":  {{60, "s"}, {60000, "ms"}},
	"s":  {{1000, "ms"}, {1000000, "us"}},
	"ms": {{1000, "us"}, {1000000, "ns"}},
	"us": {{1000, "ns"}, {1000000, "ps"}},
	"ns": {{1000, "ps"}, {1000000, "fs"}},
	"ps": {{1000, "fs"}, {1000000, "as"}},
	"fs": {{1000, "as"}},
	"as": {},
}

func parseDatetime(kind byte, rest, orig string) (*DType, error) {
	d := &DType{Kind: kind, ItemSize: 8, Unit: "generic", UnitCount: 1}
	if rest == "" {
		return d, nil
	}
	bad := func() error {
		return descrErrorf("invalid datetime metadata in %s", reprShort(orig))
	}
	if len(rest) < 2 || rest[len(rest)-1] != ']' {
		return nil, bad()
	}
	body := rest[1 : len(rest)-1]
	num, used := cStrtol(body)
	if used == 0 {
		num = 1
	}
	if num < 0 || num > math.MaxInt32 {
		return nil, bad()
	}
	body = body[used:]
	unit, den := body, int64(1)
	if i := strings.IndexByte(body, '/'); i >= 0 {
		unit = body[:i]
		n, u := cStrtol(body[i+1:])
		if u == 0 || u != len(body)-i-1 || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, bad()
		}
		den = n
	}
	if unit == "generic" {
		if den != 1 {
			return nil, bad()
		}
		d.UnitCount = num // np.datetime_data keeps it, dtype.str drops it
		return d, nil
	}
	if !isDatetimeUnit(unit) {
		return nil, descrErrorf("invalid datetime unit in %s", reprShort(orig))
	}
	if unit == "μs" {
		unit = "us"
	}
	if den != 1 {
		if den == 0 {
			// numpy 1.24 divides by zero here and crashes.
			return nil, descrErrorf("zero divisor in datetime metadata %s", reprShort(orig))
		}
		ok := false
		for _, t := range divisorTable[unit] {
			if t.factor%den == 0 {
				num = int64(int32(num * (t.factor / den))) // numpy multiplies C ints
				unit, ok = t.unit, true
				break
			}
		}
		if !ok {
			return nil, descrErrorf("divisor (%d) is not a multiple of a lower-unit in datetime metadata %s", den, reprShort(orig))
		}
	}
	d.Unit, d.UnitCount = unit, num
	return d, nil
}

// Descr returns the descr numpy 1.24 writes for an array of this dtype
// (numpy.lib.format.dtype_to_descr): dtype.str for a non-record, and for a
// record dtype.descr's list of (name, type[, shape]) tuples, with titled
// names as (title, name) and gaps as padding fields (an empty name with
// a |Vn type).
// EncodeHeader(d.Descr(), ...) is byte for byte what np.save writes.
func (d *DType) Descr() Value {
	if !d.Record {
		return d.Str()
	}
	return d.recordDescr()
}

// fieldDescr is numpy's _array_descr for a field type: the type string,
// a (base, shape) tuple for a subarray, or a list for a record.
func (d *DType) fieldDescr() Value {
	switch {
	case d.Record:
		return d.recordDescr()
	case d.Subarray != nil:
		return Tuple{d.Subarray.Base.fieldDescr(), shapeTuple(d.Subarray.Shape)}
	}
	return d.Str()
}

func shapeTuple(shape []int64) Tuple {
	t := make(Tuple, len(shape))
	for i, n := range shape {
		t[i] = n
	}
	return t
}

func (d *DType) recordDescr() Value {
	out := List{}
	var offset int64
	for _, f := range d.Fields {
		if f.Offset > offset {
			out = append(out, Tuple{"", "|V" + strconv.FormatInt(f.Offset-offset, 10)})
			offset = f.Offset
		}
		var name Value = f.Name
		if f.Title != nil {
			name = Tuple{f.Title, f.Name}
		}
		if f.DType.Subarray != nil {
			out = append(out, Tuple{name, f.DType.Subarray.Base.fieldDescr(), shapeTuple(f.DType.Subarray.Shape)})
		} else {
			out = append(out, Tuple{name, f.DType.fieldDescr()})
		}
		offset += f.DType.ItemSize
	}
	if d.ItemSize > offset {
		out = append(out, Tuple{"", "|V" + strconv.FormatInt(d.ItemSize-offset, 10)})
	}
	return out
}
