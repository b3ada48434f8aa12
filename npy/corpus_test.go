package npy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type manifest struct {
	Good []struct {
		Name         string `json:"name"`
		NumpyWritten bool   `json:"numpy_written"`
	} `json:"good"`
	Bad []struct {
		Name       string `json:"name"`
		Why        string `json:"why"`
		NumpyError string `json:"numpy_error"`
	} `json:"bad"`
	Strict []struct {
		Name string `json:"name"`
		Why  string `json:"why"`
	} `json:"strict"`
}

// readJSON decodes testdata/name into v.
func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadManifest(t testing.TB) *manifest {
	t.Helper()
	var m manifest
	readJSON(t, "manifest.json", &m)
	if len(m.Good) < 100 || len(m.Bad) < 20 || len(m.Strict) < 5 {
		t.Fatalf("manifest too small: %d good, %d bad, %d strict", len(m.Good), len(m.Bad), len(m.Strict))
	}
	return &m
}

// jsonTokens flattens a JSON document into its token sequence, keeping key
// order, so two documents compare equal whatever their whitespace or string
// escaping.
func jsonTokens(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("bad JSON: %v\n%s", err, b)
		}
		out = append(out, fmt.Sprintf("%T:%v", tok, tok))
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			lo := max(0, i-4)
			return fmt.Sprintf("token %d: got %q, want %q (context %q)", i, a[i], b[i], a[lo:i])
		}
	}
	return fmt.Sprintf("lengths differ: got %d tokens, want %d", len(a), len(b))
}

// countingReader records how many bytes were read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestCorpusGood(t *testing.T) {
	m := loadManifest(t)
	for _, g := range m.Good {
		t.Run(g.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "good", g.Name+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "good", g.Name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			size := int64(len(data))
			for _, sz := range []int64{size, -1} {
				cr := &countingReader{r: bytes.NewReader(data)}
				h, err := ReadHeader(cr, sz, nil)
				if err != nil {
					t.Fatalf("ReadHeader(size=%d): %v", sz, err)
				}
				if cr.n != h.DataOffset {
					t.Errorf("read %d bytes, header ends at %d", cr.n, h.DataOffset)
				}
				got, err := h.JSON(size)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasSuffix(got, []byte("}\n")) {
					t.Errorf("header.json does not end in a newline")
				}
				var cmp, ind bytes.Buffer
				if err := json.Compact(&cmp, got); err != nil {
					t.Fatal(err)
				}
				if err := json.Indent(&ind, cmp.Bytes(), "", "  "); err != nil || !bytes.Equal(ind.Bytes(), bytes.TrimSuffix(got, []byte("\n"))) {
					t.Errorf("header.json is not 2-space pretty-printed")
				}
				gt, wt := jsonTokens(t, got), jsonTokens(t, want)
				if !reflect.DeepEqual(gt, wt) {
					t.Fatalf("header.json differs from numpy's view: %s\ngot:\n%s", firstDiff(gt, wt), got)
				}
			}
			h, _ := ReadHeader(bytes.NewReader(data), size, nil)
			enc, err := EncodeHeader(h.Descr, h.FortranOrder, h.Shape)
			if err != nil {
				t.Fatalf("EncodeHeader: %v", err)
			}
			if g.NumpyWritten && !bytes.Equal(enc, data[:h.DataOffset]) {
				t.Fatalf("EncodeHeader differs from numpy's header:\ngot  %q\nwant %q", enc, data[:h.DataOffset])
			}
			checkRoundTrip(t, h, enc)
			// Re-saving: numpy's header for this dtype, shape and order.
			resave, err := os.ReadFile(filepath.Join("testdata", "good", g.Name+".hdr"))
			if err != nil {
				t.Fatal(err)
			}
			enc, err = EncodeHeader(h.DType.Descr(), h.FortranOrder, h.Shape)
			if err != nil {
				// numpy can write a descr it cannot read back ('<M8[-500ms]');
				// then EncodeHeader refuses it and so must ReadHeader.
				if _, rerr := ReadHeader(bytes.NewReader(resave), -1, nil); rerr == nil {
					t.Fatalf("EncodeHeader(Descr()): %v", err)
				}
				return
			}
			if !bytes.Equal(enc, resave) {
				t.Fatalf("EncodeHeader(DType.Descr()) differs from numpy's:\ngot  %q\nwant %q", enc, resave)
			}
		})
	}
}

// checkRoundTrip reads enc (EncodeHeader's output for h) back and compares
// what it describes with h.
func checkRoundTrip(t testing.TB, h *Header, enc []byte) {
	t.Helper()
	h2, err := ReadHeader(bytes.NewReader(enc), int64(len(enc)), &Options{MaxHeaderLen: len(enc)})
	if err != nil {
		t.Fatalf("re-reading EncodeHeader output: %v\n%q", err, enc)
	}
	if h2.DataOffset != int64(len(enc)) || h2.DataOffset%64 != 0 {
		t.Errorf("encoded header is %d bytes, data offset %d", len(enc), h2.DataOffset)
	}
	if !reflect.DeepEqual(h.Descr, h2.Descr) || !reflect.DeepEqual(h.Shape, h2.Shape) ||
		h.FortranOrder != h2.FortranOrder || !reflect.DeepEqual(h.DType, h2.DType) || h.Count != h2.Count {
		t.Fatalf("round trip changed the header:\n%#v\n%#v", h, h2)
	}
}

func TestCorpusBad(t *testing.T) {
	m := loadManifest(t)
	for _, b := range m.Bad {
		t.Run(b.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "bad", b.Name+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			for _, sz := range []int64{int64(len(data)), -1} {
				h, err := ReadHeader(bytes.NewReader(data), sz, nil)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("size=%d: want a FormatError (numpy: %s), got %v, %+v", sz, b.NumpyError, err, h)
				}
				if fe.Offset < 0 || fe.Offset > int64(len(data)) {
					t.Errorf("error offset %d outside the %d-byte file", fe.Offset, len(data))
				}
			}
		})
	}
}

func TestCorpusStrict(t *testing.T) {
	m := loadManifest(t)
	for _, s := range m.Strict {
		t.Run(s.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "strict", s.Name+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadHeader(bytes.NewReader(data), int64(len(data)), nil)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("npzfs should refuse this (%s), got %v", s.Why, err)
			}
		})
	}
}

// dtypeJSON renders d as its header.json dtype object.
func dtypeJSON(t testing.TB, d *DType) []byte {
	var w jsonWriter
	if err := w.dtype(d, 0); err != nil {
		t.Fatal(err)
	}
	return w.b.Bytes()
}

func TestTypeStrings(t *testing.T) {
	var cases [][2]json.RawMessage
	readJSON(t, "typestr.json", &cases)
	if len(cases) < 500 {
		t.Fatalf("only %d type strings", len(cases))
	}
	accepted := 0
	for _, c := range cases {
		var s string
		if err := json.Unmarshal(c[0], &s); err != nil {
			t.Fatal(err)
		}
		d, err := parseTypeStr(s)
		switch want := string(c[1]); {
		case want == "null" || want == `"negative"`:
			if err == nil {
				t.Errorf("%q: numpy refuses it (or makes a negative itemsize), got %s", s, d.Str())
			}
		default:
			accepted++
			if err != nil {
				t.Errorf("%q: numpy accepts it, got %v", s, err)
				continue
			}
			gt, wt := jsonTokens(t, dtypeJSON(t, d)), jsonTokens(t, c[1])
			if !reflect.DeepEqual(gt, wt) {
				t.Errorf("%q: %s\ngot  %s\nwant %s", s, firstDiff(gt, wt), dtypeJSON(t, d), c[1])
			}
		}
	}
	if accepted < 200 {
		t.Errorf("only %d accepted type strings checked", accepted)
	}
}

// strictSyntax are header texts numpy reads that npzfs refuses on purpose
// (docs/header-json.md lists why).
var strictSyntax = []string{`\N{BULLET}`}

// versionText decodes the format version and header text that start a
// case of syntax.json or random_descr.json.
func versionText(t *testing.T, c [3]json.RawMessage) (version, text string) {
	t.Helper()
	if err := json.Unmarshal(c[0], &version); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(c[1], &text); err != nil {
		t.Fatal(err)
	}
	return version, text
}

func TestSyntaxCases(t *testing.T) {
	var cases [][3]json.RawMessage
	readJSON(t, "syntax.json", &cases)
	if len(cases) < 200 {
		t.Fatalf("only %d syntax cases", len(cases))
	}
	for _, c := range cases {
		version, text := versionText(t, c)
		major := int(version[0] - '0')
		var raw []byte
		if major == 3 {
			raw = mk(3, text)
		} else {
			l, ok := latin1(text)
			if !ok {
				t.Fatalf("%q is not latin-1", text)
			}
			raw = mk(major, string(l))
		}
		h, err := ReadHeader(bytes.NewReader(raw), int64(len(raw)), nil)
		want := string(c[2])
		strict := want == `"strict"`
		for _, s := range strictSyntax {
			if strings.Contains(text, s) {
				strict = true
			}
		}
		switch {
		case want == "null" || strict:
			if err == nil {
				t.Errorf("%s %q: numpy refuses it (or npzfs should), got %v %v", version, text, h.Descr, h.Shape)
			}
		case err != nil:
			t.Errorf("%s %q: numpy accepts it, got %v", version, text, err)
		default:
			var w jsonWriter
			w.b.WriteString(`{"descr":`)
			if err := w.literal(h.Descr, 0); err != nil {
				t.Fatal(err)
			}
			w.b.WriteString(`,"fortran_order":` + fmt.Sprint(h.FortranOrder) + `,"shape":`)
			w.ints(h.Shape)
			w.b.WriteString("}")
			var got, exp any
			if err := json.Unmarshal(w.b.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(c[2], &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("%s %q:\ngot  %s\nwant %s", version, text, w.b.Bytes(), c[2])
			}
		}
	}
}

// refusedForms are the errors for descr forms numpy accepts and npzfs
// refuses on purpose (docs/header-json.md): numpy's (base, dtype) union
// form, and negative itemsizes.
var refusedForms = []string{"invalid shape in fixed-type tuple: []", "negative itemsize"}

func TestRandomDescrs(t *testing.T) {
	var cases [][3]json.RawMessage
	readJSON(t, "random_descr.json", &cases)
	accepted, refused := 0, 0
	for _, c := range cases {
		version, text := versionText(t, c)
		raw := mk(int(version[0]-'0'), text)
		if version == "1.0" {
			l, _ := latin1(text)
			raw = mk(1, string(l))
		}
		h, err := ReadHeader(bytes.NewReader(raw), int64(len(raw)), nil)
		if string(c[2]) == "null" {
			if err == nil {
				t.Errorf("%q: numpy refuses it, got %v", text, h.DType.Str())
			}
			continue
		}
		if err != nil {
			known := false
			for _, f := range refusedForms {
				known = known || strings.Contains(err.Error(), f)
			}
			if !known {
				t.Errorf("%q: numpy accepts it, got %v", text, err)
			}
			refused++
			continue
		}
		accepted++
		var exp struct {
			Offset int64 `json:"data_offset"`
			Length int64 `json:"data_length"`
		}
		if err := json.Unmarshal(c[2], &exp); err != nil {
			t.Fatal(err)
		}
		js, err := h.JSON(exp.Offset + exp.Length)
		if err != nil {
			t.Fatal(err)
		}
		if gt, wt := jsonTokens(t, js), jsonTokens(t, c[2]); !reflect.DeepEqual(gt, wt) {
			t.Errorf("%q: %s", text, firstDiff(gt, wt))
		}
		enc, err := EncodeHeader(h.Descr, h.FortranOrder, h.Shape)
		if err != nil {
			t.Fatalf("%q: EncodeHeader: %v", text, err)
		}
		checkRoundTrip(t, h, enc)
	}
	if accepted < 500 || refused > accepted/10 {
		t.Errorf("%d accepted, %d refused on purpose", accepted, refused)
	}
}
