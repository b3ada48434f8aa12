package zip

import (
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// sozipMember deflates data in chunks of chunk bytes, each alone with a
// sync and a full flush after it (the last with the final block), as a
// SOZip writer does, and returns the stream and its index.
func sozipMember(t *testing.T, data []byte, chunk int) ([]byte, *SOZipIndex) {
	t.Helper()
	var out bytes.Buffer
	x := &SOZipIndex{ChunkSize: int64(chunk), Size: int64(len(data))}
	for off := 0; ; off += chunk {
		if off > 0 {
			x.Offsets = append(x.Offsets, int64(out.Len()))
		}
		w, _ := flate.NewWriter(&out, 6)
		w.Write(data[off:min(off+chunk, len(data))])
		if off+chunk >= len(data) {
			w.Close()
			break
		}
		w.Flush()
		out.Write([]byte{0, 0, 0, 0xff, 0xff})
	}
	x.CompressedSize = int64(out.Len())
	return out.Bytes(), x
}

// sozipArchive writes an archive of one deflated entry with its hidden
// index, then a stored entry; index may damage the index's bytes.
func sozipArchive(t *testing.T, name string, data []byte, chunk int, damage func([]byte) []byte, force bool) ([]byte, *SOZipIndex) {
	t.Helper()
	stream, x := sozipMember(t, data, chunk)
	idx, err := x.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if damage != nil {
		idx = damage(idx)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.ForceZip64 = force
	h := &FileHeader{Name: name, Method: Deflated, CRC32: crc32.ChecksumIEEE(data), Size: int64(len(data)), CompressedSize: int64(len(stream))}
	ih := &FileHeader{Name: SOZipIndexName(name), CRC32: crc32.ChecksumIEEE(idx), Size: int64(len(idx)), CompressedSize: int64(len(idx))}
	after := &FileHeader{Name: "after"}
	for _, err := range []error{w.WriteLocal(h), write(w, stream), w.WriteLocal(ih), write(w, idx), w.Add(h), w.WriteLocal(after), w.Add(after), w.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), x
}

func write(w *Writer, b []byte) error { _, err := w.Write(b); return err }

// readIndex reads the index of the first entry of archive b.
func readIndex(t *testing.T, b []byte) (*SOZipIndex, Entry, int64, error) {
	t.Helper()
	z, es := entries(t, b)
	off, err := z.DataOffset(&es[0])
	if err != nil {
		t.Fatal(err)
	}
	x, err := ReadSOZipIndex(bytes.NewReader(b), int64(len(b)), &es[0], off)
	return x, es[0], off, err
}

// inflateChunk inflates chunk i of an entry whose stream is s alone, as
// the spec's annex F does: a chunk but the last ends with an empty
// stored block, marked final here.
func inflateChunk(x *SOZipIndex, s []byte, i int) ([]byte, error) {
	_, n, coff, cn := x.Chunk(i)
	c := bytes.Clone(s[coff : coff+cn])
	if i < x.Chunks()-1 {
		if !bytes.HasSuffix(c, []byte{0, 0, 0, 0xff, 0xff}) {
			return nil, errors.New("chunk does not end with a full flush")
		}
		c[len(c)-5] = 1
	}
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(c)), n+1))
	if err == nil && int64(len(out)) != n {
		err = errors.New("chunk inflates to the wrong length")
	}
	return out, err
}

// TestSOZipRoundTrip: an index written with the entry is found after it
// and read back as written, and each chunk it gives inflates alone to
// its bytes, for sizes about the chunk and names in folders.
func TestSOZipRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const chunk = 4096
	for _, size := range []int{chunk + 1, 2 * chunk, 2*chunk + 1, 10*chunk - 1, 37 * chunk} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.IntN(3) * i)
		}
		for i, name := range []string{"a.npy", "dir/sub/b.npy", "café.npy"} {
			b, want := sozipArchive(t, name, data, chunk, nil, i == 1) // local headers with zip64 sizes too
			x, e, off, err := readIndex(t, b)
			if err != nil {
				t.Fatalf("%d bytes, %s: %v", size, name, err)
			}
			if x.ChunkSize != chunk || x.Size != int64(size) || x.CompressedSize != e.CompressedSize || x.Chunks() != (size-1)/chunk+1 ||
				!equalInts(x.Offsets, want.Offsets) {
				t.Fatalf("read %+v, wrote %+v", x, want)
			}
			s := b[off : off+e.CompressedSize]
			for i := range x.Chunks() {
				got, err := inflateChunk(x, s, i)
				o, n, _, _ := x.Chunk(i)
				if err != nil || !bytes.Equal(got, data[o:o+n]) {
					t.Fatalf("%d bytes: chunk %d: %v", size, i, err)
				}
			}
		}
	}
	if SOZipIndexName("dir/sub/b.npy") != "dir/sub/.b.npy.sozip.idx" || SOZipIndexName("a") != ".a.sozip.idx" {
		t.Error("SOZipIndexName")
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSOZipSpecExample: the spec's annex H, the index of "foo" in chunks
// of 2 bytes, byte for byte.
func TestSOZipSpecExample(t *testing.T) {
	x := &SOZipIndex{ChunkSize: 2, Size: 3, CompressedSize: 16, Offsets: []int64{13}}
	b, err := x.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(b, want) || crc32.ChecksumIEEE(b) != 0x56fec86c {
		t.Errorf("index %x", b)
	}
	if y, err := ParseSOZipIndex(b); err != nil || y.Len() != int64(len(b)) || !equalInts(y.Offsets, x.Offsets) {
		t.Errorf("parsed %+v, %v", y, err)
	}
}

// TestSOZipRefused: an index that lies (its header, its offsets, its
// length, its sizes against the entry's, its CRC-32, its name, its
// method) or is cut short is refused with a *FormatError, never
// returned.
func TestSOZipRefused(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB: 16 chunks
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint32(b[off:], v); return b }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint64(b[off:], v); return b }
	}
	table := SOZipHeaderLen
	for _, tc := range []struct {
		what   string
		damage func([]byte) []byte
		want   string
	}{
		{"version 2", put32(0, 2), "version 2"},
		{"offsets of 4 bytes", put32(12, 4), "offsets of 4 bytes"},
		{"a chunk size of 0", put32(8, 0), "cannot be"},
		{"a larger chunk size", put32(8, 8192), "holds"},
		{"a smaller chunk size", put32(8, 2048), "holds"},
		{"a chunk as large as the entry", put32(8, 65536), "cannot be"},
		{"another size", put64(16, 65535), "not the entry's"},
		{"another compressed size", put64(24, 12345), "not the entry's"},
		{"a skip past the end", put32(4, 1000), "holds"},
		{"cut short", func(b []byte) []byte { return b[:len(b)-3] }, "holds"},
		{"a header cut short", func(b []byte) []byte { return b[:20] }, "holds 20 bytes"},
		{"bytes added", func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 0) }, "holds"},
		{"offsets out of order", func(b []byte) []byte {
			o := le.Uint64(b[table:])
			le.PutUint64(b[table:], le.Uint64(b[table+8:]))
			le.PutUint64(b[table+8:], o)
			return b
		}, "not after"},
		{"an offset repeated", func(b []byte) []byte { copy(b[table+8:], b[table:table+8]); return b }, "not after"},
		{"a first offset of 0", put64(table, 0), "not after"},
		{"an offset past the stream", func(b []byte) []byte { le.PutUint64(b[len(b)-8:], 1<<40); return b }, "before its end"},
		{"a chunk too short to hold its bytes", put64(table, 1), "cannot inflate"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			b, _ := sozipArchive(t, "a.npy", data, 4096, tc.damage, false)
			x, _, _, err := readIndex(t, b)
			var fe *FormatError
			if x != nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNoSOZipIndex) {
				t.Errorf("%+v, %v; want an error with %q, not ErrNoSOZipIndex", x, err, tc.want)
			}
		})
	}
	// The index bytes damaged after the header was written: the CRC-32
	// says so.
	b, x := sozipArchive(t, "a.npy", data, 4096, nil, false)
	idx, _ := x.AppendBinary(nil)
	at := bytes.Index(b, idx)
	b[at+table+3] ^= 1
	if x, _, _, err := readIndex(t, b); x != nil || err == nil || !strings.Contains(err.Error(), "CRC-32") {
		t.Errorf("damaged table: %+v, %v", x, err)
	}
	// Another entry after the member, a stored index of another name or
	// method, an entry that is not deflated.
	b, _ = sozipArchive(t, "a.npy", data, 4096, nil, false)
	c := bytes.Clone(b)
	j := bytes.Index(c, []byte(".a.npy.sozip.idx"))
	c[j+1] = 'b'
	if _, _, _, err := readIndex(t, c); err == nil || !strings.Contains(err.Error(), `".b.npy.sozip.idx"`) || !errors.Is(err, ErrNoSOZipIndex) {
		t.Errorf("renamed index: %v", err)
	}
	c = bytes.Clone(b)
	le.PutUint16(c[j-localLen+8:], Deflated)
	if _, _, _, err := readIndex(t, c); err == nil || !strings.Contains(err.Error(), "not stored") {
		t.Errorf("deflated index: %v", err)
	}
	_, es := entries(t, b)
	es[0].Method = Stored
	if _, err := ReadSOZipIndex(bytes.NewReader(b), int64(len(b)), &es[0], 0); !errors.Is(err, ErrNoSOZipIndex) {
		t.Errorf("a stored entry's index: %v", err)
	}
	// No local header after the entry (the central directory), or the
	// archive's end: no index, as ErrNoSOZipIndex says.
	z, es := entries(t, b)
	off, err := z.DataOffset(&es[1])
	if err != nil {
		t.Fatal(err)
	}
	es[1].Method = Deflated
	if _, err := ReadSOZipIndex(bytes.NewReader(b), int64(len(b)), &es[1], off); !errors.Is(err, ErrNoSOZipIndex) {
		t.Errorf("an entry before the central directory: %v", err)
	}
	cut := b[:off+es[1].CompressedSize]
	if _, err := ReadSOZipIndex(bytes.NewReader(cut), int64(len(cut)), &es[1], off); !errors.Is(err, ErrNoSOZipIndex) {
		t.Errorf("an entry at the archive's end: %v", err)
	}
}

// TestSOZipCheck: Check holds every index AppendBinary writes to the
// spec's rules, and ParseSOZipIndex parses whole indexes only.
func TestSOZipCheck(t *testing.T) {
	for _, x := range []*SOZipIndex{
		{ChunkSize: 10, Size: 10, CompressedSize: 5},                                      // one chunk
		{ChunkSize: 10, Size: 21, CompressedSize: 9, Offsets: []int64{3}},                 // too few offsets
		{ChunkSize: 10, Size: 21, CompressedSize: 9, Offsets: []int64{3, 9}},              // the last at the end
		{ChunkSize: 1 << 32, Size: 1 << 33, CompressedSize: 1 << 20, Offsets: []int64{5}}, // a chunk of 4 GiB
		{ChunkSize: 10, Size: 21, CompressedSize: 9, Offsets: []int64{3, 6}, SkipBytes: -1},
	} {
		if _, err := x.AppendBinary(nil); err == nil {
			t.Errorf("%+v written", x)
		}
	}
	x := &SOZipIndex{ChunkSize: 10, Size: 21, CompressedSize: 9, Offsets: []int64{3, 6}, SkipBytes: 7}
	b, err := x.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	y, err := ParseSOZipIndex(b)
	if err != nil || y.SkipBytes != 7 || !equalInts(y.Offsets, x.Offsets) {
		t.Errorf("with skipped bytes: %+v, %v", y, err)
	}
	for n := range len(b) {
		if _, err := ParseSOZipIndex(b[:n]); err == nil {
			t.Errorf("%d bytes of %d parsed", n, len(b))
		}
	}
	if h, n, err := ParseSOZipHeader(b); err != nil || n != int64(len(b)) || h.ChunkSize != 10 {
		t.Errorf("header: %+v, %d, %v", h, n, err)
	}
}

// FuzzParseSOZipIndex: whatever the bytes, parsing never panics, and an
// index it returns passes Check and is written back as it was read.
func FuzzParseSOZipIndex(f *testing.F) {
	x := &SOZipIndex{ChunkSize: 10, Size: 31, CompressedSize: 20, Offsets: []int64{3, 6, 9}}
	b, _ := x.AppendBinary(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseSOZipIndex(b)
		if err != nil {
			return
		}
		if x.Check() != nil {
			t.Fatalf("%+v parsed but fails Check", x)
		}
		if c, err := x.AppendBinary(nil); err != nil || !bytes.Equal(c[:SOZipHeaderLen], b[:SOZipHeaderLen]) || !bytes.Equal(c[SOZipHeaderLen+x.SkipBytes:], b[SOZipHeaderLen+x.SkipBytes:]) {
			t.Fatalf("%x parsed, written back as %x, %v", b, c, err)
		}
	})
}
