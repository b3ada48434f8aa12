package npy

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// growthAxisMaxDigits is numpy's GROWTH_AXIS_MAX_DIGITS: room left in the
// header so the growth axis can be rewritten in place.
const growthAxisMaxDigits = 21

// arrayAlign is numpy's ARRAY_ALIGN: data starts on this boundary.
const arrayAlign = 64

// pyStr is Python's repr() of a str.
func pyStr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// Repr is Python's repr() of a literal value, such as a header's Descr:
// the text that Python's ast.literal_eval reads back as the same value.
func Repr(v Value) (string, error) { return pyRepr(v) }

// pyRepr is Python's repr() of a literal value.
func pyRepr(v Value) (string, error) {
	var b strings.Builder
	if err := writeRepr(&b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeRepr(b *strings.Builder, v Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("npy: value nested deeper than %d", maxDepth)
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case string:
		b.WriteString(pyStr(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case List:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, e, depth+1); err != nil {
				return err
			}
		}
		if len(v) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		b.WriteByte('{')
		for i := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, v.Keys[i], depth+1); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := writeRepr(b, v.Values[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("npy: cannot write a %T in a header", v)
	}
	return nil
}

// normalizeInts returns v with Go ints of other sizes (as callers may
// write them in a descr, e.g. Tuple{"<i4", 2}) turned into int64.
func normalizeInts(v Value) Value {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case List:
		out := make(List, len(x))
		for i, e := range x {
			out[i] = normalizeInts(e)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = normalizeInts(e)
		}
		return out
	}
	return v
}

// latin1 converts s to latin-1 bytes; ok is false if it has a character
// beyond U+00FF.
func latin1(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, false
		}
		out = append(out, byte(r))
	}
	return out, true
}

// EncodeHeader returns the magic, version, length and padded header dict
// exactly as numpy 1.24+ writes them for an array with this descr (a Go
// string such as "<f4", or a List for records), order and shape. The descr
// must be one ReadHeader accepts; it is written with Python's repr, as
// given.
func EncodeHeader(descr Value, fortranOrder bool, shape []int64) ([]byte, error) {
	descr = normalizeInts(descr)
	if _, err := DTypeFromDescr(descr); err != nil {
		return nil, fmt.Errorf("npy: %v", err)
	}
	for _, n := range shape {
		if n < 0 {
			return nil, fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
	}
	dr, err := pyRepr(descr)
	if err != nil {
		return nil, err
	}
	st := make(Tuple, len(shape))
	for i, n := range shape {
		st[i] = n
	}
	sr, _ := pyRepr(st)
	fo := "False"
	if fortranOrder {
		fo = "True"
	}
	text := "{'descr': " + dr + ", 'fortran_order': " + fo + ", 'shape': " + sr + ", }"
	if len(shape) > 0 {
		axis := shape[0]
		if fortranOrder {
			axis = shape[len(shape)-1]
		}
		if pad := growthAxisMaxDigits - len(strconv.FormatInt(axis, 10)); pad > 0 {
			text += strings.Repeat(" ", pad)
		}
	}
	if b, ok := latin1(text); ok {
		if out, ok := wrapHeader(b, 1); ok {
			return out, nil
		}
		if out, ok := wrapHeader(b, 2); ok {
			return out, nil
		}
		return nil, fmt.Errorf("npy: header of %d bytes is too long", len(b))
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("npy: header is not valid UTF-8")
	}
	if out, ok := wrapHeader([]byte(text), 3); ok {
		return out, nil
	}
	return nil, fmt.Errorf("npy: header of %d bytes is too long", len(text))
}

// wrapHeader adds the prefix, padding and newline numpy's _wrap_header
// adds; ok is false if the length does not fit the version's field.
func wrapHeader(text []byte, major int) ([]byte, bool) {
	plen := int(prefixLen(major))
	hlen := len(text) + 1
	pad := arrayAlign - (plen+hlen)%arrayAlign
	total := hlen + pad
	if major == 1 && total > 0xffff || int64(total) > 0xffffffff {
		return nil, false
	}
	out := make([]byte, 0, plen+total)
	out = append(out, Magic...)
	out = append(out, byte(major), 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(total))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(total))
	}
	out = append(out, text...)
	for i := 0; i < pad; i++ {
		out = append(out, ' ')
	}
	out = append(out, '\n')
	return out, true
}
