package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npzfs/npzfs/internal/testfiles"
	"github.com/npzfs/npzfs/npy"
)

// sozipEnt is a member of a test archive (sozipZip): deflated in chunks
// of chunk bytes, with its hidden SOZip index after it, or stored when
// chunk is 0. index, when set, changes the index's bytes before they are
// written (and its CRC-32 with them, unless keepCRC); descriptor puts a
// data descriptor after the member's data.
type sozipEnt struct {
	name       string
	data       []byte
	chunk      int
	index      func(idx []byte) []byte
	keepCRC    bool
	descriptor bool
}

// sozipZip writes ents as an archive by hand, from APPNOTE and the
// SOZip spec (not with npzfs's zip writer): each deflated member in
// chunks that compress/flate deflates alone, a sync flush and then a
// full flush (an empty stored block) after each but the last, followed
// by its hidden index: a stored entry ".NAME.sozip.idx" in its folder,
// with a local header and no central directory record, holding a
// 32-byte header (version 1, no skip, the chunk size, 8-byte offsets,
// the member's sizes) and where each chunk but the first starts.
func sozipZip(t testing.TB, ents []sozipEnt) []byte {
	t.Helper()
	le := binary.LittleEndian
	var out, dir bytes.Buffer
	local := func(name string, flags, method uint16, crc uint32, csize, size int) {
		h := le.AppendUint32(nil, 0x04034b50)
		h = le.AppendUint16(h, 20)
		h = le.AppendUint16(h, flags)
		h = le.AppendUint16(h, method)
		h = le.AppendUint32(h, 0x21<<16) // 1980-01-01 00:00
		if flags&8 != 0 {
			crc, csize, size = 0, 0, 0
		}
		h = le.AppendUint32(h, crc)
		h = le.AppendUint32(h, uint32(csize))
		h = le.AppendUint32(h, uint32(size))
		h = le.AppendUint16(h, uint16(len(name)))
		h = le.AppendUint16(h, 0)
		out.Write(append(h, name...))
	}
	for _, e := range ents {
		at := out.Len()
		crc := crc32.ChecksumIEEE(e.data)
		method, flags := uint16(0), uint16(0)
		stream, starts := e.data, []int64(nil)
		if e.chunk > 0 {
			method = 8
			stream, starts = testfiles.Chunked(t, e.data, e.chunk, 6)
		}
		if e.descriptor {
			flags = 8
		}
		local(e.name, flags, method, crc, len(stream), len(e.data))
		out.Write(stream)
		if e.descriptor {
			d := le.AppendUint32(nil, 0x08074b50)
			d = le.AppendUint32(d, crc)
			d = le.AppendUint32(d, uint32(len(stream)))
			out.Write(le.AppendUint32(d, uint32(len(e.data))))
		}
		if e.chunk > 0 {
			idx := le.AppendUint32(nil, 1)
			idx = le.AppendUint32(idx, 0)
			idx = le.AppendUint32(idx, uint32(e.chunk))
			idx = le.AppendUint32(idx, 8)
			idx = le.AppendUint64(idx, uint64(len(e.data)))
			idx = le.AppendUint64(idx, uint64(len(stream)))
			for _, s := range starts {
				idx = le.AppendUint64(idx, uint64(s))
			}
			icrc := crc32.ChecksumIEEE(idx)
			if e.index != nil {
				idx = e.index(idx)
				if !e.keepCRC {
					icrc = crc32.ChecksumIEEE(idx)
				}
			}
			d, base := path.Split(e.name)
			local(d+"."+base+".sozip.idx", 0, 0, icrc, len(idx), len(idx))
			out.Write(idx)
		}
		c := le.AppendUint32(nil, 0x02014b50)
		c = le.AppendUint16(c, 20)
		c = le.AppendUint16(c, 20)
		c = le.AppendUint16(c, flags)
		c = le.AppendUint16(c, method)
		c = le.AppendUint32(c, 0x21<<16)
		c = le.AppendUint32(c, crc)
		c = le.AppendUint32(c, uint32(len(stream)))
		c = le.AppendUint32(c, uint32(len(e.data)))
		c = le.AppendUint16(c, uint16(len(e.name)))
		c = append(c, make([]byte, 12)...) // extra, comment, disk, attributes
		c = le.AppendUint32(c, uint32(at))
		dir.Write(append(c, e.name...))
	}
	end := le.AppendUint32(nil, 0x06054b50)
	end = le.AppendUint32(end, 0)
	end = le.AppendUint16(end, uint16(len(ents)))
	end = le.AppendUint16(end, uint16(len(ents)))
	end = le.AppendUint32(end, uint32(dir.Len()))
	end = le.AppendUint32(end, uint32(out.Len()))
	end = le.AppendUint16(end, 0)
	out.Write(dir.Bytes())
	out.Write(end)
	return out.Bytes()
}

// sozipArray is an .npy of n float32s of noise, which deflate keeps
// about as long.
func sozipArray(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	h, err := npy.EncodeHeader("<f4", false, []int64{int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	b := h
	for range n {
		b = binary.LittleEndian.AppendUint32(b, rng.Uint32()>>9|0x3f800000)
	}
	return b
}

// countedReader counts the bytes read from an archive.
type countedReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countedReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestSOZipRandomAccess: a deflated member followed by its SOZip index
// (with or without a data descriptor between) is read at 90% at once,
// without verification (VerifyLazy), reading a chunk's compressed bytes
// and the index, not the member; verified first (VerifyAuto), by a pass
// that inflates its chunks, after which a read elsewhere reads a chunk's
// bytes again. Every byte is right, read in any order; SOZip and
// HasSavedIndex say it has one; and nothing is written to the index
// store.
func TestSOZipRandomAccess(t *testing.T) {
	data := sozipArray(t, 1<<20, 1) // 4 MiB
	for _, tc := range []struct {
		desc bool
		mode VerifyMode
	}{{false, VerifyLazy}, {true, VerifyLazy}, {false, VerifyAuto}} {
		z := sozipZip(t, []sozipEnt{{name: "a/x.npy", data: data, chunk: 64 << 10, descriptor: tc.desc}, {name: "s.npy", data: data[:1000]}})
		store, err := OpenIndexStore(t.TempDir(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		c := &countedReader{r: bytes.NewReader(z)}
		a, err := NewReader(context.Background(), c, int64(len(z)), &Options{SpanSize: 128 << 10, Indexes: store, Verify: tc.mode, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		m := a.Member("a/x.npy")
		for i, off := range []int64{int64(len(data)) * 9 / 10, int64(len(data)) / 3} {
			before, p := c.n.Load(), make([]byte, 4096)
			if _, err := m.File().ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+4096]) {
				t.Fatalf("%+v: read at %d: %v", tc, off, err)
			}
			n, pass := c.n.Load()-before, i == 0 && tc.mode == VerifyAuto
			if pass && n < m.CompressedSize() || !pass && n > int64(len(data))/16 {
				t.Errorf("%+v: a read at %d read %d bytes of a member of %d", tc, off, n, m.CompressedSize())
			}
		}
		if st := a.VerifyStats(); m.Verified() != (tc.mode == VerifyAuto) || st.Passes != int64(btoi(tc.mode == VerifyAuto)) {
			t.Errorf("%+v: verified %v, %+v", tc, m.Verified(), st)
		}
		x, err := m.SOZip(context.Background())
		if err != nil || x == nil || x.ChunkSize != 64<<10 || x.Chunks != (len(data)+64<<10-1)/(64<<10) || !m.HasSavedIndex(context.Background()) {
			t.Errorf("%+v: SOZip %+v, %v", tc, x, err)
		}
		if x, err := a.Member("s.npy").SOZip(context.Background()); x != nil || err != nil {
			t.Errorf("a stored member's SOZip: %+v, %v", x, err)
		}
		readAnywhere(t, m.File(), data)
		if err := m.Verify(context.Background(), nil); err != nil {
			t.Errorf("%+v: Verify: %v", tc, err)
		}
		a.Close()
		store.Close()
		if files := filesIn(store.Path()); len(files) > 0 {
			t.Errorf("%+v: the store holds %q", tc, files)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readAnywhere reads f at random offsets, and checks its bytes are data's.
func readAnywhere(t *testing.T, f *File, data []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(2, 2))
	for range 50 {
		off := rng.Int64N(int64(len(data)))
		p := make([]byte, min(1+rng.Int64N(300<<10), int64(len(data))-off))
		if n, err := f.ReadAt(p, off); (err != nil && err != io.EOF) || !bytes.Equal(p[:n], data[off:off+int64(len(p))]) {
			t.Fatalf("read of %d at %d: %d, %v", len(p), off, n, err)
		}
	}
}

// filesIn lists the files under dir.
func filesIn(dir string) []string {
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// TestSOZipIndexNotUsed: an index that cannot be the member's (damaged,
// cut short, another member's, made for other sizes) is not used, and
// the log says why; one that passes every check but lies (offsets in the
// wrong places, another chunk size) is dropped at the first chunk that
// is not what it says, and logged. Either way every byte read is right:
// the member is read as one without an index. An archive without
// indexes logs nothing of them.
func TestSOZipIndexNotUsed(t *testing.T) {
	data := sozipArray(t, 1<<19, 4) // 2 MiB
	other := sozipArray(t, 1<<19, 5)
	le := binary.LittleEndian
	offsets := func(f func(i int, o uint64) uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			for i := 32; i+8 <= len(b); i += 8 {
				le.PutUint64(b[i:], f(i/8-4, le.Uint64(b[i:])))
			}
			return b
		}
	}
	otherIdx := func(b []byte) []byte { // other's, of its sizes
		stream, starts := testfiles.Chunked(t, other, 32<<10, 6)
		le.PutUint64(b[24:], uint64(len(stream)))
		for i, s := range starts {
			le.PutUint64(b[32+8*i:], uint64(s))
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		ent     sozipEnt
		logged  string // in the log, "" for nothing
		dropped bool   // found wrong in use, not refused
	}{
		{"none", sozipEnt{}, "", false},
		{"damaged", sozipEnt{chunk: 32 << 10, keepCRC: true, index: func(b []byte) []byte { b[40] ^= 1; return b }}, "CRC-32", false},
		{"cut short", sozipEnt{chunk: 32 << 10, index: func(b []byte) []byte { return b[:len(b)-8] }}, "holds", false},
		{"another size", sozipEnt{chunk: 32 << 10, index: func(b []byte) []byte { le.PutUint64(b[16:], uint64(len(data)+1)); return b }}, "not the entry's", false},
		{"another member's", sozipEnt{chunk: 32 << 10, index: otherIdx}, "not the entry's", false},
		{"offsets a byte off", sozipEnt{chunk: 32 << 10, index: offsets(func(_ int, o uint64) uint64 { return o + 1 })}, "not used", true},
		{"another chunk size", sozipEnt{chunk: 32 << 10, index: func(b []byte) []byte {
			// Twice the chunks, each said to start near one of the
			// writer's.
			le.PutUint32(b[8:], 16<<10)
			t := bytes.Clone(b[32:])
			b = b[:32]
			for i := 0; i+8 <= len(t); i += 8 {
				o := le.Uint64(t[i:])
				b = le.AppendUint64(le.AppendUint64(b, o-100), o+100)
			}
			return b
		}}, "not used", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.ent
			e.name, e.data = "x.npy", data
			z := withDeflated(t, data) // no hidden entry: another member follows
			if tc.name != "none" {
				z = sozipZip(t, []sozipEnt{e, {name: "y.npy", data: data[:100]}})
			}
			var log logLines
			a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{SpanSize: 64 << 10, Logf: log.logf})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			m := a.Member("x.npy")
			if x, err := m.SOZip(context.Background()); err != nil || (x != nil) != tc.dropped {
				t.Errorf("SOZip: %+v, %v", x, err)
			}
			rng := rand.New(rand.NewPCG(6, 6))
			f := m.File()
			for _, off := range []int64{int64(len(data)) * 9 / 10, 100, int64(len(data)) - 10, int64(len(data)) / 3} {
				p := make([]byte, min(1+rng.Int64N(200<<10), int64(len(data))-off))
				if n, err := f.ReadAt(p, off); (err != nil && err != io.EOF) || !bytes.Equal(p[:n], data[off:off+int64(len(p))]) {
					t.Fatalf("read of %d at %d: %d, %v", len(p), off, n, err)
				}
			}
			text := log.text()
			if tc.logged == "" && strings.Contains(text, "SOZip") || tc.logged != "" && (!strings.Contains(text, "SOZip index is not used") || !strings.Contains(text, tc.logged)) {
				t.Errorf("log %q, want %q", text, tc.logged)
			}
			if strings.Count(text, "is not used") > 1 {
				t.Errorf("logged more than once: %q", text)
			}
		})
	}
}

// withDeflated is an archive (archive/zip's) of one member x.npy, data
// deflated whole, then y.npy: a member with no index after it.
func withDeflated(t testing.TB, data []byte) []byte {
	return makeZip(t, []zent{{name: "x.npy", data: data, method: 8}, {name: "y.npy", data: data[:100]}})
}

// TestSOZipHeaderJSON: header.json of a deflated member of a local
// archive says what its SOZip index says; a member without one has no
// "sozip".
func TestSOZipHeaderJSON(t *testing.T) {
	data := sozipArray(t, 1<<18, 7)
	z := sozipZip(t, []sozipEnt{{name: "x.npy", data: data, chunk: 100000}, {name: "y.npy", data: data}})
	p := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(p, z, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), p, &Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for name, want := range map[string]string{"x.npy": `{"chunk_size":100000,"chunks":11}`, "y.npy": "null"} {
		js, err := a.Member(name).HeaderJSON(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		got := "null"
		if s, ok := doc["sozip"]; ok {
			var b bytes.Buffer
			json.Compact(&b, s)
			got = b.String()
		}
		if got != want {
			t.Errorf("%s: sozip %s, want %s", name, got, want)
		}
	}
}

// TestSOZipDamagedMember: a byte changed inside a chunk of a member with
// a SOZip index, verified before it is served (VerifyAuto): every read
// fails, at 90% and at its start alike, as for any member whose
// verification fails; none gives a byte.
func TestSOZipDamagedMember(t *testing.T) {
	data := sozipArray(t, 1<<19, 8) // 2 MiB
	_, starts := testfiles.Chunked(t, data, 64<<10, 6)
	for _, at := range []int64{starts[9] + 20000, starts[20] + 7, 3000} {
		z := sozipZip(t, []sozipEnt{{name: "x.npy", data: data, chunk: 64 << 10}})
		z[30+len("x.npy")+int(at)] ^= 0x10
		a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		f := a.Member("x.npy").File()
		for _, off := range []int64{int64(len(data)) * 9 / 10, 0} {
			if n, err := f.ReadAt(make([]byte, 4096), off); err == nil || n != 0 {
				t.Errorf("byte %d changed: read at %d: %d bytes, %v", at, off, n, err)
			}
		}
		if a.Member("x.npy").Failure() == nil {
			t.Errorf("byte %d changed: the member does not say it fails", at)
		}
		a.Close()
	}
}
