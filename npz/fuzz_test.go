package npz

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// FuzzOpen opens arbitrary bytes as an archive, walks the whole tree and
// reads every file (the first and last bytes of large ones) and every
// member's reason and header: nothing may panic, and what is allocated is
// bounded by the input.
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
		a, err := NewReader(bytes.NewReader(b), int64(len(b)), &Options{SpanSize: 64 << 10, CacheBytes: 256 << 10, MaxHeaderLen: 64 << 10})
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
			for _, c := range n.Children() {
				if n.Lookup(c.Name()) != c {
					t.Fatalf("Lookup(%q) disagrees with Children", c.Name())
				}
				if c.IsDir() {
					visit(c, depth+1)
					continue
				}
				f := c.File()
				for _, off := range []int64{0, f.Size() - int64(len(buf)), f.Size() - 1, f.Size()} {
					if off < 0 {
						continue
					}
					k, err := f.ReadAt(buf, off)
					if k > len(buf) || (err == nil && k != len(buf)) || (err == io.EOF && off+int64(k) != f.Size()) {
						t.Fatalf("ReadAt(%d) of %d: %d, %v", off, f.Size(), k, err)
					}
				}
				f.Extent()
			}
		}
		visit(a.Root(), 0)
		for _, m := range a.Members() {
			m.Reason()
			m.Header()
			m.HasViews()
		}
	})
}
