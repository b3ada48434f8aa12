package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
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
			return nil, descrErrorf("descr tuple needs a type and a shape, got %s", itemCount(len(v)))
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
			return nil, descrErrorf("field %d has %s, expected 2 or 3", i, itemCount(len(items)))
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

// itemCount is "1 item" or "n items".
func itemCount(n int) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}
