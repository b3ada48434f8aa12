package npz

import (
	"archive/zip"
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// zent is one member for makeZip.
type zent struct {
	name    string
	data    []byte
	method  uint16 // 0 stored, 8 deflated
	nonUTF8 bool
}

// makeZip writes members with archive/zip.
func makeZip(t testing.TB, ents []zent) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range ents {
		fh := &zip.FileHeader{Name: e.name, Method: e.method, NonUTF8: e.nonUTF8}
		fw, err := w.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.name, "/") {
			continue
		}
		if _, err := fw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func openBytes(t testing.TB, b []byte) *Archive {
	t.Helper()
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// walk lists the tree: "path" for files, "path/" for folders, in
// Children order, and checks that Lookup agrees with Children, that inode
// numbers are unique and that every file reads to its Size (but the
// views an array lacks, which fail).
func walk(t testing.TB, a *Archive) []string { return walkTree(t, a, false) }

// walkTree is walk; with readErrOK, read errors are expected (a damaged
// archive) and only a wrong size of a successful read is reported.
func walkTree(t testing.TB, a *Archive, readErrOK bool) []string {
	t.Helper()
	var out []string
	seen := map[uint64]string{}
	var rec func(n *Node, prefix string)
	rec = func(n *Node, prefix string) {
		for _, c := range n.Children(context.Background()) {
			p := prefix + c.Name()
			if other, dup := seen[c.Ino()]; dup {
				t.Errorf("inode %d of %q is also %q's", c.Ino(), p, other)
			}
			seen[c.Ino()] = p
			if l := n.Lookup(context.Background(), c.Name()); l == nil || l.Ino() != c.Ino() || l.Name() != c.Name() {
				t.Errorf("Lookup(%q) in %q does not find the listed child", c.Name(), prefix)
			}
			if c.IsDir() {
				if c.File(context.Background()) != nil {
					t.Errorf("folder %q has a File", p)
				}
				out = append(out, p+"/")
				rec(c, p+"/")
				continue
			}
			out = append(out, p)
			f := c.File(context.Background())
			if f == nil {
				t.Errorf("file %q has no File", p)
				continue
			}
			b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
			// A view the array does not have (see Member.viewFile)
			// fails its reads, and its member says why.
			lacks := c.kind == kindView && c.member().Reason(context.Background()) != ""
			if err != nil && !isMethodError(err) && !readErrOK && !lacks {
				t.Errorf("%q: %v", p, err)
			} else if err == nil && int64(len(b)) != f.Size() {
				t.Errorf("%q: read %d bytes of %d", p, len(b), f.Size())
			}
		}
	}
	if a.Root().Ino() != 1 || !a.Root().IsDir() || a.Root().Name() != "" {
		t.Errorf("root: ino %d dir %v name %q", a.Root().Ino(), a.Root().IsDir(), a.Root().Name())
	}
	seen[1] = "/"
	rec(a.Root(), "")
	return out
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// manyMembers is an archive of n stored tiny .npy members arr_0.npy, ...
func manyMembers(t testing.TB, n int) []byte {
	t.Helper()
	hdr, err := npy.EncodeHeader("<f8", false, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	data := append(hdr, make([]byte, 16)...)
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := range n {
		fw, err := w.CreateRaw(&zip.FileHeader{Name: "arr_" + strconv.Itoa(i) + ".npy", Method: zip.Store,
			CRC32: crc32.ChecksumIEEE(data), CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
