package npy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// jsonWriter builds compact JSON; JSON() indents it afterwards.
type jsonWriter struct {
	b bytes.Buffer
}

func (w *jsonWriter) str(s string) {
	if plainJSON(s) {
		w.b.WriteByte('"')
		w.b.WriteString(s)
		w.b.WriteByte('"')
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	w.b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// plainJSON reports whether s is printable ASCII that encoding/json
// writes as it is between quotes (the common case: keys, dtype strings),
// so it needs no encoder.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (w *jsonWriter) int(n int64) { w.b.WriteString(strconv.FormatInt(n, 10)) }

func (w *jsonWriter) key(first bool, k string) {
	if !first {
		w.b.WriteByte(',')
	}
	w.str(k)
	w.b.WriteByte(':')
}

func (w *jsonWriter) ints(ns []int64) {
	w.b.WriteByte('[')
	for i, n := range ns {
		if i > 0 {
			w.b.WriteByte(',')
		}
		w.int(n)
	}
	w.b.WriteByte(']')
}

// literal writes a parsed Python literal: tuples and lists as arrays.
func (w *jsonWriter) literal(v Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("npy: value nested deeper than %d", maxDepth)
	}
	switch v := v.(type) {
	case nil:
		w.b.WriteString("null")
	case string:
		w.str(v)
	case int64:
		w.int(v)
	case bool:
		w.b.WriteString(strconv.FormatBool(v))
	case List, Tuple:
		var items []Value
		if l, ok := v.(List); ok {
			items = l
		} else {
			items = v.(Tuple)
		}
		w.b.WriteByte('[')
		for i, e := range items {
			if i > 0 {
				w.b.WriteByte(',')
			}
			if err := w.literal(e, depth+1); err != nil {
				return err
			}
		}
		w.b.WriteByte(']')
	case *Dict:
		w.b.WriteByte('{')
		for i := range v.Keys {
			s, ok := v.Keys[i].(string)
			if !ok {
				return fmt.Errorf("npy: dict key %T cannot be written as JSON", v.Keys[i])
			}
			w.key(i == 0, s)
			if err := w.literal(v.Values[i], depth+1); err != nil {
				return err
			}
		}
		w.b.WriteByte('}')
	default:
		return fmt.Errorf("npy: cannot write a %T as JSON", v)
	}
	return nil
}

// dtype writes the dtype object: str, kind, itemsize, byte_order, then
// unit and unit_count (datetimes), subarray (subarray types) and fields
// (records).
func (w *jsonWriter) dtype(d *DType, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("npy: dtype nested deeper than %d", maxDepth)
	}
	w.b.WriteByte('{')
	w.key(true, "str")
	w.str(d.Str())
	w.key(false, "kind")
	w.str(string(d.Kind))
	w.key(false, "itemsize")
	w.int(d.ItemSize)
	w.key(false, "byte_order")
	w.str(d.ByteOrderName())
	if d.Kind == 'M' || d.Kind == 'm' {
		w.key(false, "unit")
		w.str(d.Unit)
		w.key(false, "unit_count")
		w.int(d.UnitCount)
	}
	if d.Subarray != nil {
		w.key(false, "subarray")
		w.b.WriteByte('{')
		w.key(true, "shape")
		w.ints(d.Subarray.Shape)
		w.key(false, "dtype")
		if err := w.dtype(d.Subarray.Base, depth+1); err != nil {
			return err
		}
		w.b.WriteByte('}')
	}
	if d.Record {
		w.key(false, "fields")
		w.b.WriteByte('[')
		for i, f := range d.Fields {
			if i > 0 {
				w.b.WriteByte(',')
			}
			if err := w.field(f, depth); err != nil {
				return err
			}
		}
		w.b.WriteByte(']')
	}
	w.b.WriteByte('}')
	return nil
}

// field writes {name, title, offset, dtype, shape?}; for a subarray field
// dtype is the subarray's base and shape its shape.
func (w *jsonWriter) field(f Field, depth int) error {
	w.b.WriteByte('{')
	w.key(true, "name")
	w.str(f.Name)
	w.key(false, "title")
	if err := w.literal(f.Title, depth+1); err != nil {
		return err
	}
	w.key(false, "offset")
	w.int(f.Offset)
	dt := f.DType
	var shape []int64
	if dt.Subarray != nil {
		dt, shape = dt.Subarray.Base, dt.Subarray.Shape
	}
	w.key(false, "dtype")
	if err := w.dtype(dt, depth+1); err != nil {
		return err
	}
	if shape != nil {
		w.key(false, "shape")
		w.ints(shape)
	}
	w.b.WriteByte('}')
	return nil
}

// JSON renders h as header.json (stable key order, pretty-printed with two
// spaces, ending in a newline). size is the total length of the .npy
// stream; for object arrays data_length is size-DataOffset (null when size
// is negative, i.e. unknown). The schema is in docs/header-json.md.
func (h *Header) JSON(size int64) ([]byte, error) {
	return h.JSONIn(size, InArchive{Offset: -1})
}

// InArchive is what header.json says of an .npy that is an archive's
// member, after data_length (docs/header-json.md).
type InArchive struct {
	// Offset, "archive_offset": where the array data starts in the file
	// that holds this .npy (an archive whose member is stored), so that
	// a program can map the array from that file directly; negative for
	// none.
	Offset int64
	// ChunkSize and Chunks, "sozip": the member's SOZip index's chunk
	// size and how many chunks it has; 0 for none.
	ChunkSize, Chunks int64
}

// JSONIn is JSON with the fields in says after data_length.
func (h *Header) JSONIn(size int64, in InArchive) ([]byte, error) {
	if h.DType == nil {
		return nil, fmt.Errorf("npy: header has no dtype")
	}
	var w jsonWriter
	w.b.WriteByte('{')
	w.key(true, "version")
	w.str(h.Version())
	w.key(false, "header_length")
	w.int(int64(h.HeaderLen))
	w.key(false, "data_offset")
	w.int(h.DataOffset)
	w.key(false, "data_length")
	if h.DType.HasObject && size < 0 {
		w.b.WriteString("null")
	} else {
		n := h.DataLength(size)
		if n < 0 {
			n = 0
		}
		w.int(n)
	}
	if in.Offset >= 0 {
		w.key(false, "archive_offset")
		w.int(in.Offset)
	}
	if in.Chunks > 0 {
		w.key(false, "sozip")
		w.b.WriteByte('{')
		w.key(true, "chunk_size")
		w.int(in.ChunkSize)
		w.key(false, "chunks")
		w.int(in.Chunks)
		w.b.WriteByte('}')
	}
	w.key(false, "descr")
	if err := w.literal(h.Descr, 0); err != nil {
		return nil, err
	}
	w.key(false, "fortran_order")
	w.b.WriteString(strconv.FormatBool(h.FortranOrder))
	w.key(false, "shape")
	w.ints(h.Shape)
	w.key(false, "count")
	w.int(h.Count)
	w.key(false, "strides")
	w.ints(h.Strides())
	w.key(false, "dtype")
	if err := w.dtype(h.DType, 0); err != nil {
		return nil, err
	}
	w.b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, w.b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("npy: rendering header.json: %v", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
