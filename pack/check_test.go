package pack

import (
	stdzip "archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/zip"
)

// open opens the archive at path, closed when the test ends.
func open(t *testing.T, path string) *npz.Archive {
	t.Helper()
	a, err := npz.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// readAll reads a member's bytes whole.
func readAll(m *npz.Member) ([]byte, error) {
	f := m.File()
	b := make([]byte, f.Size())
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		err = nil
	}
	return b, err
}

// packTo packs the archive at in into a new file of dir, and checks that
// nothing but it is left there.
func packTo(t *testing.T, in, dir string, opts *Options) (string, Result, error) {
	t.Helper()
	a := open(t, in)
	out := filepath.Join(dir, "out.npz")
	res, err := Archive(context.Background(), a, out, opts)
	noTemporaries(t, dir)
	return out, res, err
}

// noTemporaries checks that no temporary file of a run is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.pack-*.tmp")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// arrayOf is m's .npy header when m is an array pack writes as one (a
// .npy member with a valid header, not of objects), else nil.
func arrayOf(m *npz.Member) (dataOff, dataLen int64, ok bool) {
	if m.IsDir() || !strings.HasSuffix(m.Name(), ".npy") {
		return 0, 0, false
	}
	h, err := m.Header(context.Background())
	if err != nil || h.DType.HasObject {
		return 0, 0, false
	}
	return h.DataOffset, h.DataLength(m.Size()), true
}

// checkPacked checks the archive out, packed from in with o: the same
// entries in the same order, byte for byte (archive/zip reads them and
// checks their CRC-32s too); each array with the method o.Compress says
// (other members with theirs); stored arrays' data aligned; every
// deflated member of more than one chunk with a SOZip index whose chunks
// each inflate alone to their bytes, and no index for the others.
func checkPacked(t *testing.T, in, out string, o Options) {
	t.Helper()
	if o.Chunk == 0 {
		o.Chunk = DefaultChunk
	}
	a := open(t, in)
	b, err := npz.Open(context.Background(), out, nil)
	if err != nil {
		t.Fatalf("the packed archive: %v", err)
	}
	defer b.Close()
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	std, err := stdzip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	z, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var es []zip.Entry
	z.Entries(func(e *zip.Entry) { c := *e; c.Name = strings.Clone(c.Name); es = append(es, c) })
	am, bm := a.Members(), b.Members()
	if len(am) != len(bm) || len(es) != len(am) || len(std.File) != len(am) || b.Comment() != a.Comment() || len(b.Problems()) > 0 {
		t.Fatalf("%d members packed as %d (%d, %d), comment %q, problems %q", len(am), len(bm), len(es), len(std.File), b.Comment(), b.Problems())
	}
	for i, m := range am {
		if bm[i].Name() != m.Name() || bm[i].IsDir() != m.IsDir() || bm[i].ModTime() != m.ModTime() {
			t.Errorf("member %d: %q (dir %v, %v) packed as %q (dir %v, %v)", i, m.Name(), m.IsDir(), m.ModTime(), bm[i].Name(), bm[i].IsDir(), bm[i].ModTime())
			continue
		}
		if m.IsDir() {
			continue
		}
		want, err := readAll(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(bm[i])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q: %d bytes of %d, %v", m.Name(), len(got), len(want), err)
		}
		if rc, err := std.File[i].Open(); err != nil {
			t.Errorf("archive/zip: %q: %v", m.Name(), err)
		} else if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
			t.Errorf("archive/zip: %q: %d bytes of %d, %v", m.Name(), len(got), len(want), err)
		}
		checkMember(t, m, raw, &es[i], want, o)
	}
}

// checkMember checks how m, whose bytes are data, was written in the
// packed archive raw as e.
func checkMember(t *testing.T, m *npz.Member, raw []byte, e *zip.Entry, data []byte, o Options) {
	t.Helper()
	skip, length, array := arrayOf(m)
	method := m.Method()
	if array {
		switch o.Compress {
		case None:
			method = zip.Stored
		case Deflate:
			method = zip.Deflated
		case Auto:
			method = e.Method
			if method == zip.Deflated && e.CompressedSize > e.Size-e.Size/10 {
				t.Errorf("%q: deflated to %d of %d bytes by auto", m.Name(), e.CompressedSize, e.Size)
			}
		}
	}
	if e.Method != method {
		t.Errorf("%q: method %d, want %d", m.Name(), e.Method, method)
	}
	r := bytes.NewReader(raw)
	off, err := zip.DataOffset(r, int64(len(raw)), e)
	if err != nil {
		t.Fatal(err)
	}
	align := int64(LineSize)
	if length >= PageSize {
		align = PageSize
	}
	if array && e.Method == zip.Stored && (off+skip)%align != 0 {
		t.Errorf("%q: its data at byte %d, not a multiple of %d", m.Name(), off+skip, align)
	}
	if e.Method != zip.Deflated {
		return
	}
	x, err := zip.ReadSOZipIndex(r, int64(len(raw)), e, off)
	if e.Size <= o.Chunk {
		if err == nil {
			t.Errorf("%q: %d bytes, one chunk, have an index", m.Name(), e.Size)
		}
		return
	}
	if err != nil || x.ChunkSize != o.Chunk {
		t.Fatalf("%q: index %+v, %v", m.Name(), x, err)
	}
	stream := raw[off : off+e.CompressedSize]
	for i := range x.Chunks() {
		uoff, n, _, _ := x.Chunk(i)
		got, err := inflateChunk(x, stream, i)
		if err != nil || !bytes.Equal(got, data[uoff:uoff+n]) {
			t.Errorf("%q: chunk %d inflated alone: %d bytes, %v", m.Name(), i, len(got), err)
		}
	}
}

// inflateChunk inflates chunk i of stream alone, from an empty window:
// one but the last ends with a sync flush and a full flush (two empty
// stored blocks), after which a final empty block ends a stream.
func inflateChunk(x *zip.SOZipIndex, stream []byte, i int) ([]byte, error) {
	_, n, coff, cn := x.Chunk(i)
	c := stream[coff : coff+cn]
	if i < x.Chunks()-1 {
		if !bytes.HasSuffix(c, []byte{0, 0, 0xff, 0xff, 0, 0, 0, 0xff, 0xff}) {
			return nil, errors.New("the chunk does not end with a sync flush and a full flush")
		}
		c = append(bytes.Clone(c), 3, 0) // a final block of fixed codes, empty
	}
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(c)), n+1))
	if err == nil && int64(len(out)) != n {
		err = errors.New("the chunk inflates to another length")
	}
	return out, err
}
