package inflate

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// deflate compresses data with compress/flate at level.
func deflate(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stdInflate inflates with compress/flate.
func stdInflate(comp []byte) ([]byte, error) {
	return io.ReadAll(flate.NewReader(bytes.NewReader(comp)))
}

// ourInflate inflates with NewReader.
func ourInflate(comp []byte) ([]byte, error) {
	return io.ReadAll(NewReader(bytes.NewReader(comp)))
}

// goLoopInflate inflates with NewReader's decoder held to huffFast's Go
// loop (where the assembly loop exists, ourInflate uses that).
func goLoopInflate(comp []byte) ([]byte, error) {
	r := NewReader(bytes.NewReader(comp)).(*streamReader)
	defer r.Close()
	r.d.goLoop = true
	return io.ReadAll(r)
}

// Deterministic numpy-like data.

func noisyFloat32(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n&^3)
	for i := 0; i+4 <= len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	return b
}

func intRamp(n int) []byte {
	b := make([]byte, n&^7)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(i/8))
	}
	return b
}

func mixed(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	var out []byte
	for len(out) < n {
		k := 1 + rng.IntN(20000)
		switch rng.IntN(5) {
		case 0:
			out = append(out, noisyFloat32(k, rng.Uint64())...)
		case 1:
			out = append(out, intRamp(k)...)
		case 2:
			out = append(out, make([]byte, k)...)
		case 3:
			t := []byte("the quick brown fox jumps over the lazy dog ")
			for j := 0; j < k; j++ {
				out = append(out, t[rng.IntN(len(t))])
			}
		default:
			for j := 0; j < k; j++ {
				out = append(out, byte(rng.IntN(256)))
			}
		}
	}
	return out[:n]
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// checkpoints returns a copy of r's checkpoints.
func (r *ReaderAt) checkpoints() []checkpoint {
	r.ix.mu.RLock()
	defer r.ix.mu.RUnlock()
	return slices.Clone(r.ix.cps)
}

// drops is how many times r refused or discarded a saved index.
func drops(r *ReaderAt) int {
	r.ix.mu.RLock()
	defer r.ix.mu.RUnlock()
	return r.ix.drops
}

// savedBytes is an IndexSource of an index in memory, which counts the
// times it is asked for.
type savedBytes struct {
	b     []byte
	asked atomic.Int64
}

func (s *savedBytes) OpenIndex(context.Context) (io.ReaderAt, int64, error) {
	s.asked.Add(1)
	if s.b == nil {
		return nil, 0, fs.ErrNotExist
	}
	return bytes.NewReader(s.b), int64(len(s.b)), nil
}
