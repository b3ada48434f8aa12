package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Record signatures and lengths from APPNOTE, to build and damage archives.
const (
	sigLocal   = 0x04034b50
	sigCentral = 0x02014b50
	sigEnd     = 0x06054b50
	sigEnd64   = 0x06064b50
	sigLoc64   = 0x07064b50
	centralLen = 46 // central directory header, before name, extra, comment
	endLen     = 22 // end of central directory record, before the comment
)

// twoMembers is a small archive of a stored and a deflated member with no
// comment, so its end record is its last 22 bytes.
func twoMembers(t *testing.T) []byte {
	return makeZip(t, []zent{
		{name: "a.txt", data: []byte("alpha alpha alpha"), method: 0},
		{name: "b.txt", data: bytes.Repeat([]byte("beta "), 100), method: 8},
	})
}

// cdStart is the central directory offset in an end record at the end of z.
func cdStart(z []byte) int { return int(binary.LittleEndian.Uint32(z[len(z)-6:])) }

func TestEndRecord(t *testing.T) {
	base := twoMembers(t)
	put32 := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	put16 := func(b []byte, off int, v uint16) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint16(b[off:], v)
		return b
	}
	end := len(base) - endLen
	withComment := func(c string) []byte {
		b := put16(base, end+20, uint16(len(c)))
		return append(b, c...)
	}
	for _, tc := range []struct {
		desc    string
		archive []byte
		err     string // "" opens
		members int
		problem string
	}{
		{"plain", base, "", 2, ""},
		{"comment", withComment("hello"), "", 2, ""},
		{"comment holding a fake end record", withComment("PK\x05\x06" + strings.Repeat("\x00", 18) + "tail"), "", 2, ""},
		{"trailing bytes after the record", append(bytes.Clone(base), "junk"...), "", 2, ""},
		{"empty file", nil, "too short", 0, ""},
		{"not a zip", bytes.Repeat([]byte("x"), 1000), "no end of central directory record: not a zip archive", 0, ""},
		{"cut short", base[:len(base)/2], "looks cut short (truncated?)", 0, ""},
		{"cut to its first bytes", base[:10], "looks cut short (truncated?)", 0, ""},
		{"directory past the end", put32(base, end+16, uint32(len(base))), "does not lie before", 0, ""},
		{"directory too long", put32(base, end+12, uint32(len(base))), "does not lie before", 0, ""},
		{"multi-disk", put16(base, end+4, 1), "multi-disk", 0, ""},
		{"count too high", put16(put16(base, end+10, 0xfffe), end+8, 0xfffe), "", 2, "claims 65534 entries"},
		{"count too low", put16(put16(base, end+10, 1), end+8, 1), "", 2, "claims 1 entry, the central directory has 2"},
		{"saturated without zip64", put32(base, end+16, 0xffffffff), "does not lie before", 0, ""},
		{"second entry broken", func() []byte {
			// Corrupt the second central directory entry's signature.
			b := bytes.Clone(base)
			i := bytes.LastIndex(b, []byte("PK\x01\x02"))
			b[i+3] = 9
			return b
		}(), "", 1, "after 1 entry: bad entry signature"},
		{"first entry broken", func() []byte {
			b := bytes.Clone(base)
			b[cdStart(b)+3] = 9
			return b
		}(), "bad central directory entry signature", 0, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a, err := NewReader(context.Background(), bytes.NewReader(tc.archive), int64(len(tc.archive)), nil)
			if tc.err != "" {
				var fe *FormatError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &fe) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Members()) != tc.members {
				t.Errorf("%d members, want %d", len(a.Members()), tc.members)
			}
			if p := strings.Join(a.Problems(), "; "); (tc.problem == "") != (p == "") || !strings.Contains(p, tc.problem) {
				t.Errorf("problems %q, want %q", p, tc.problem)
			}
			walk(t, a)
		})
	}
}

// zip64Archive builds an archive whose central directory saturates every
// field it can, with the zip64 extra, zip64 end record and locator.
func zip64Archive(t *testing.T, extra func(size, csize, off uint64) []byte) []byte {
	data := []byte("zip64 member data")
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(vs ...any) {
		for _, v := range vs {
			binary.Write(&b, le, v)
		}
	}
	// Local header with saturated sizes and a zip64 extra, as Python 3.12 writes.
	w(uint32(sigLocal), uint16(45), uint16(0), uint16(0), uint16(0), uint16(0x21), crc(data),
		uint32(0xffffffff), uint32(0xffffffff), uint16(5), uint16(20))
	b.WriteString("z.txt")
	w(uint16(1), uint16(16), uint64(len(data)), uint64(len(data)))
	b.Write(data)
	cd := b.Len()
	ex := extra(uint64(len(data)), uint64(len(data)), 0)
	w(uint32(sigCentral), uint16(45), uint16(45), uint16(0), uint16(0), uint16(0), uint16(0x21), crc(data),
		uint32(0xffffffff), uint32(0xffffffff), uint16(5), uint16(len(ex)), uint16(0), uint16(0), uint16(0),
		uint32(0), uint32(0xffffffff))
	b.WriteString("z.txt")
	b.Write(ex)
	cdLen := b.Len() - cd
	e64 := b.Len()
	w(uint32(sigEnd64), uint64(44), uint16(45), uint16(45), uint32(0), uint32(0), uint64(1), uint64(1), uint64(cdLen), uint64(cd))
	w(uint32(sigLoc64), uint32(0), uint64(e64), uint32(1))
	w(uint32(sigEnd), uint16(0), uint16(0), uint16(0xffff), uint16(0xffff), uint32(0xffffffff), uint32(0xffffffff), uint16(0))
	return b.Bytes()
}

func crc(b []byte) uint32 {
	return crc32IEEE(b)
}

func TestZip64(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		extra  func(size, csize, off uint64) []byte
		reason string
	}{
		{"all fields", func(s, c, o uint64) []byte { return ext(1, s, c, o) }, ""},
		{"with other extras around", func(s, c, o uint64) []byte {
			return append(append([]byte{0x55, 0x54, 5, 0, 1, 0, 0, 0, 0}, ext(1, s, c, o)...), 0x99, 0x99, 0, 0)
		}, ""},
		{"missing the offset", func(s, c, o uint64) []byte { return ext(1, s, c) }, "lacks the zip64"},
		{"no zip64 extra", func(s, c, o uint64) []byte { return ext(0x7777, s, c, o) }, "lacks the zip64"},
		{"truncated extra", func(s, c, o uint64) []byte { return ext(1, s, c, o)[:20] }, "lacks the zip64"},
		{"offset past the end", func(s, c, o uint64) []byte { return ext(1, s, c, 1<<40) }, "runs past the end"},
		{"huge size", func(s, c, o uint64) []byte { return ext(1, 1<<63, c, o) }, "impossible size"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			z := zip64Archive(t, tc.extra)
			a := openBytes(t, z)
			ms := a.Members()
			if len(ms) != 1 {
				t.Fatalf("%d members", len(ms))
			}
			m := ms[0]
			if tc.reason != "" {
				if m.Served() || !strings.Contains(m.Reason(context.Background()), tc.reason) {
					t.Errorf("served %v, reason %q, want %q", m.Served(), m.Reason(context.Background()), tc.reason)
				}
				return
			}
			b, err := io.ReadAll(io.NewSectionReader(m.File(), 0, m.Size()))
			if err != nil || string(b) != "zip64 member data" {
				t.Errorf("read %q, %v", b, err)
			}
			// The MS-DOS time, or the extended timestamp's when there is one.
			want := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
			if strings.Contains(tc.desc, "other extras") {
				want = time.Unix(0, 0).UTC()
			}
			if !m.ModTime().Equal(want) {
				t.Errorf("mtime %v, want %v", m.ModTime(), want)
			}
		})
	}
}

// ext is an extra field record: id, then 8-byte values.
func ext(id uint16, vals ...uint64) []byte {
	b := binary.LittleEndian.AppendUint16(nil, id)
	b = binary.LittleEndian.AppendUint16(b, uint16(8*len(vals)))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func TestLocalHeader(t *testing.T) {
	base := twoMembers(t)
	// Bad local header signature: the member is listed, reads fail.
	b := bytes.Clone(base)
	b[3] = 9
	a := openBytes(t, b)
	_, err := a.Member("a.txt").File().ReadAt(make([]byte, 4), 0)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "local header signature") {
		t.Errorf("bad local signature: %v", err)
	}
	if _, _, ok, err := a.Member("a.txt").File().Extent(context.Background()); ok || err == nil {
		t.Errorf("Extent with a bad local header: ok %v, %v", ok, err)
	}
	// The same from a file: no offset in it is claimed for the member's
	// bytes (header.json's archive_offset) once its local header failed.
	fa, err := Open(context.Background(), writeTemp(t, b), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	if _, err := fa.Member("a.txt").File().ReadAt(make([]byte, 4), 0); err == nil {
		t.Error("read of a member with a bad local header, from a file: no error")
	}
	if off, ok := fa.Member("a.txt").archiveOffset(); ok {
		t.Errorf("archiveOffset of a member whose local header failed: %d, ok", off)
	}
	// Local extra length pointing past the end of the archive.
	b = bytes.Clone(base)
	binary.LittleEndian.PutUint16(b[28:], 0xffff)
	a = openBytes(t, b)
	if _, err := a.Member("a.txt").File().ReadAt(make([]byte, 4), 0); !errors.As(err, &fe) {
		t.Errorf("local extra past the end: %v", err)
	}
	// Stored member whose compressed size differs from its size.
	b = bytes.Clone(base)
	i := cdStart(b)
	binary.LittleEndian.PutUint32(b[i+20:], 3)
	a = openBytes(t, b)
	if _, err := a.Member("a.txt").File().ReadAt(make([]byte, 4), 0); !errors.As(err, &fe) || !strings.Contains(err.Error(), "compressed size") {
		t.Errorf("stored size mismatch: %v", err)
	}
}

// countingReader records which bytes are read.
type countingReader struct {
	r     io.ReaderAt
	calls atomic.Int64
	low   atomic.Int64 // lowest offset read
	bytes atomic.Int64 // bytes read
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	for {
		l := c.low.Load()
		if off >= l || c.low.CompareAndSwap(l, off) {
			break
		}
	}
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

// TestOpenReadsOnlyDirectory: Open reads the end of the archive and the
// central directory, no local header, in a handful of reads; a lookup of
// one array's views reads that member's headers only.
func TestOpenReadsOnlyDirectory(t *testing.T) {
	z := manyMembers(t, 3000)
	cr := &countingReader{r: bytes.NewReader(z)}
	cr.low.Store(1 << 62)
	a, err := NewReader(context.Background(), cr, int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := cr.calls.Load(); n > 4 {
		t.Errorf("Open made %d reads", n)
	}
	cd := int64(binary.LittleEndian.Uint32(z[len(z)-6:]))
	if cr.low.Load() < cd {
		t.Errorf("Open read at %d, before the central directory at %d", cr.low.Load(), cd)
	}
	// A lookup of a views folder reads that member only.
	before := cr.calls.Load()
	if n := a.Root().Lookup(context.Background(), "arr_1234"); n == nil || n.Lookup(context.Background(), "raw.bin") == nil {
		t.Fatal("no arr_1234/raw.bin")
	}
	if n := cr.calls.Load() - before; n > 2 { // the local header, then the npy header
		t.Errorf("one lookup made %d reads", n)
	}
	if n := a.Root().Lookup(context.Background(), "arr_1234.ra"); n == nil || cr.calls.Load()-before > 2 {
		t.Errorf("arr_1234.ra: %v, after %d reads in all", n, cr.calls.Load()-before)
	}
	// Listing reads every array's header (for KEY.ra): each once.
	kids := a.Root().Children(context.Background())
	if len(kids) != 9000 {
		t.Errorf("%d children", len(kids))
	}
	if n := cr.calls.Load() - before; n > 2*3000 {
		t.Errorf("listing the root made %d reads, want at most two an array", n)
	}
}
