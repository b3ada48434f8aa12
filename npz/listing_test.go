package npz

import (
	"archive/zip"
	"bytes"
	"context"
	"hash/crc32"
	"slices"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// kindsArchive is an archive with a member of every kind a folder lists:
// good arrays (stored and deflated), an array of a method npzfs cannot
// read, a broken header, an object array, and names that clash with
// views (a member file KEY beside KEY.npy, a member KEY.ra beside KEY.npy,
// KEY.ra.npy whose views folder is KEY.ra beside KEY.npy, a folder KEY).
func kindsArchive(t *testing.T) []byte {
	t.Helper()
	obj, err := npy.EncodeHeader("|O", false, []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	ents := []zent{
		{name: "good.npy", data: npyOf(t, "good")},
		{name: "deflated.npy", data: npyOf(t, "deflated"), method: 8},
		{name: "broken.npy", data: []byte("not an npy header")},
		{name: "object.npy", data: append(obj, "\x80\x04N."...)},
		{name: "file.npy", data: npyOf(t, "file")},
		{name: "file", data: []byte("a member called file")},
		{name: "ra.npy", data: npyOf(t, "ra")},
		{name: "ra.ra", data: []byte("a member called ra.ra")},
		{name: "twice.npy", data: npyOf(t, "twice")},
		{name: "twice.ra.npy", data: npyOf(t, "twice.ra")},
		{name: "dir.npy", data: npyOf(t, "dir")},
		{name: "dir/inner.npy", data: npyOf(t, "inner")},
	}
	var buf bytes.Buffer
	buf.Write(makeZip(t, ents))
	// An unreadable member (bzip2), written raw after the others.
	z, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := zip.NewWriter(&out)
	for _, f := range z.File {
		if err := w.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	raw := npyOf(t, "bzip2")
	fw, err := w.CreateRaw(&zip.FileHeader{Name: "bzip2.npy", Method: 12, CRC32: crc32.ChecksumIEEE(raw),
		CompressedSize64: uint64(len(raw)), UncompressedSize64: uint64(len(raw))})
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(raw)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestListingsAndLookupsAgreeConcurrently: for every kind of member, what
// a folder lists is what lookups find, by name and by inode number
// (Archive.Node), with the same folder holding it, whatever runs at the
// same time (listings, listings with attributes, lookups, reads of
// views); and the names do not depend on what was read first.
func TestListingsAndLookupsAgreeConcurrently(t *testing.T) {
	z := kindsArchive(t)
	want := []string{
		"broken", "broken.npy", "broken.ra",
		"bzip2", "bzip2.npy", "bzip2.ra",
		"deflated", "deflated.npy", "deflated.ra",
		"dir", "dir.npy", "dir.ra",
		"file", "file.npy", "file.ra",
		"good", "good.npy", "good.ra",
		"object", "object.npy", "object.ra",
		"ra", "ra.npy", "ra.ra",
		"twice", "twice.npy", "twice.ra", "twice.ra.npy", "twice.ra.ra",
	}
	absent := []string{"dir/header.json", "ra.ra/header.json"}
	for round := range 20 {
		a := openBytes(t, z)
		var wg sync.WaitGroup
		names := make([][]string, 4)
		for g := range 4 {
			wg.Go(func() {
				switch (g + round) % 4 {
				case 0: // a plain listing
					for _, c := range a.Root().Children(context.Background()) {
						names[g] = append(names[g], c.Name())
					}
				case 1: // a listing with attributes
					l := a.Root().Listing(context.Background())
					l.Prepare(context.Background(), 0, l.Len())
					for _, c := range a.Root().Children(context.Background()) {
						if f := c.File(context.Background()); f != nil {
							f.Size()
						}
						names[g] = append(names[g], c.Name())
					}
				case 2: // lookups, and into every views folder
					for _, name := range want {
						if c := a.Root().Lookup(context.Background(), name); c != nil {
							names[g] = append(names[g], c.Name())
							if c.IsDir() {
								c.Children(context.Background())
							}
						}
					}
				case 3: // reads of views first
					for _, name := range want {
						if c := a.Root().Lookup(context.Background(), name); c != nil {
							if f := c.File(context.Background()); f != nil {
								f.ReadAt(make([]byte, 64), 0)
							}
							names[g] = append(names[g], c.Name())
						}
					}
				}
			})
		}
		wg.Wait()
		for g, got := range names {
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, goroutine %d: names\n%q\nwant\n%q", round, g, got, want)
			}
		}
		for _, p := range absent {
			if lookupPath(a, p) != nil {
				t.Errorf("%s found", p)
			}
		}
		// By inode number: the same node, held by the same folder.
		var check func(dir *Node)
		check = func(dir *Node) {
			for _, c := range dir.Children(context.Background()) {
				n, parent := a.Node(c.Ino())
				if n == nil || n.Name() != c.Name() || n.IsDir() != c.IsDir() || parent != dir.Ino() {
					t.Errorf("Node(%d) of %q: %v, parent %d, want %d", c.Ino(), c.Name(), n, parent, dir.Ino())
				}
				if c.IsDir() {
					check(c)
				}
			}
		}
		check(a.Root())
		for _, ino := range []uint64{0, a.MaxIno() + 1} {
			if n, _ := a.Node(ino); n != nil {
				t.Errorf("Node(%d) = %q", ino, n.Name())
			}
		}
	}
}

// TestHeaderFactsAreSharedByBytes: arrays whose npy headers are the same
// bytes share one parse, but only where their members' sizes agree too:
// a member of the same header whose data is cut short has no views.
func TestHeaderFactsAreSharedByBytes(t *testing.T) {
	hdr, err := npy.EncodeHeader("<f4", false, []int64{16})
	if err != nil {
		t.Fatal(err)
	}
	whole := append(bytes.Clone(hdr), make([]byte, 64)...)
	a := openBytes(t, makeZip(t, []zent{
		{name: "a.npy", data: whole},
		{name: "b.npy", data: whole[:len(whole)-4]},
		{name: "c.npy", data: whole},
	}))
	for _, tc := range []struct {
		key   string
		views bool
	}{{"a", true}, {"b", false}, {"c", true}, {"b", false}} {
		m := a.Member(tc.key + ".npy")
		if m.HasViews(context.Background()) != tc.views {
			t.Errorf("%s: views %v, want %v (%s)", tc.key, m.HasViews(context.Background()), tc.views, m.Reason(context.Background()))
		}
		if f := lookupPath(a, tc.key+".ra").File(context.Background()); tc.views && f.Size() != 48+8+64 {
			t.Errorf("%s.ra: %d bytes", tc.key, f.Size())
		}
	}
	if len(a.facts.m) != 1 {
		t.Errorf("%d headers' facts kept, want 1", len(a.facts.m))
	}
}
