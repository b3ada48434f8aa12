package npz

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
)

// FuzzOpen opens arbitrary bytes as an archive, walks the whole tree and
// reads every file (the first and last bytes of large ones) and every
// member's reason and header: nothing may panic, and what is allocated is
// bounded by the input. On every input archive/zip accepts too, the two
// must agree (see agreeWithZip), as FuzzInflate compares with
// compress/flate.
func FuzzOpen(f *testing.F) {
	for _, p := range corpus(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 16<<10 {
			f.Add(b)
		}
	}
	f.Add(makeZip(f, []zent{{name: "a.npy", data: bigNPY(f, 2000, 5), method: 8}, {name: "a/", data: nil}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{SpanSize: 64 << 10, CacheBytes: 256 << 10, MaxHeaderLen: 64 << 10})
		if err != nil {
			if a != nil {
				t.Fatal("an archive and an error")
			}
			return
		}
		if len(a.Members()) > len(b)/centralLen {
			t.Fatalf("%d members from %d bytes", len(a.Members()), len(b))
		}
		buf := make([]byte, 4096)
		var visit func(n *Node, depth int)
		visit = func(n *Node, depth int) {
			if depth > len(b) {
				t.Fatal("tree deeper than the archive is long")
			}
			for _, c := range n.Children(context.Background()) {
				if l := n.Lookup(context.Background(), c.Name()); l == nil || l.Ino() != c.Ino() {
					t.Fatalf("Lookup(%q) disagrees with Children", c.Name())
				}
				if c.IsDir() {
					visit(c, depth+1)
					continue
				}
				f := c.File(context.Background())
				for _, off := range []int64{0, f.Size() - int64(len(buf)), f.Size() - 1, f.Size()} {
					if off < 0 {
						continue
					}
					k, err := f.ReadAt(buf, off)
					if k > len(buf) || (err == nil && k != len(buf)) || (err == io.EOF && off+int64(k) != f.Size()) {
						t.Fatalf("ReadAt(%d) of %d: %d, %v", off, f.Size(), k, err)
					}
				}
				f.Extent(context.Background())
			}
		}
		visit(a.Root(), 0)
		for _, m := range a.Members() {
			m.Reason(context.Background())
			m.Header(context.Background())
			m.HasViews(context.Background())
		}
		agreeWithZip(t, a, b)
	})
}

// agreeWithZip checks a against archive/zip's reading of the same bytes,
// when archive/zip accepts them: the same entries in the same order, with
// the same sizes, CRC-32s and methods (and names, where they are ASCII,
// which both decode alike), and for every member archive/zip reads whole
// with a good CRC-32, either the same bytes from npz or an error: npz
// checks more than archive/zip (a local header must name its member, as
// Python's zipfile requires), so it may refuse a member archive/zip reads,
// but never serve other bytes.
func agreeWithZip(t *testing.T, a *Archive, b []byte) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	ms := a.Members()
	zfs := zr.File
	if len(zfs) > len(ms) && slices.Contains(a.Problems(), fmt.Sprintf("end record claims %d entries, the central directory has %d", len(zfs), len(ms))) {
		// The end record claims more entries than the central directory
		// it bounds holds: npz reads the directory's declared length, as
		// Python's zipfile does, archive/zip reads the claimed count
		// past it. They must agree on the entries inside it.
		zfs = zfs[:len(ms)]
	}
	if len(zfs) != len(ms) {
		t.Fatalf("archive/zip reads %d entries, npz %d", len(zfs), len(ms))
	}
	for i, zf := range zfs {
		m := ms[i]
		if isASCII(zf.Name) && zf.Name != m.Name() {
			t.Fatalf("entry %d: archive/zip names it %q, npz %q", i, zf.Name, m.Name())
		}
		if zf.UncompressedSize64 != uint64(m.Size()) || zf.CompressedSize64 != uint64(m.CompressedSize()) ||
			zf.CRC32 != m.CRC32() || zf.Method != m.Method() {
			t.Fatalf("entry %d (%q): archive/zip size %d csize %d crc %08x method %d; npz %d %d %08x %d", i, zf.Name,
				zf.UncompressedSize64, zf.CompressedSize64, zf.CRC32, zf.Method, m.Size(), m.CompressedSize(), m.CRC32(), m.Method())
		}
		f := m.File()
		if f == nil || zf.UncompressedSize64 > 1<<20 || (zf.Method != zip.Store && zf.Method != zip.Deflate) {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			continue
		}
		want, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || uint64(len(want)) != zf.UncompressedSize64 {
			continue // archive/zip could not read it whole either
		}
		got := make([]byte, len(want))
		n, err := f.ReadAt(got, 0)
		if err != nil && err != io.EOF {
			continue // refused
		}
		if n != len(want) || !bytes.Equal(got, want) {
			t.Fatalf("entry %d (%q): archive/zip reads %d good bytes; npz %d bytes, %v, equal %v", i, zf.Name, len(want), n, err, bytes.Equal(got[:n], want[:n]))
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
