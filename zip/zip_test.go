package zip

import (
	stdzip "archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// build writes entries with the standard library's writer: name -> data,
// deflated when the name ends in ".z".
func build(t *testing.T, names []string, data func(i int) []byte, comment string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	for i, name := range names {
		fh := &stdzip.FileHeader{Name: name, Method: stdzip.Store, Modified: time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)}
		if strings.HasSuffix(name, ".z") {
			fh.Method = stdzip.Deflate
		}
		fw, err := w.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data(i))
	}
	if err := w.SetComment(comment); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entries(t *testing.T, b []byte) (*Reader, []Entry) {
	t.Helper()
	z, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	if err := z.Entries(func(e *Entry) { c := *e; c.Name = strings.Clone(e.Name); out = append(out, c) }); err != nil {
		t.Fatal(err)
	}
	return z, out
}

// TestEntriesMatchArchiveZip: every field of every entry, and where each
// entry's data starts, agree with the standard library's reader.
func TestEntriesMatchArchiveZip(t *testing.T) {
	names := []string{"a.npy", "dir/", "dir/b.z", "café.npy", "empty.z"}
	data := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 1000*i) }
	b := build(t, names, data, "the comment")
	z, got := entries(t, b)
	std, err := stdzip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(std.File) || z.Comment() != "the comment" || z.Prefix() != 0 || len(z.Problems()) != 0 || z.Declared() != len(names) {
		t.Fatalf("%d entries (declared %d), comment %q, prefix %d, problems %q", len(got), z.Declared(), z.Comment(), z.Prefix(), z.Problems())
	}
	for i, f := range std.File {
		e := &got[i]
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		dataOff, err := z.DataOffset(e)
		if e.Name != f.Name || e.Method != f.Method || e.CRC32 != f.CRC32 || e.Size != int64(f.UncompressedSize64) ||
			e.CompressedSize != int64(f.CompressedSize64) || e.Flags != f.Flags || e.Index != int32(i) || e.Unusable != "" ||
			err != nil || dataOff != off || e.Modified != f.Modified.Unix() {
			t.Errorf("entry %d: %+v, data at %d (%v); archive/zip: %q method %d crc %#x sizes %d/%d flags %#x at %d, %v",
				i, e, dataOff, err, f.Name, f.Method, f.CRC32, f.CompressedSize64, f.UncompressedSize64, f.Flags, off, f.Modified)
		}
		if e.ImpossibleSize() != "" || e.Encrypted() {
			t.Errorf("entry %d: impossible %q, encrypted %v", i, e.ImpossibleSize(), e.Encrypted())
		}
	}
}

// TestEntriesReadsInChunks: the directory is read in a few large reads,
// not one per entry, and no entry data is read.
func TestEntriesReadsInChunks(t *testing.T) {
	names := make([]string, 20000)
	for i := range names {
		names[i] = strings.Repeat("n", 100) + string(rune('a'+i%26)) + ".npy"
	}
	b := build(t, names, func(int) []byte { return []byte("x") }, "")
	cr := &countingReader{r: bytes.NewReader(b)}
	z, err := NewReader(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := z.Entries(func(*Entry) { n++ }); err != nil || n != len(names) {
		t.Fatalf("%d entries, %v", n, err)
	}
	// about 3 MB of directory: the tail, then chunks of 1 MiB, each from
	// the entry the one before cut.
	if cr.reads > 6 {
		t.Errorf("%d reads to list %d entries", cr.reads, n)
	}
}

type countingReader struct {
	r     io.ReaderAt
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

func TestUnusableAndImpossible(t *testing.T) {
	b := build(t, []string{"a.npy", "b.z"}, func(i int) []byte { return bytes.Repeat([]byte("xy"), 500) }, "")
	cd := int(binary.LittleEndian.Uint32(b[len(b)-6:]))
	le16 := func(off int) int { return int(binary.LittleEndian.Uint16(b[off:])) }
	second := cd + 46 + le16(cd+28) + le16(cd+30) + le16(cd+32)
	put32 := func(off int, v uint32) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[off:], v)
		return c
	}
	for _, tc := range []struct {
		desc       string
		archive    []byte
		unusable   string // in the first entry
		impossible string
	}{
		{"offset past the end", put32(cd+42, uint32(len(b))), "runs past the end", ""},
		{"zip64 offset without its extra", put32(cd+42, 0xffffffff), "lacks the zip64", ""},
		{"stored sizes differ", put32(cd+24, 7), "", "declares 7 bytes but holds 1000"},
		{"deflate ratio", put32(second+24, 1<<30), "", "more than deflate can make"},
	} {
		_, es := entries(t, tc.archive)
		u, imp := es[0].Unusable, es[0].ImpossibleSize()+es[1].ImpossibleSize()
		if (tc.unusable == "") != (u == "") || !strings.Contains(u, tc.unusable) ||
			(tc.impossible == "") != (imp == "") || !strings.Contains(imp, tc.impossible) {
			t.Errorf("%s: unusable %q, impossible %q", tc.desc, u, imp)
		}
	}
	// A local header naming another entry is not this entry's.
	c := bytes.Clone(b)
	c[30] = 'z'
	_, es := entries(t, c)
	var fe *FormatError
	if _, err := DataOffset(bytes.NewReader(c), int64(len(c)), &es[0]); !errors.As(err, &fe) || !strings.Contains(err.Error(), `names "z.npy" instead`) {
		t.Errorf("renamed local header: %v", err)
	}
}

func TestNotAZip(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("short"), bytes.Repeat([]byte("x"), 70000)} {
		_, err := NewReader(bytes.NewReader(b), int64(len(b)))
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "zip: ") {
			t.Errorf("%d bytes: %v", len(b), err)
		}
	}
}

func TestDecodeName(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		flags uint16
		want  string
		ok    bool
	}{
		{"plain.npy", 0, "plain.npy", true},
		{"caf\x82.npy", 0, "café.npy", true},
		{"caf\xc3\xa9.npy", 0, "café.npy", true}, // valid UTF-8 without the flag
		{"caf\xc3\xa9.npy", flagUTF8, "café.npy", true},
		{"bad\xff.npy", flagUTF8, "", false},
		{"\xe0\xff", 0, "α\u00a0", true},
	} {
		got, ok := DecodeName(tc.raw, tc.flags)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("DecodeName(%q, %#x) = %q, %v; want %q, %v", tc.raw, tc.flags, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDirectory: Directory is where the end record says the central
// directory is, shifted by any prepended bytes, and its length.
func TestDirectory(t *testing.T) {
	names := []string{"a.npy", "b.npy.z", "c/d.npy"}
	b := build(t, names, func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000) }, "")
	end := b[len(b)-22:]
	size := int64(binary.LittleEndian.Uint32(end[12:]))
	off := int64(binary.LittleEndian.Uint32(end[16:]))
	if binary.LittleEndian.Uint32(b[off:]) != 0x02014b50 || off+size != int64(len(b))-22 {
		t.Fatalf("the test archive's end record does not point at its directory (%d, %d)", off, size)
	}
	for _, prefix := range []int{0, 100} {
		a := append(bytes.Repeat([]byte("#"), prefix), b...)
		z, err := NewReader(bytes.NewReader(a), int64(len(a)))
		if err != nil {
			t.Fatal(err)
		}
		if gotOff, gotSize := z.Directory(); gotOff != off+int64(prefix) || gotSize != size {
			t.Errorf("prefix %d: Directory() = %d, %d; want %d, %d", prefix, gotOff, gotSize, off+int64(prefix), size)
		}
	}
}
