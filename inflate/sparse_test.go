package inflate

import (
	"bytes"
	"compress/flate"
	"io"
	"math/rand/v2"
	"testing"
)

// sparseWindows are masked windows of every density, and the edge cases
// of zero runs: none, at the start, at the end, of every length up to
// past 2x258.
func sparseWindows() [][]byte {
	rng := rand.New(rand.NewPCG(21, 22))
	var ws [][]byte
	for _, density := range []float64{0, 0.0001, 0.01, 0.05, 0.3, 0.9, 1} {
		w := make([]byte, windowSize)
		for i := range w {
			if rng.Float64() < density {
				w[i] = byte(1 + rng.IntN(255))
				if rng.IntN(2) == 0 {
					w[i] = byte(1 + rng.IntN(4)) // skewed, as numeric data is
				}
			}
		}
		ws = append(ws, w)
	}
	for run := 0; run <= 600; run++ {
		w := make([]byte, 2+run+run%7)
		w[0] = 9
		w[len(w)-1] = 7
		ws = append(ws, w, w[1:], w[:len(w)-1])
	}
	ws = append(ws, []byte{5}, []byte{0}, []byte{0, 0, 0, 0}, make([]byte, windowSize))
	return ws
}

func TestDeflateSparse(t *testing.T) {
	for k, w := range sparseWindows() {
		packed := new(sparseEncoder).deflate(nil, w)
		std, err := io.ReadAll(flate.NewReader(bytes.NewReader(packed)))
		if err != nil || !bytes.Equal(std, w) {
			t.Fatalf("window %d (%d bytes): compress/flate reads back %d bytes, %v", k, len(w), len(std), err)
		}
		buf := make([]byte, len(w)+outSlack)
		if err := unpackWindow(newDecoder(), packed, buf, len(w)); err != nil || !bytes.Equal(buf[:len(w)], w) {
			t.Fatalf("window %d (%d bytes): unpackWindow: %v", k, len(w), err)
		}
	}
}

// TestDeflateSparseSize compares the encoder's output with compress/flate's
// at BestSpeed on windows of the first pass, masked as it masks them: at
// most a quarter larger in all (sparse.go's comment says 13% for the walk).
func TestDeflateSparseSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"walk", randomWalk(4<<20, 31)},
		{"noise", noisyFloat32(4<<20, 32)},
		{"mixed", mixed(4<<20, 33)},
	} {
		comp := deflate(t, tc.data, 6)
		ra := newRA(tc.data, comp, 256<<10, NewCache(1))
		if err := ra.IndexAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		var ours, theirs int
		for _, cp := range ra.checkpoints() {
			if cp.win == nil {
				continue
			}
			buf := make([]byte, windowSize+outSlack)
			n := int(min(cp.out, windowSize))
			if err := unpackWindow(newDecoder(), cp.win, buf, n); err != nil {
				t.Fatal(err)
			}
			ours += len(new(sparseEncoder).deflate(nil, buf[:n]))
			theirs += len(flateBestSpeed(t, buf[:n]))
		}
		t.Logf("%s: %d bytes of windows, compress/flate BestSpeed %d", tc.name, ours, theirs)
		if theirs == 0 || 4*ours > 5*theirs {
			t.Errorf("%s: %d bytes of windows, compress/flate's %d", tc.name, ours, theirs)
		}
	}
}

// flateBestSpeed is how windows were packed before sparseEncoder.
func flateBestSpeed(t testing.TB, w []byte) []byte {
	return deflate(t, w, flate.BestSpeed)
}

// BenchmarkPackWindow packs the windows of a random walk's first pass.
func BenchmarkPackWindow(b *testing.B) {
	data := randomWalk(4<<20, 31)
	comp := deflate(b, data, 6)
	ra := newRA(data, comp, 256<<10, NewCache(1))
	if err := ra.IndexAll(b.Context()); err != nil {
		b.Fatal(err)
	}
	var wins [][]byte
	for _, cp := range ra.checkpoints() {
		if cp.win != nil && cp.out >= windowSize {
			buf := make([]byte, windowSize+outSlack)
			if err := unpackWindow(newDecoder(), cp.win, buf, windowSize); err != nil {
				b.Fatal(err)
			}
			wins = append(wins, buf[:windowSize])
		}
	}
	b.Run("sparse", func(b *testing.B) {
		var s sparseEncoder
		for i := 0; b.Loop(); i++ {
			s.deflate(nil, wins[i%len(wins)])
		}
	})
	b.Run("flate", func(b *testing.B) {
		// One writer reset for each window, as the packer kept it.
		var out bytes.Buffer
		w, _ := flate.NewWriter(&out, flate.BestSpeed)
		for i := 0; b.Loop(); i++ {
			out.Reset()
			w.Reset(&out)
			w.Write(wins[i%len(wins)])
			w.Close()
		}
	})
}

// FuzzDeflateSparse checks that any window, as bytes or with its zero
// bytes stretched into runs, deflates to a stream compress/flate and
// unpackWindow both read back exactly.
func FuzzDeflateSparse(f *testing.F) {
	for _, w := range sparseWindows()[:8] {
		f.Add(w[:min(len(w), 4096)], uint8(3))
	}
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, stretch uint8) {
		// Each zero byte of b becomes a run of stretch*k zeros, k its
		// position mod 97, up to a window's size.
		var w []byte
		for i, c := range b {
			if c == 0 {
				w = append(w, make([]byte, 1+int(stretch)*(i%97))...)
			} else {
				w = append(w, c)
			}
			if len(w) >= windowSize {
				w = w[:windowSize]
				break
			}
		}
		var s sparseEncoder
		packed := s.deflate(nil, w)
		std, err := io.ReadAll(flate.NewReader(bytes.NewReader(packed)))
		if err != nil || !bytes.Equal(std, w) {
			t.Fatalf("%d bytes: compress/flate reads back %d bytes, %v", len(w), len(std), err)
		}
		buf := make([]byte, len(w)+outSlack)
		if err := unpackWindow(newDecoder(), packed, buf, len(w)); err != nil || !bytes.Equal(buf[:len(w)], w) {
			t.Fatalf("%d bytes: unpackWindow: %v", len(w), err)
		}
		// The encoder reused gives the same bytes.
		if again := s.deflate(nil, w); !bytes.Equal(again, packed) {
			t.Fatal("a reused encoder wrote other bytes")
		}
	})
}
