package zip

import (
	stdzip "archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wentry is an entry for writeArchive: its name, bytes, and how to write
// them.
type wentry struct {
	name      string
	data      []byte
	deflate   bool
	modified  time.Time
	align     int64
	alignSkip int64
	late      bool // the header written first without CRC-32 and sizes, then again
}

// writeArchive writes entries with Writer to a buffer.
func writeArchive(t *testing.T, es []wentry, comment string, force bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.ForceZip64 = force
	for _, e := range es {
		body := e.data
		h := &FileHeader{Name: e.name, Modified: e.modified, CRC32: crc32.ChecksumIEEE(e.data),
			Size: int64(len(e.data)), CompressedSize: int64(len(e.data)), Align: e.align, AlignSkip: e.alignSkip}
		if e.deflate {
			var c bytes.Buffer
			fw, _ := flate.NewWriter(&c, 6)
			fw.Write(e.data)
			fw.Close()
			body = c.Bytes()
			h.Method, h.CompressedSize = Deflated, int64(len(body))
		}
		final := *h
		if e.late {
			h.CRC32, h.CompressedSize, h.Size = 0, 0, 0
		}
		if err := w.WriteLocal(h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if e.late {
			final.Offset, final.Zip64 = h.Offset, h.Zip64
			b, err := final.AppendLocal(nil)
			if err != nil || int64(len(b)) != h.LocalLen() {
				t.Fatalf("%s: header of %d bytes written again as %d (%v)", e.name, h.LocalLen(), len(b), err)
			}
			copy(buf.Bytes()[h.Offset:], b)
			h = &final
		}
		if e.align > 0 && (h.DataOffset()+e.alignSkip)%e.align != 0 {
			t.Errorf("%s: byte %d of the data at %d, not a multiple of %d", e.name, e.alignSkip, h.DataOffset()+e.alignSkip, e.align)
		}
		if err := w.Add(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetComment(comment); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Offset() != int64(buf.Len()) {
		t.Errorf("Offset %d after writing %d bytes", w.Offset(), buf.Len())
	}
	return buf.Bytes()
}

// testEntries are entries of every kind the writer writes.
func testEntries() []wentry {
	rng := rand.New(rand.NewPCG(1, 2))
	data := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(4))
		}
		return b
	}
	when := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	var es []wentry
	for i, skip := range []int64{0, 1, 5, 6, 64, 128, 4095} {
		es = append(es, wentry{name: fmt.Sprintf("aligned%s%d.npy", strings.Repeat("x", i*7), i), data: data(5000), modified: when, align: 4096, alignSkip: skip})
	}
	return append(es,
		wentry{name: "line.npy", data: data(100), modified: when, align: 64, alignSkip: 128},
		wentry{name: "dir/", modified: when},
		wentry{name: "dir/deflated.npy", data: data(70000), deflate: true, modified: when, late: true},
		wentry{name: "café/ünïcode.npy", data: data(10), modified: when.Add(time.Second)}, // an odd second: a timestamp field
		wentry{name: "empty", modified: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)},
		wentry{name: "empty.z", deflate: true, modified: when, late: true},
	)
}

// checkArchive reads b with archive/zip and with Reader, and compares
// every entry with what was written.
func checkArchive(t *testing.T, b []byte, es []wentry, comment string) {
	t.Helper()
	std, err := stdzip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	z, got := entries(t, b)
	if len(std.File) != len(es) || len(got) != len(es) || std.Comment != comment || z.Comment() != comment || len(z.Problems()) > 0 {
		t.Fatalf("%d and %d entries of %d, comments %q and %q, problems %q", len(std.File), len(got), len(es), std.Comment, z.Comment(), z.Problems())
	}
	for i, f := range std.File {
		e, want := &got[i], es[i]
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %v", want.name, err)
		}
		data, err := io.ReadAll(rc) // archive/zip checks the CRC-32
		rc.Close()
		if err != nil || !bytes.Equal(data, want.data) || f.Name != want.name || e.Name != want.name {
			t.Errorf("entry %d: %q / %q, %d bytes of %d, %v", i, f.Name, e.Name, len(data), len(want.data), err)
		}
		if wantT := want.modified.Unix(); e.Modified != wantT && !(wantT < 315532800 && e.Modified == 315532800) {
			t.Errorf("%s: modified %d, want %d", want.name, e.Modified, wantT)
		}
		off, err := z.DataOffset(e)
		if stdOff, _ := f.DataOffset(); err != nil || off != stdOff {
			t.Errorf("%s: data at %d (%v), archive/zip says %d", want.name, off, err, stdOff)
		}
		if want.align > 0 && (off+want.alignSkip)%want.align != 0 {
			t.Errorf("%s: byte %d of the data at %d", want.name, want.alignSkip, off+want.alignSkip)
		}
		nonASCII := strings.ContainsFunc(want.name, func(r rune) bool { return r >= 0x80 })
		if e.Unusable != "" || e.ImpossibleSize() != "" || (e.Flags&flagUTF8 != 0) != nonASCII {
			t.Errorf("%s: unusable %q, impossible %q, flags %#x", want.name, e.Unusable, e.ImpossibleSize(), e.Flags)
		}
	}
}

// TestWriterRoundTrip: what Writer writes, archive/zip and Reader read
// back exactly: names, bytes (with their CRC-32), times, offsets, the
// comment; aligned data where it was asked; headers written again with
// their sizes at the same length; with and without zip64 everywhere.
func TestWriterRoundTrip(t *testing.T) {
	es := testEntries()
	for _, force := range []bool{false, true} {
		b := writeArchive(t, es, "a comment", force)
		checkArchive(t, b, es, "a comment")
		z, _ := entries(t, b)
		if z.dir.zip64 != force {
			t.Errorf("ForceZip64 %v: zip64 end record %v", force, z.dir.zip64)
		}
	}
}

// TestPaddingField: the padding field is laid out as zipalign lays it
// out, and readers skip it.
func TestPaddingField(t *testing.T) {
	h := &FileHeader{Name: "a.npy", Offset: 100, Align: 4096, AlignSkip: 128}
	b, err := h.AppendLocal(nil)
	if err != nil {
		t.Fatal(err)
	}
	extra := b[localLen+len(h.Name):]
	if int(le.Uint16(b[28:])) != len(extra) || le.Uint16(extra) != ExtraPadding || int(le.Uint16(extra[2:])) != len(extra)-4 ||
		le.Uint16(extra[4:]) != 4096 || strings.Trim(string(extra[6:]), "\x00") != "" || (100+int64(len(b))+128)%4096 != 0 {
		t.Errorf("local header %x", b)
	}
	for _, tc := range []struct{ at, align, want int64 }{
		{0, 4096, 0}, {4095, 4096, 4097}, {4091, 4096, 4101}, {4090, 4096, 6}, {1, 64, 63}, {60, 64, 68}, {64, 64, 0},
	} {
		if got := pad(tc.at, tc.align); got != tc.want {
			t.Errorf("pad(%d, %d) = %d, want %d", tc.at, tc.align, got, tc.want)
		}
	}
}

// TestWriterRefuses: what no header can say is an error, not a wrong
// archive.
func TestWriterRefuses(t *testing.T) {
	for _, h := range []*FileHeader{
		{Name: strings.Repeat("n", 0x10000)},
		{Name: "bad\xff"},
		{Name: "big", Size: 1 << 32, CompressedSize: 1 << 32},
		{Name: "big.z", Method: Deflated, Size: 1 << 33, CompressedSize: 1 << 20},
		{Name: "a", Align: 100},
		{Name: "a", Align: 1 << 16},
		{Name: "a", Size: -1},
	} {
		if _, err := h.AppendLocal(nil); err == nil {
			t.Errorf("%.20q, %+v: written", h.Name, *h)
		}
	}
	h := &FileHeader{Name: "big", Size: 1 << 32, CompressedSize: 1 << 32, Zip64: true}
	if _, err := h.AppendLocal(nil); err != nil {
		t.Errorf("zip64 header: %v", err)
	}
	w := NewWriter(io.Discard)
	if w.SetComment(strings.Repeat("c", 0x10000)) == nil || w.Rewind(1) == nil || w.Close() != nil || w.Close() == nil {
		t.Error("a comment too long, a rewind past the end or a second Close accepted")
	}
}

// TestWriterManyEntries: past 65,534 entries the count is in a zip64 end
// record, and every entry is read back.
func TestWriterManyEntries(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	const n = 70000
	for i := range n {
		h := &FileHeader{Name: fmt.Sprintf("%05d", i)}
		if w.WriteLocal(h) != nil || w.Add(h) != nil {
			t.Fatal("write failed")
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	z, es := entries(t, buf.Bytes())
	if len(es) != n || !z.dir.zip64 || es[n-1].Name != fmt.Sprintf("%05d", n-1) || len(z.Problems()) > 0 {
		t.Errorf("%d entries, zip64 %v, problems %q", len(es), z.dir.zip64, z.Problems())
	}
	std, err := stdzip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(std.File) != n {
		t.Errorf("archive/zip: %v", err)
	}
}

// TestWriterPast4GiB: an entry of 5 GiB (a hole in a sparse file) and one
// after it, whose offset is past 4 GiB, are described with zip64 fields
// that Reader and archive/zip read.
func TestWriterPast4GiB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f)
	const big = 5 << 30
	// Its CRC-32 is not checked: its data is never read.
	h := &FileHeader{Name: "zeros", Size: big, CompressedSize: big, Zip64: MayNeedZip64(big)}
	if err := w.WriteLocal(h); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(big, io.SeekCurrent); err != nil {
		t.Fatal(err)
	}
	w.off += big // the hole is the entry's data
	after := &FileHeader{Name: "after", Size: 5, CompressedSize: 5, CRC32: crc32.ChecksumIEEE([]byte("after"))}
	if w.Add(h) != nil || w.WriteLocal(after) != nil {
		t.Fatal("write failed")
	}
	w.Write([]byte("after"))
	if w.Add(after) != nil || w.Close() != nil {
		t.Fatal("write failed")
	}
	fi, _ := f.Stat()
	z, err := NewReader(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	var es []Entry
	z.Entries(func(e *Entry) { c := *e; c.Name = strings.Clone(c.Name); es = append(es, c) })
	if len(es) != 2 || es[0].Size != big || es[0].CompressedSize != big || es[1].HeaderOffset <= 1<<32 || es[1].Unusable != "" {
		t.Fatalf("entries %+v", es)
	}
	off, err := z.DataOffset(&es[1])
	got := make([]byte, 5)
	if err != nil || ReadAtFull(f, got, off) != nil || string(got) != "after" {
		t.Errorf("the entry past 4 GiB: %q, %v", got, err)
	}
	std, err := stdzip.NewReader(f, fi.Size())
	if err != nil || len(std.File) != 2 || std.File[1].UncompressedSize64 != 5 || std.File[0].UncompressedSize64 != big {
		t.Fatalf("archive/zip: %v", err)
	}
	rc, err := std.File[1].Open()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rc); err != nil || string(b) != "after" {
		t.Errorf("archive/zip reads %q, %v", b, err)
	}
	// The local header of the big entry holds its sizes in zip64.
	lh := make([]byte, localLen+len("zeros")+20)
	ReadAtFull(f, lh, 0)
	if le.Uint32(lh[18:]) != maxUint32 || binary.LittleEndian.Uint64(lh[localLen+5+4:]) != big {
		t.Errorf("local header %x", lh)
	}
}
