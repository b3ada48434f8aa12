package npz

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/npzfs/npzfs/zip"
)

// flipCorpus are the corpus archives the flip test damages: stored
// members (numpy's and Info-ZIP's), deflated ones (with and without data
// descriptors), and zip64 records.
var flipCorpus = []string{
	"numpy_savez.npz", "infozip_stored.npz", "numpy_savez_compressed.npz",
	"infozip_deflated.npz", "infozip_stream.npz", "zipfile_stream.npz", "zip64.npz",
}

// flipTarget is an archive of the corpus, its members' bytes as served
// when intact, and the byte ranges of its members (local header and
// data) a flip goes into.
type flipTarget struct {
	name    string
	b       []byte
	members map[string][]byte
	ranges  [][2]int64
}

func loadFlipTargets(t *testing.T) []*flipTarget {
	t.Helper()
	var out []*flipTarget
	for _, name := range flipCorpus {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		ft := &flipTarget{name: name, b: b, members: map[string][]byte{}}
		a := openWith(t, b, &Options{Verify: VerifyLazy})
		for m := range a.All() {
			if m.IsDir() || m.ReadError() != nil || m.Size() == 0 || !m.Served() {
				continue
			}
			data, err := readServed(a, m.Name())
			if err != nil {
				t.Fatalf("%s: %s: %v", name, m.Name(), err)
			}
			ft.members[m.Name()] = data
			off, err := m.dataOffset(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ft.ranges = append(ft.ranges, [2]int64{m.e.HeaderOffset, off + m.CompressedSize()})
		}
		out = append(out, ft)
	}
	return out
}

// TestFlippedBitsNeverServed flips one random bit at a time in the
// local header or data of a member of the corpus (1,200 flips across
// stored, deflated and zip64 archives) and reads every member of the
// damaged archive whole, as a mount serves it, with the default
// VerifyMode: each read either fails or gives exactly the intact bytes.
// VerifyLazy, read the same way, serves damaged bytes for some of the
// same flips: the test sees what it looks for.
func TestFlippedBitsNeverServed(t *testing.T) {
	targets := loadFlipTargets(t)
	rng := rand.New(rand.NewPCG(36, 1000))
	const flips = 1200
	var failed, intact, lazyWrong int
	kinds := map[uint16]int{}
	for i := range flips {
		ft := targets[i%len(targets)]
		r := ft.ranges[rng.IntN(len(ft.ranges))]
		at := r[0] + rng.Int64N(r[1]-r[0])
		bad := flipAt(ft.b, at, uint(rng.IntN(8)))
		for _, mode := range []VerifyMode{VerifyAuto, VerifyLazy} {
			a, err := NewReader(context.Background(), bytes.NewReader(bad), int64(len(bad)), &Options{Verify: mode})
			if err != nil {
				continue // refused whole: nothing served
			}
			for name, want := range ft.members {
				m := a.Member(name)
				if m == nil || !m.Served() {
					continue
				}
				got, err := readServed(a, name)
				switch {
				case err != nil:
					if mode == VerifyAuto {
						failed++
					}
				case !bytes.Equal(got, want):
					if mode == VerifyLazy {
						lazyWrong++
						continue
					}
					t.Errorf("flip %d: bit at byte %d of %s: %s served %d wrong bytes", i, at, ft.name, name, countDiff(got, want))
				case mode == VerifyAuto:
					intact++
					kinds[m.Method()]++
				}
			}
			a.Close()
		}
	}
	t.Logf("%d flips: %d reads failed, %d intact (by method %v); lazy served wrong bytes %d times", flips, failed, intact, kinds, lazyWrong)
	if failed < flips/2 || kinds[zip.Stored] == 0 || kinds[zip.Deflated] == 0 || lazyWrong == 0 {
		t.Errorf("the flips did not reach what they should: %d failed reads, %v intact, %d wrong under lazy", failed, kinds, lazyWrong)
	}
}

// countDiff counts the bytes where a and b differ (b longer counts).
func countDiff(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
