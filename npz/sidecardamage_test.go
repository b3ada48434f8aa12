package npz

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damagedFrames are the sidecar good (of a.npy then b.npy) with its zip
// frame damaged in each way, and what the log says of each; listsB says
// whether its directory still lists b.npy's index.
func damagedFrames(good []byte) []struct {
	name, why string
	side      []byte
	listsB    bool
} {
	end := len(good) - 22 // the end record: the sidecar has no comment
	cd := int(binary.LittleEndian.Uint32(good[end+16:]))
	second := cd + bytes.Index(good[cd+4:], []byte("PK\x01\x02")) + 4
	patch := func(at int, xor byte) []byte {
		b := bytes.Clone(good)
		b[at] ^= xor
		return b
	}
	return []struct {
		name, why string
		side      []byte
		listsB    bool
	}{
		{"end record signature", "no end of central directory record", patch(end, 0xff), false},
		{"cut short", "looks cut short", good[:len(good)-100], false},
		{"second directory entry", "central directory ends early", patch(second+2, 0x40), false},
		{"first entry's CRC-32 in the directory", `does not list its first entry, "`, patch(cd+16, 1), true},
		{"first entry's name in the directory", `does not list its first entry, "`, patch(cd+46, 0x20), true},
	}
}

// TestSidecarDamagedFrame: a sidecar whose zip frame (end record,
// central directory) is damaged but whose indexes are intact is opened,
// not refused; its first index (found by its local header) is used, as
// are those its directory still lists; a member whose index the
// directory lost is inflated from its start; the damage is logged once,
// naming the sidecar and why; every byte is right; and the sidecar
// holds nothing for npzfs index --sidecar, which then writes it again.
func TestSidecarDamagedFrame(t *testing.T) {
	b, members := indexedArchive(t)
	good := sidecarOf(t, b)
	deep := int64(len(members["a.npy"])) - 5000
	for _, c := range damagedFrames(good) {
		side := filepath.Join(t.TempDir(), "x.npzidx")
		if err := os.WriteFile(side, c.side, 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := OpenIndexSidecar(side)
		if err != nil {
			t.Fatalf("%s: refused: %v", c.name, err)
		}
		cr := &countingReader{r: bytes.NewReader(b)}
		var log logLinesOf
		a, err := NewReader(context.Background(), cr, int64(len(b)), &Options{Sidecar: sc, Logf: log.logf})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Holds(context.Background(), a.Member("a.npy")) {
			t.Errorf("%s: the damaged sidecar holds a.npy's index, for npzfs index", c.name)
		}
		// The first index, by its local header: a deep read reads a
		// span of the archive, not the member from its start.
		if got := readMember(t, a, "a.npy", deep, 4096); !bytes.Equal(got, members["a.npy"][deep:deep+4096]) {
			t.Fatalf("%s: a.npy: wrong bytes", c.name)
		}
		if read := cr.bytes.Load(); read > 2<<20 {
			t.Errorf("%s: a deep read of the first index's member read %d bytes of the archive", c.name, read)
		}
		before := cr.bytes.Load()
		if got := readMember(t, a, "b.npy", deep, 4096); !bytes.Equal(got, members["b.npy"][deep:deep+4096]) {
			t.Fatalf("%s: b.npy: wrong bytes", c.name)
		}
		if usedB := cr.bytes.Load()-before < 2<<20; usedB != c.listsB {
			t.Errorf("%s: b.npy's index used: %v, want %v", c.name, usedB, c.listsB)
		}
		l := log.String()
		if strings.Count(l, "is damaged") != 1 || strings.Count(l, "\n") != 0 ||
			!strings.Contains(l, "index sidecar "+side+" is damaged (") || !strings.Contains(l, c.why) {
			t.Errorf("%s: log %q; want one line naming the sidecar and saying %q", c.name, l, c.why)
		}
		a.Close()
		sc.Close()
	}
}

// TestOpenSaysSidecarDamage: an archive opened with its sidecar beside
// it logs at once, before any read, that the sidecar's frame is damaged.
func TestOpenSaysSidecarDamage(t *testing.T) {
	b, _ := indexedArchive(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npz")
	os.WriteFile(path, b, 0o644)
	frames := damagedFrames(sidecarOf(t, b))
	os.WriteFile(SidecarPath(path), frames[0].side, 0o644)
	var log logLinesOf
	a, err := Open(context.Background(), path, &Options{Sidecars: true, Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if l := log.String(); !strings.Contains(l, "index sidecar "+SidecarPath(path)+" is damaged (zip: no end of central directory record") || strings.Count(l, "\n") != 0 {
		t.Errorf("log at open: %q", l)
	}
}
