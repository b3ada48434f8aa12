package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// maxItemSize is the largest dtype itemsize numpy 1.24 can represent (a C
// int).
const maxItemSize = math.MaxInt32

// maxSubarrayDims is NPY_MAXDIMS in numpy 1.24.
const maxSubarrayDims = 32

// nativeOrder is '<' or '>': the byte order of the machine reading the file,
// which is what '=' (and a missing byte order) means in a type string.
var nativeOrder = func() byte {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return '<'
	}
	return '>'
}()

// DType is the data type a descr describes, modelled on numpy's dtype.
type DType struct {
	// Kind is numpy's dtype.kind: one of b i u f c M m S U V O. Records and
	// subarray types have kind 'V'.
	Kind byte
	// ByteOrder is '<' or '>' for types whose byte order matters, '|' for
	// the rest. '=' is resolved to the reading machine's order.
	ByteOrder byte
	// ItemSize is the size of one element in bytes (numpy's itemsize).
	ItemSize int64
	// HasObject is true for object dtypes and records or subarrays holding
	// objects: such arrays hold a pickle, not raw data.
	HasObject bool

	// Unit and UnitCount are a datetime64/timedelta64 type's unit and
	// multiplier as np.datetime_data reports them; Unit is "generic" for
	// M8/m8 without a unit. Empty for other kinds.
	Unit      string
	UnitCount int64

	// Fields lists a record's fields in order (padding fields dropped);
	// Record is true for every record type, including one with no fields.
	Fields []Field
	Record bool

	// Subarray is set for a subarray type such as ('<i4', (2, 3)).
	Subarray *Subarray
}

// Field is one named field of a record.
type Field struct {
	Name   string
	Title  Value // nil when the field has no title; otherwise any literal
	Offset int64
	DType  *DType
}

// Subarray describes a fixed-shape subarray type.
type Subarray struct {
	Base  *DType
	Shape []int64
}

// Str returns numpy's dtype.str for d, such as "<f8", "|S5", "<M8[3h]" or
// "|V12" for a record.
func (d *DType) Str() string {
	switch {
	case d.Record || d.Subarray != nil || d.Kind == 'V':
		return "|V" + strconv.FormatInt(d.ItemSize, 10)
	case d.Kind == 'O':
		return "|O"
	case d.Kind == 'U':
		return string(d.ByteOrder) + "U" + strconv.FormatInt(d.ItemSize/4, 10)
	case d.Kind == 'M' || d.Kind == 'm':
		s := string(d.ByteOrder) + string(d.Kind) + "8"
		if d.Unit != "generic" {
			if d.UnitCount == 1 {
				s += "[" + d.Unit + "]"
			} else {
				s += "[" + strconv.FormatInt(d.UnitCount, 10) + d.Unit + "]"
			}
		}
		return s
	}
	return string(d.ByteOrder) + string(d.Kind) + strconv.FormatInt(d.ItemSize, 10)
}

// ByteOrderName is "little", "big" or "none".
func (d *DType) ByteOrderName() string {
	switch d.ByteOrder {
	case '<':
		return "little"
	case '>':
		return "big"
	}
	return "none"
}

// descrError is how descr problems are reported before ReadHeader attaches
// an offset.
type descrError struct{ msg string }

func (e *descrError) Error() string { return e.msg }

func descrErrorf(format string, args ...any) error {
	return &descrError{fmt.Sprintf(format, args...)}
}

// DTypeFromDescr builds the dtype a header's descr describes, accepting what
// numpy 1.24's descr_to_dtype accepts (see docs/header-json.md for the few
// forms refused on purpose).
func DTypeFromDescr(descr Value) (*DType, error) {
	return descrToDType(descr, 0)
}

func descrToDType(descr Value, depth int) (*DType, error) {
	if depth > maxDepth {
		return nil, descrErrorf("descr nested deeper than %d", maxDepth)
	}
	switch v := descr.(type) {
	case string:
		return parseTypeStr(v)
	case Tuple:
		if len(v) < 2 {
			return nil, descrErrorf("descr tuple needs a type and a shape, got %d items", len(v))
		}
		base, err := descrToDType(v[0], depth+1)
		if err != nil {
			return nil, err
		}
		return typeTuple(base, v[1])
	case List:
		return recordFromList(v, depth)
	}
	return nil, descrErrorf("descr is not a valid dtype descriptor: %s", reprShort(descr))
}

func reprShort(v Value) string {
	s, err := pyRepr(v)
	if err != nil {
		return "?"
	}
	return truncate(s)
}

// recordFromList mirrors descr_to_dtype for a list of fields: padding
// fields (an empty name with a plain void or subarray type) are dropped but their
// bytes advance the offset; (title, name) pairs give titles.
func recordFromList(fields List, depth int) (*DType, error) {
	d := &DType{Kind: 'V', ByteOrder: '|', Record: true, Fields: []Field{}}
	used := map[string]bool{}
	var offset int64
	for i, f := range fields {
		var items []Value
		switch f := f.(type) {
		case Tuple:
			items = f
		case List:
			items = f
		case string:
			// numpy unpacks a string like a tuple: 'ab' is field 'a' of type 'b'.
			rs := []rune(f)
			if len(rs) != 2 {
				return nil, descrErrorf("field %d: a string field must have exactly 2 characters", i)
			}
			items = []Value{string(rs[0]), string(rs[1])}
		default:
			return nil, descrErrorf("field %d is not a (name, type[, shape]) sequence: %s", i, reprShort(f))
		}
		var dt *DType
		var err error
		switch len(items) {
		case 2:
			dt, err = descrToDType(items[1], depth+1)
		case 3:
			dt, err = descrToDType(items[1], depth+1)
			if err == nil {
				dt, err = typeTuple(dt, items[2])
			}
		default:
			return nil, descrErrorf("field %d has %d items, expected 2 or 3", i, len(items))
		}
		if err != nil {
			return nil, err
		}
		name := items[0]
		isPad := false
		if s, ok := name.(string); ok && s == "" && dt.Kind == 'V' && !dt.Record {
			isPad = true
		}
		if !isPad {
			var title Value
			if t, ok := name.(Tuple); ok {
				if len(t) != 2 {
					return nil, descrErrorf("field %d: (title, name) must have 2 items, got %d", i, len(t))
				}
				title, name = t[0], t[1]
			}
			s, ok := name.(string)
			if !ok {
				return nil, descrErrorf("field %d: field names must be strings", i)
			}
			if used[s] {
				return nil, descrErrorf("field %d: name %s already used as a name or title", i, reprShort(s))
			}
			used[s] = true
			if ts, ok := title.(string); ok {
				if used[ts] {
					return nil, descrErrorf("field %d: title %s already used as a name or title", i, reprShort(ts))
				}
				used[ts] = true
			}
			d.Fields = append(d.Fields, Field{Name: s, Title: title, Offset: offset, DType: dt})
			if dt.HasObject {
				d.HasObject = true
			}
		}
		offset += dt.ItemSize
		if offset > maxItemSize {
			return nil, descrErrorf("record itemsize does not fit into a C int")
		}
	}
	d.ItemSize = offset
	return d, nil
}

// typeTuple mirrors numpy.dtype((base, val)): a flexible type's size when
// base is an unsized S, U or V and val an int, otherwise a subarray shape.
func typeTuple(base *DType, val Value) (*DType, error) {
	if !isIntShape(val) {
		// numpy would try val as a dtype to build a "(base, new)" union
		// type; npzfs refuses that form.
		return nil, descrErrorf("invalid shape in fixed-type tuple: %s", reprShort(val))
	}
	unsized := base.ItemSize == 0 && !base.Record
	if unsized {
		n, ok := val.(int64)
		if !ok {
			return nil, descrErrorf("invalid itemsize in generic type tuple")
		}
		if n < 0 {
			return nil, descrErrorf("negative itemsize %d in generic type tuple", n)
		}
		if n > maxItemSize || base.Kind == 'U' && n > maxItemSize/4 {
			return nil, descrErrorf("itemsize %d does not fit into a C int", n)
		}
		// numpy sets the size of a copy; for a zero-size subarray type
		// (kind V) that gives an itemsize its shape does not explain.
		nd := *base
		nd.ItemSize = n
		if base.Kind == 'U' {
			nd.ItemSize = n * 4
		}
		return &nd, nil
	}
	var shape []int64
	switch v := val.(type) {
	case int64:
		if v == 1 {
			return base, nil // (type, 1) is still a synonym of type in numpy 1.24
		}
		shape = []int64{v}
	case Tuple:
		if len(v) == 0 {
			return base, nil
		}
		for _, e := range v {
			shape = append(shape, e.(int64))
		}
	case List:
		for _, e := range v {
			shape = append(shape, e.(int64))
		}
	}
	if len(shape) > maxSubarrayDims {
		return nil, descrErrorf("invalid shape in fixed-type tuple: more than %d dimensions", maxSubarrayDims)
	}
	items := int64(1)
	overflow := false
	for _, n := range shape {
		if n < 0 {
			return nil, descrErrorf("invalid shape in fixed-type tuple: dimension smaller than zero")
		}
		if n > math.MaxInt32 {
			return nil, descrErrorf("invalid shape in fixed-type tuple: dimension does not fit into a C int")
		}
		if !overflow {
			if n != 0 && items > math.MaxInt64/n {
				overflow = true
			} else {
				items *= n
			}
		}
	}
	if overflow || items > maxItemSize || items != 0 && base.ItemSize > maxItemSize/items {
		return nil, descrErrorf("invalid shape in fixed-type tuple: dtype size in bytes must fit into a C int")
	}
	if shape == nil {
		shape = []int64{}
	}
	return &DType{
		Kind:      'V',
		ByteOrder: '|',
		ItemSize:  items * base.ItemSize,
		HasObject: base.HasObject,
		Subarray:  &Subarray{Base: base, Shape: shape},
	}, nil
}

// isIntShape reports whether v is an int, or a tuple or list of ints (not
// bools): the shapes numpy accepts in a type tuple. An empty list is not
// one (numpy reads it as a record type).
func isIntShape(v Value) bool {
	switch v := v.(type) {
	case int64:
		return true
	case Tuple:
		for _, e := range v {
			if _, ok := e.(int64); !ok {
				return false
			}
		}
		return true
	case List:
		if len(v) == 0 {
			return false
		}
		for _, e := range v {
			if _, ok := e.(int64); !ok {
				return false
			}
		}
		return true
	}
	return false
}

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
	var kind byte
	var size int64
	found := false
	if len(s) == 1 {
		if c, ok := charCodes[s[0]]; ok {
			kind, size, found = c.kind, c.size, true
		}
	} else {
		n, used := cStrtol(s[1:])
		if n >= 0 && used == len(s)-1 {
			k := s[0]
			switch k {
			case 'S', 'a', 'U', 'V':
				// numpy stores the size in a C int: it wraps.
				sz := int64(int32(n))
				if k == 'U' {
					sz = int64(int32(uint32(sz) << 2))
				}
				if sz < 0 {
					return nil, descrErrorf("data type %s has a negative itemsize", reprShort(orig))
				}
				kind, size, found = k, sz, true
				if k == 'a' {
					kind = 'S'
				}
			default:
				sz := int64(int32(n))
				if n != 0 && sizedKind(k, sz) {
					kind, size, found = k, sz, true
				}
			}
		}
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
		order := order1
		if order1 == "" {
			order = order2
		} else if order2 != "" {
			conv := func(o string) string {
				if o == "=" {
					return string(nativeOrder)
				}
				return o
			}
			if conv(order1) != conv(order2) {
				return nil, descrErrorf("inconsistent byte-order specification %s and %s in %s", order1, order2, reprShort(s))
			}
		}
		if order == "|" || order == "=" || order == string(nativeOrder) {
			order = ""
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
