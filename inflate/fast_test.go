package inflate

import (
	"bytes"
	"compress/flate"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// pairsByDecoding is what buildPairs must make, entry by entry: the
// codewords the entry's bits begin with, found by comparing them with
// every codeword.
func pairsByDecoding(lens []uint8) [1 << pairBits]uint32 {
	codes := canon(lens)
	// find returns the symbol whose codeword of at most max bits the
	// low bits of x begin with, or -1.
	find := func(x int, max uint8) int {
		for s, l := range lens {
			if l > 0 && l <= max && int(reverse(codes[s], uint(l))) == x&(1<<l-1) {
				return s
			}
		}
		return -1
	}
	var p [1 << pairBits]uint32
	for i := range p {
		s1 := find(i, pairBits)
		if s1 < 0 {
			p[i] = kindBad
			for s, l := range lens {
				if l > pairBits && int(reverse(codes[s], uint(l)))&(1<<pairBits-1) == i {
					p[i] = kindSub
				}
			}
			continue
		}
		n1 := uint32(lens[s1])
		p[i] = pairOne[s1] + n1
		if s1 < 256 {
			if s2 := find(i>>n1, pairBits-lens[s1]); s2 >= 0 && pairTwo[s2] != 0 {
				p[i] = pairOne[s1] + pairTwo[s2] + n1 + uint32(lens[s2])
			}
		}
	}
	return p
}

// randomLens makes a complete set of code lengths over n symbols, up to
// 15 bits, by splitting leaves of a code tree at random.
func randomLens(rng *rand.Rand, n int, maxLen uint8) []uint8 {
	lens := make([]uint8, n)
	// Start from two one-bit codewords and split a random one until
	// enough symbols are coded.
	a := rng.IntN(n)
	b := (a + 1 + rng.IntN(n-1)) % n
	lens[a], lens[b] = 1, 1
	coded := []int{a, b}
	for len(coded) < n && rng.IntN(n) != 0 {
		i := rng.IntN(len(coded))
		s := coded[i]
		if lens[s] >= maxLen {
			continue
		}
		var free []int
		for t := range n {
			if lens[t] == 0 {
				free = append(free, t)
			}
		}
		if len(free) == 0 {
			break
		}
		t := free[rng.IntN(len(free))]
		lens[s]++
		lens[t] = lens[s]
		coded = append(coded, t)
	}
	return lens
}

func TestBuildPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	d := newDecoder()
	check := func(name string, lens []uint8) {
		t.Helper()
		if !d.dynLit.build(lens, &litSym, litBits) {
			t.Fatalf("%s: the code lengths are refused", name)
		}
		d.lit, d.litLens = &d.dynLit, lens
		d.buildPairs()
		want := pairsByDecoding(lens)
		for i, w := range want {
			got := d.pairs[i]
			if w&kindMask == kindBad {
				got, w = got&kindMask, kindBad // n does not matter
			}
			if got != w {
				t.Fatalf("%s: entry %#x = %#x, want %#x", name, i, got, w)
			}
		}
	}
	for range 100 {
		check("random", randomLens(rng, 257+rng.IntN(29), uint8(2+rng.IntN(14))))
	}
	check("fixed", fixedLitLens[:])
	one := make([]uint8, 257)
	one[65] = 1 // incomplete: a single one-bit codeword
	check("one codeword", one)
	check("none", make([]uint8, 257))
}

func reverse(c uint32, n uint) uint32 {
	var r uint32
	for range n {
		r = r<<1 | c&1
		c >>= 1
	}
	return r
}

// TestLoopStateLayout pins the offsets fast_amd64.s uses.
func TestLoopStateLayout(t *testing.T) {
	var s loopState
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"in", unsafe.Offsetof(s.in), 0},
		{"inLimit", unsafe.Offsetof(s.inLimit), 8},
		{"bits", unsafe.Offsetof(s.bits), 16},
		{"nb", unsafe.Offsetof(s.nb), 24},
		{"out", unsafe.Offsetof(s.out), 32},
		{"target", unsafe.Offsetof(s.target), 40},
		{"low", unsafe.Offsetof(s.low), 48},
		{"lit", unsafe.Offsetof(s.lit), 56},
		{"litSub", unsafe.Offsetof(s.litSub), 64},
		{"dist", unsafe.Offsetof(s.dist), 72},
		{"distSub", unsafe.Offsetof(s.distSub), 80},
		{"pairs", unsafe.Offsetof(s.pairs), 88},
		{"outMin", unsafe.Offsetof(s.outMin), 96},
		{"trackEnd", unsafe.Offsetof(s.trackEnd), 104},
		{"touchAt", unsafe.Offsetof(s.touchAt), 112},
	} {
		if f.got != f.want {
			t.Errorf("loopState.%s at offset %d, fast_amd64.s reads it at %d", f.name, f.got, f.want)
		}
	}
}

// TestLoopsStopAlike decodes streams to the same targets with the
// assembly loop and with the Go loop: they must stop at the same symbol
// boundary every time (checkpoints taken with one are resumed with the
// other), agree on the output, and mark the same tracked bytes as read
// (from time to time everything decoded so far is tracked, as a window
// is after a checkpoint).
func TestLoopsStopAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tc := range []struct {
		name  string
		data  []byte
		level int
	}{
		{"walk", randomWalk(1<<20, 8), 6},
		{"noise", noisyFloat32(1<<20, 9), 6},
		{"mixed-1", mixed(1<<20, 10), 1},
		{"mixed-9", mixed(1<<20, 11), 9},
		{"ramp", intRamp(1 << 20), 6},
		{"huffman-only", noisyFloat32(1<<19, 12), flate.HuffmanOnly},
	} {
		comp := deflate(t, tc.data, tc.level)
		var ds [2]*decoder
		for i := range ds {
			d := newDecoder()
			d.resetStream(bytes.NewReader(comp))
			d.out = make([]byte, len(tc.data)+1+outSlack)
			d.goLoop = i == 1
			d.touched = make([]bool, len(d.out))
			ds[i] = d
		}
		marked := 0
		for target := 0; ds[0].state != stDone; {
			target += 1 + rng.IntN(3000)
			if rng.IntN(4) == 0 {
				target = ds[0].pos + 1 // one symbol
			}
			target = min(target, len(tc.data)+1) // past the end: to the final block's end
			if rng.IntN(8) == 0 {
				for _, d := range ds {
					d.trackEnd = d.pos
				}
			}
			for _, d := range ds {
				if err := d.decode(target); err != nil {
					t.Fatalf("%s: decode to %d: %v", tc.name, target, err)
				}
			}
			a, b := ds[0], ds[1]
			if a.pos != b.pos || a.bitPos() != b.bitPos() || a.state != b.state {
				t.Fatalf("%s: decode to %d stopped at output %d, bit %d, state %d; the Go loop at %d, %d, %d",
					tc.name, target, a.pos, a.bitPos(), a.state, b.pos, b.bitPos(), b.state)
			}
		}
		if !bytes.Equal(ds[0].out[:ds[0].pos], tc.data) || !bytes.Equal(ds[1].out[:ds[1].pos], tc.data) {
			t.Fatalf("%s: output differs", tc.name)
		}
		for i, m := range ds[0].touched {
			if m != ds[1].touched[i] {
				t.Fatalf("%s: byte %d marked %v, by the Go loop %v", tc.name, i, m, ds[1].touched[i])
			}
			if m {
				marked++
			}
		}
		if tc.level != flate.HuffmanOnly && marked == 0 {
			t.Fatalf("%s: no byte marked", tc.name)
		}
	}
}
