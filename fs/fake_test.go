//go:build linux

package fs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// memEntry is a small in-memory tree for testing the fs layer without npz.
type memEntry struct {
	name string
	ino  uint64
	dir  bool
	kids []*memEntry
	c    Content
	mt   time.Time
	// gaps: the listing has a position with no entry after each kid,
	// as npz's views folders have for the views an array lacks.
	gaps bool
}

func (e *memEntry) Name() string { return e.name }
func (e *memEntry) Ino() uint64  { return e.ino }
func (e *memEntry) IsDir() bool  { return e.dir }
func (e *memEntry) Attr(context.Context) (Attr, error) {
	a := Attr{ModTime: e.mt}
	if e.c != nil {
		a.Size = e.c.Size()
		a.DiskUsage = a.Size
	}
	return a, nil
}
func (e *memEntry) Lookup(_ context.Context, name string) (Entry, error) {
	for _, k := range e.kids {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fs.ErrNotExist
}
func (e *memEntry) List(context.Context) (Listing, error) {
	if !e.dir {
		return nil, syscall.ENOTDIR
	}
	var out Entries
	for _, k := range e.kids {
		out = append(out, k)
		if e.gaps {
			out = append(out, nil)
		}
	}
	return out, nil
}
func (e *memEntry) File(context.Context) (Content, error) {
	if e.c == nil {
		return nil, syscall.EISDIR
	}
	return e.c, nil
}

// memContent serves data from memory, or, when f is set, says the data is
// at [off, off+len(data)) of f so reads are spliced.
type memContent struct {
	data []byte
	f    *os.File
	off  int64
	err  error // returned by ReadAt and Extent when set
}

func (c *memContent) Size() int64 { return int64(len(c.data)) }
func (c *memContent) ReadAtContext(_ context.Context, p []byte, off int64) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if off >= int64(len(c.data)) {
		return 0, fmt.Errorf("read at %d past end %d: %w", off, len(c.data), errEOF)
	}
	n := copy(p, c.data[off:])
	if n < len(p) {
		return n, errEOF
	}
	return n, nil
}
func (c *memContent) Extent(context.Context) (uintptr, int64, bool, error) {
	if c.err != nil {
		return 0, 0, false, c.err
	}
	if c.f == nil {
		return 0, 0, false, nil
	}
	return c.f.Fd(), c.off, true, nil
}

// headContent is a memContent whose first bytes are a head made in
// memory (Headed): its Extent places the bytes after the head.
type headContent struct {
	memContent
	head []byte
}

func (c *headContent) Head(context.Context) ([]byte, error) { return c.head, nil }

// pattern returns n deterministic bytes.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// fakeTree builds:
//
//	/            ino 1
//	  big.bin    3 MiB + 17 bytes, spliced from a backing file (ino 2)
//	  small.txt  "hello\n", from memory (ino 3)
//	  sub/       (ino 4)
//	    deep.bin 70000 bytes from memory (ino 5)
//	    near.bin 5000 bytes of big.bin's, spliced from the backing file (ino 8)
//	    head.bin "HEAD:" then 3000 bytes of big.bin's from the backing file (ino 9)
//	  bad.bin    every read fails with a non-errno error (ino 6)
//	  many/      (ino 7) with 1000 empty files f0000..f0999 (ino 100+)
//
// The backing file holds junk before and after big.bin's bytes, so a read
// that is not clamped to the file's end shows up.
func fakeTree(dir string) (*memEntry, error) {
	mt := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	big := pattern(3<<20+17, 7)
	back := filepath.Join(dir, "backing")
	var buf bytes.Buffer
	buf.Write(bytes.Repeat([]byte{0xEE}, 4099))
	buf.Write(big)
	buf.Write(bytes.Repeat([]byte{0xDD}, 8192))
	if err := os.WriteFile(back, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	f, err := os.Open(back)
	if err != nil {
		return nil, err
	}
	many := &memEntry{name: "many", ino: 7, dir: true, mt: mt}
	for i := 0; i < 1000; i++ {
		many.kids = append(many.kids, &memEntry{name: fmt.Sprintf("f%04d", i), ino: uint64(100 + i), c: &memContent{}, mt: mt})
	}
	root := &memEntry{name: "", ino: 1, dir: true, mt: mt, kids: []*memEntry{
		{name: "bad.bin", ino: 6, c: &memContent{data: make([]byte, 100), err: errCorrupt}, mt: mt},
		{name: "big.bin", ino: 2, c: &memContent{data: big, f: f, off: 4099}, mt: mt},
		many,
		{name: "small.txt", ino: 3, c: &memContent{data: []byte("hello\n")}, mt: mt},
		{name: "sub", ino: 4, dir: true, mt: mt, kids: []*memEntry{
			{name: "deep.bin", ino: 5, c: &memContent{data: pattern(70000, 9)}, mt: mt},
			{name: "head.bin", ino: 9, c: &headContent{memContent{data: append([]byte("HEAD:"), big[200:3200]...), f: f, off: 4099 + 200}, []byte("HEAD:")}, mt: mt},
			{name: "near.bin", ino: 8, c: &memContent{data: big[100:5100], f: f, off: 4099 + 100}, mt: mt},
		}},
	}}
	sort.Slice(root.kids, func(i, j int) bool { return root.kids[i].name < root.kids[j].name })
	return root, nil
}

var fixedTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// child is e's child name, which must be there.
func child(e Entry, name string) Entry {
	c, err := e.Lookup(context.Background(), name)
	if err != nil {
		panic(err)
	}
	return c
}

// content is e's file content, which must have one.
func content(e Entry) Content {
	c, err := e.File(context.Background())
	if err != nil {
		panic(err)
	}
	return c
}
