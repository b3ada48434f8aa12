package npz

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// TestBareNPY: a bare .npy file opens as an archive of one member, the
// file itself, with its views; raw.bin is the file's data bytes, spliced
// from the file; a file that is neither a zip nor a .npy is refused, one
// with a broken header is served with an empty views folder. What a file
// is comes from its bytes, not its name.
func TestBareNPY(t *testing.T) {
	hdr, err := npy.EncodeHeader("<i4", true, []int64{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0}
	file := append(append([]byte(nil), hdr...), data...)
	dir := t.TempDir()
	p := filepath.Join(dir, "grid.npy")
	if err := os.WriteFile(p, file, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.Bare() {
		t.Error("Bare() is false for a .npy file")
	}
	if got := walk(t, a); len(got) != 5 || got[0] != "grid/" || got[3] != "grid.npy" || got[4] != "grid.ra" {
		t.Fatalf("tree %q", got)
	}
	m := a.Members()[0]
	if m.HasCRC() || !m.HasViews(context.Background()) || m.Reason(context.Background()) != "" || m.Size() != int64(len(file)) {
		t.Errorf("member: crc %v views %v reason %q size %d", m.HasCRC(), m.HasViews(context.Background()), m.Reason(context.Background()), m.Size())
	}
	whole, err := readAll(t, a.Root().Lookup(context.Background(), "grid.npy").File(context.Background()))
	if err != nil || !bytes.Equal(whole, file) {
		t.Errorf("grid.npy: %d bytes, %v", len(whole), err)
	}
	raw := a.Root().Lookup(context.Background(), "grid").Lookup(context.Background(), "raw.bin").File(context.Background())
	got, err := readAll(t, raw)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("raw.bin: %v, %v", got, err)
	}
	fd, off, ok, err := raw.Extent(context.Background())
	spliced := make([]byte, len(data))
	if !ok || err != nil {
		t.Fatalf("raw.bin Extent: %v %v", ok, err)
	}
	if _, err := pread(t, fd, spliced, off); err != nil || !bytes.Equal(spliced, data) {
		t.Errorf("raw.bin spliced from byte %d: %v", off, err)
	}
	js, err := m.HeaderJSON(context.Background())
	if err != nil || !bytes.Contains(js, []byte(`"fortran_order": true`)) {
		t.Errorf("header.json %s, %v", js, err)
	}

	if _, err := NewReader(context.Background(), bytes.NewReader(file), int64(len(file)), nil); err == nil {
		t.Error("NewReader (a zip archive) took a bare .npy")
	}
	// Named .npz, it is still a .npy, served as grid.npz.npy.
	renamed := filepath.Join(dir, "grid.npz")
	os.WriteFile(renamed, file, 0o644)
	if r, err := Open(context.Background(), renamed, nil); err != nil || !r.Bare() || r.Root().Lookup(context.Background(), "grid.npz.npy") == nil {
		t.Errorf("a .npy named grid.npz: %v", err)
	} else {
		r.Close()
	}
	notNPY := filepath.Join(dir, "x.npy")
	os.WriteFile(notNPY, []byte("PK\x03\x04 not an npy"), 0o644)
	if _, err := Open(context.Background(), notNPY, nil); err == nil || !strings.Contains(err.Error(), "end of central directory") {
		t.Errorf("a file that is neither a zip nor a .npy: %v", err)
	}
	broken := filepath.Join(dir, "b.npy")
	os.WriteFile(broken, []byte(npy.Magic+"\x01\x00garbage"), 0o644)
	b, err := Open(context.Background(), broken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := b.Root().Lookup(context.Background(), "b"); v == nil || len(v.Children(context.Background())) != 0 || b.Root().Lookup(context.Background(), "b.npy") == nil {
		t.Error("a broken .npy is not served with an empty views folder")
	}
}

// TestBareNodes: the nodes a .npy file makes, known from its name alone,
// are those of the archive NewNPY opens of it, with the same inode
// numbers, whatever the file holds (a broken header too).
func TestBareNodes(t *testing.T) {
	good, err := npy.EncodeHeader("<f4", false, []int64{3})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range [][]byte{append(good, make([]byte, 12)...), []byte(npy.Magic + "\x01\x00garbage")} {
		a, err := NewNPY(context.Background(), bytes.NewReader(file), int64(len(file)), "grid.npy", nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes, maxIno, err := BareNodes("grid.npy")
		if err != nil {
			t.Fatal(err)
		}
		real := a.Root().Children(context.Background())
		if len(nodes) != len(real) || maxIno != a.MaxIno() || len(nodes) != 3 {
			t.Fatalf("%d nodes (max inode %d), want %d (%d)", len(nodes), maxIno, len(real), a.MaxIno())
		}
		for i, n := range nodes {
			if r := real[i]; n.Name != r.Name() || n.Ino != r.Ino() || n.Dir != r.IsDir() {
				t.Errorf("node %d: %s %d %v, want %s %d %v", i, n.Name, n.Ino, n.Dir, r.Name(), r.Ino(), r.IsDir())
			}
		}
	}
	if _, _, err := BareNodes("grid.npz"); err == nil {
		t.Error("a name not ending in .npy is taken")
	}
}
