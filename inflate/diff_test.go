package inflate

import (
	"bytes"
	"compress/flate"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// agree checks that NewReader and compress/flate agree on comp: both reject
// it, or both accept it with identical output; and NewReader alike with
// the decoding loop in assembly and in Go. It returns the output.
func agree(t testing.TB, comp []byte) ([]byte, bool) {
	t.Helper()
	want, werr := stdInflate(comp)
	for _, inflate := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{{"ours", ourInflate}, {"ours (Go loop)", goLoopInflate}} {
		got, gerr := inflate.f(comp)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("stream %x:\n compress/flate err %v\n %s err %v", head(comp), werr, inflate.name, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("stream %x: %s output differs (len %d vs %d)", head(comp), inflate.name, len(got), len(want))
		}
	}
	return want, werr == nil
}

func head(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func TestDifferentialLevels(t *testing.T) {
	inputs := map[string][]byte{
		"empty": nil,
		"one":   {42},
		"two":   {1, 2},
		"abc":   []byte("abcabcabcabcabcabc"),
		"mixed": mixed(200000, 21),
		"float": noisyFloat32(100000, 22),
		"ramp":  intRamp(100000),
		"zeros": make([]byte, 300000),
	}
	inputs["random"] = randBytes(rand.New(rand.NewPCG(1, 2)), 70000)
	for name, data := range inputs {
		for lvl := -2; lvl <= 9; lvl++ {
			comp := deflate(t, data, lvl)
			if _, ok := agree(t, comp); !ok {
				t.Fatalf("%s level %d: rejected", name, lvl)
			}
		}
		// klauspost's encoder makes different streams (fixed blocks,
		// its own Huffman-only mode).
		for lvl := -2; lvl <= 9; lvl++ {
			var buf bytes.Buffer
			w, err := kflate.NewWriter(&buf, lvl)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
			w.Close()
			got, ok := agree(t, buf.Bytes())
			if !ok || !bytes.Equal(got, data) {
				t.Fatalf("%s klauspost level %d: not reproduced", name, lvl)
			}
		}
	}
}

// TestDifferentialFlush covers streams with Flush-produced empty stored
// blocks and many small blocks.
func TestDifferentialFlush(t *testing.T) {
	data := mixed(100000, 31)
	for _, lvl := range []int{flate.NoCompression, flate.HuffmanOnly, 1, 6} {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, lvl)
		rng := rand.New(rand.NewPCG(uint64(lvl+5), 1))
		for p := 0; p < len(data); {
			n := min(len(data)-p, rng.IntN(3000))
			w.Write(data[p : p+n])
			p += n
			w.Flush()
			if rng.IntN(4) == 0 {
				w.Flush() // an empty stored block right after another
			}
		}
		w.Close()
		got, ok := agree(t, buf.Bytes())
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("level %d: flushed stream not reproduced", lvl)
		}
		// And through a ReaderAt with small spans.
		comp := buf.Bytes()
		ra := newRA(data, comp, 4096, nil)
		rng2 := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 50; i++ {
			checkRead(t, ra, data, rng2.Int64N(int64(len(data))), 1+rng2.IntN(9000))
		}
	}
}

// bitWriter writes a DEFLATE bit stream by hand.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	for w.n >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// code writes a Huffman codeword (most significant bit first).
func (w *bitWriter) code(c uint32, n uint) {
	w.bits(uint64(bits.Reverse32(c)>>(32-n)), n)
}

func (w *bitWriter) align() {
	if w.n > 0 {
		w.bits(0, 8-w.n)
	}
}

func (w *bitWriter) bytes() []byte {
	b := append([]byte(nil), w.buf...)
	if w.n > 0 {
		b = append(b, byte(w.acc))
	}
	return b
}

// fixedLit writes literal/length symbol s with the fixed code.
func (w *bitWriter) fixedLit(s int) {
	switch {
	case s < 144:
		w.code(uint32(0x30+s), 8)
	case s < 256:
		w.code(uint32(0x190+s-144), 9)
	case s < 280:
		w.code(uint32(s-256), 7)
	default:
		w.code(uint32(0xc0+s-280), 8)
	}
}

// canon returns canonical codes for lengths.
func canon(lengths []uint8) []uint32 {
	var count [16]int
	for _, l := range lengths {
		if l > 0 {
			count[l]++
		}
	}
	var next [16]uint32
	c := uint32(0)
	for i := 1; i < 16; i++ {
		c = (c + uint32(count[i-1])) << 1
		next[i] = c
	}
	codes := make([]uint32, len(lengths))
	for s, l := range lengths {
		if l > 0 {
			codes[s] = next[l]
			next[l]++
		}
	}
	return codes
}

// clLens is a complete code-length code: symbols 0-12 four bits, 13-18 five.
var clLens = func() []uint8 {
	l := make([]uint8, 19)
	for i := range l {
		l[i] = 4
		if i >= 13 {
			l[i] = 5
		}
	}
	return l
}()

// dynHeader writes a dynamic block header (after BFINAL/BTYPE) declaring
// litLens and distLens literally, or the raw code-length symbols clSyms if
// given (pairs of symbol, extra value).
func (w *bitWriter) dynHeader(nlit, ndist int, clSyms [][2]int) {
	w.bits(uint64(nlit-257), 5)
	w.bits(uint64(ndist-1), 5)
	w.bits(19-4, 4)
	for _, s := range codeOrder {
		w.bits(uint64(clLens[s]), 3)
	}
	cc := canon(clLens)
	for _, p := range clSyms {
		s := p[0]
		w.code(cc[s], uint(clLens[s]))
		switch s {
		case 16:
			w.bits(uint64(p[1]), 2)
		case 17:
			w.bits(uint64(p[1]), 3)
		case 18:
			w.bits(uint64(p[1]), 7)
		}
	}
}

func lensSyms(l []uint8) [][2]int {
	s := make([][2]int, len(l))
	for i, v := range l {
		s[i] = [2]int{int(v), 0}
	}
	return s
}

// dynBlock is a dynamic block with the given code lengths; body writes the
// symbols using the returned codes.
func dynBlock(final bool, litLens, distLens []uint8, body func(w *bitWriter, lit, dist func(int))) []byte {
	w := &bitWriter{}
	f := uint64(0)
	if final {
		f = 1
	}
	w.bits(f|2<<1, 3)
	all := append(append([]uint8(nil), litLens...), distLens...)
	w.dynHeader(len(litLens), len(distLens), lensSyms(all))
	lc, dc := canon(litLens), canon(distLens)
	body(w, func(s int) { w.code(lc[s], uint(litLens[s])) }, func(s int) { w.code(dc[s], uint(distLens[s])) })
	return w.bytes()
}

// flatLens gives n symbols lengths making a complete code of 2^k symbols,
// the rest zero.
func flatLens(n, k int) []uint8 {
	l := make([]uint8, n)
	for i := 0; i < 1<<k && i < n; i++ {
		l[i] = uint8(k)
	}
	return l
}

type advCase struct {
	name string
	s    []byte
	ok   bool
}

// adversarialStreams are hand-made streams probing the validity rules, with
// whether compress/flate accepts each.
func adversarialStreams() []advCase {
	return slices.Concat(fixedStreams(), headerStreams(), dynamicStreams())
}

// adv is the case of the stream f writes.
func adv(name string, ok bool, f func(w *bitWriter)) advCase {
	w := &bitWriter{}
	f(w)
	return advCase{name, w.bytes(), ok}
}

// fixedHeader writes the header of a block with the fixed codes.
func fixedHeader(w *bitWriter, final bool) {
	if final {
		w.bits(1|1<<1, 3)
	} else {
		w.bits(1<<1, 3)
	}
}

// fixedCopy writes a final block with the fixed codes of the literals
// lits, then a copy of 3 bytes with distance code dist.
func fixedCopy(lits string, dist uint32) func(w *bitWriter) {
	return func(w *bitWriter) {
		fixedHeader(w, true)
		for _, c := range []byte(lits) {
			w.fixedLit(int(c))
		}
		w.fixedLit(257)
		w.code(dist, 5)
		w.fixedLit(256)
	}
}

// fixedStreams probe symbols and distances, with the fixed codes.
func fixedStreams() []advCase {
	return []advCase{
		adv("fixed empty", true, func(w *bitWriter) { fixedHeader(w, true); w.fixedLit(256) }),
		adv("fixed lit 286", false, func(w *bitWriter) { fixedHeader(w, true); w.fixedLit(286); w.fixedLit(256) }),
		adv("fixed lit 287", false, func(w *bitWriter) { fixedHeader(w, true); w.fixedLit(287); w.fixedLit(256) }),
		adv("fixed dist 30", false, fixedCopy("a", 30)),
		adv("fixed dist 31", false, fixedCopy("a", 31)),
		adv("distance too far", false, fixedCopy("a", 1)),
		adv("distance exactly back to start", true, func(w *bitWriter) {
			fixedHeader(w, true)
			w.fixedLit('a')
			w.fixedLit('b')
			w.fixedLit(285) // length 258
			w.code(1, 5)    // distance 2
			w.fixedLit(284) // 227 + 31 = 258
			w.bits(31, 5)
			w.code(0, 5)
			w.fixedLit(256)
		}),
		adv("distance from empty", false, fixedCopy("", 0)),
		adv("distance 32768", true, func(w *bitWriter) {
			w.bits(0, 3) // stored, not final
			w.align()
			w.bits(0xffff, 16)
			w.bits(0, 16)
			for i := 0; i < 0xffff; i++ {
				w.bits(uint64(i*7%251), 8)
			}
			fixedHeader(w, true)
			w.fixedLit(285)
			w.code(29, 5)
			w.bits(8191, 13) // 24577 + 8191 = 32768
			w.fixedLit(256)
		}),
	}
}

// finalStored writes a final stored block of 3 bytes whose length's
// complement is nlen, and the bytes body.
func finalStored(nlen uint64, body string) func(w *bitWriter) {
	return func(w *bitWriter) {
		w.bits(1, 3)
		w.align()
		w.bits(3, 16)
		w.bits(nlen, 16)
		for _, c := range []byte(body) {
			w.bits(uint64(c), 8)
		}
	}
}

// headerStreams probe block headers: stored blocks, block types, the
// counts and code-length codes of dynamic headers.
func headerStreams() []advCase {
	return []advCase{
		adv("reserved type", false, func(w *bitWriter) { w.bits(1|3<<1, 3); w.bits(0, 16) }),
		adv("stored nlen mismatch", false, finalStored(0xfffd, "AAA")),
		adv("stored ok", true, finalStored(0xfffc, "AAA")),
		adv("stored truncated", false, finalStored(0xfffc, "AA")),
		adv("no final block", false, func(w *bitWriter) { fixedHeader(w, false); w.fixedLit('x'); w.fixedLit(256) }),
		adv("trailing garbage", true, func(w *bitWriter) { fixedHeader(w, true); w.fixedLit('x'); w.fixedLit(256); w.bits(0xdeadbeef, 32) }),
		adv("empty input", false, func(w *bitWriter) {}),
		adv("hlit 287", false, func(w *bitWriter) { w.bits(1|2<<1, 3); w.bits(30, 5); w.bits(0, 5); w.bits(0, 4) }),
		adv("hdist 31", false, func(w *bitWriter) { w.bits(1|2<<1, 3); w.bits(0, 5); w.bits(30, 5); w.bits(0, 4) }),
		adv("hdist 32", false, func(w *bitWriter) { w.bits(1|2<<1, 3); w.bits(0, 5); w.bits(31, 5); w.bits(0, 4) }),
		adv("repeat first", false, func(w *bitWriter) {
			w.bits(1|2<<1, 3)
			w.dynHeader(257, 1, [][2]int{{16, 0}})
		}),
		adv("repeat past end", false, func(w *bitWriter) {
			w.bits(1|2<<1, 3)
			w.dynHeader(257, 1, [][2]int{{18, 127}, {18, 127}, {18, 127}})
		}),
		adv("empty code-length code", false, func(w *bitWriter) {
			w.bits(1|2<<1, 3)
			w.bits(0, 5)
			w.bits(0, 5)
			w.bits(0, 4)
			w.bits(0, 12)
			w.bits(0, 32)
		}),
		adv("oversubscribed code-length code", false, func(w *bitWriter) {
			w.bits(1|2<<1, 3)
			w.bits(0, 5)
			w.bits(0, 5)
			w.bits(15, 4)
			for i := 0; i < 19; i++ {
				w.bits(1, 3)
			}
			w.bits(0, 32)
		}),
	}
}

// dynamicStreams probe dynamic codes: complete, incomplete, single and
// empty ones.
func dynamicStreams() []advCase {
	type tc = advCase
	var cases []tc
	cases = append(cases,
		tc{"no code for end of block", dynBlock(true, flatLens(257, 8), flatLens(30, 4)[:1], func(w *bitWriter, lit, dist func(int)) {
			for _, c := range []byte("hello") {
				lit(int(c))
			}
			w.bits(0, 16)
		}), false},
		tc{"oversubscribed literal code", dynBlock(true, append(flatLens(256, 8), 8, 0, 0, 0), []uint8{1}, func(w *bitWriter, lit, dist func(int)) {
			lit(256)
		}), false},
	)
	// A complete literal code of 9-bit codes for 0..285 needs care; use
	// lengths: 256 symbols of 9 bits + 30 of 9 bits = 286 codes of 9 bits
	// (incomplete: 286 < 512) -> rejected by compress/flate.
	l9 := make([]uint8, 286)
	for i := range l9 {
		l9[i] = 9
	}
	cases = append(cases, tc{"incomplete literal code", dynBlock(true, l9, []uint8{1}, func(w *bitWriter, lit, dist func(int)) { lit(256) }), false})
	// Complete: 226 codes of 8 bits and 60 of 9 bits: 226/256 + 60/512 = 1.
	lc := make([]uint8, 286)
	for i := range lc {
		if i < 226 {
			lc[i] = 8
		} else {
			lc[i] = 9
		}
	}
	cases = append(cases,
		tc{"dynamic ok", dynBlock(true, lc, []uint8{1}, func(w *bitWriter, lit, dist func(int)) {
			for _, c := range []byte("hello") {
				lit(int(c))
			}
			lit(256)
		}), true},
		tc{"single distance code", dynBlock(true, lc, []uint8{1}, func(w *bitWriter, lit, dist func(int)) {
			lit('a')
			lit(257)
			dist(0) // distance 1
			lit(256)
		}), true},
		tc{"single distance code, unused bit pattern", dynBlock(true, lc, []uint8{1}, func(w *bitWriter, lit, dist func(int)) {
			lit('a')
			lit(257)
			w.bits(1, 1)
			lit(256)
		}), false},
		tc{"empty distance code used", dynBlock(true, lc, []uint8{0}, func(w *bitWriter, lit, dist func(int)) {
			lit('a')
			lit(257)
			w.bits(0, 16)
			lit(256)
		}), false},
		tc{"empty distance code, literals only", dynBlock(true, lc, []uint8{0}, func(w *bitWriter, lit, dist func(int)) {
			lit('a')
			lit(256)
		}), true},
		tc{"long codes", dynBlock(true, longLens(), []uint8{1, 1}, func(w *bitWriter, lit, dist func(int)) {
			for s := 0; s < 256; s += 7 {
				lit(s)
			}
			lit(285)
			dist(1)
			lit(256)
		}), true},
	)
	return cases
}

func TestAdversarial(t *testing.T) {
	for _, c := range adversarialStreams() {
		t.Run(c.name, func(t *testing.T) {
			_, ok := agree(t, c.s)
			if ok != c.ok {
				t.Fatalf("accepted = %v, want %v", ok, c.ok)
			}
			// Every truncation is rejected by both.
			for i := 0; i < len(c.s) && i < 200; i++ {
				agree(t, c.s[:i])
			}
		})
	}
}

// longLens is a complete literal/length code using lengths up to 15.
func longLens() []uint8 {
	l := make([]uint8, 286)
	// Kraft: 1/2 + 1/4 + ... halving with one code per length 1..14, then
	// the remaining 2^-14 split among 271 codes: needs lengths > 15, so
	// instead: one code each of lengths 1..7 (sum 1 - 2^-7), the rest
	// 2^-7 = 128/2^14... use 256 codes of 15 bits (256/2^15 = 2^-7).
	for i := 0; i < 7; i++ {
		l[i] = uint8(i + 1)
	}
	for i := 7; i < 7+256 && i < 286; i++ {
		l[i] = 15
	}
	// 7+256 = 263 codes; symbols 263..285 unused. Make sure 256 and 285
	// have codes: they are in 7..262 (256) but 285 is not: swap in.
	l[285], l[262] = l[262], 0
	return l
}

func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 100))
	valid := [][]byte{deflate(t, mixed(5000, 1), 6), deflate(t, mixed(5000, 2), 1), deflate(t, []byte("hello hello hello"), 9), deflate(t, intRamp(3000), flate.HuffmanOnly)}
	accepted := 0
	for i := 0; i < 3000; i++ {
		var s []byte
		if i%2 == 0 {
			s = randBytes(rng, rng.IntN(200))
		} else {
			s = append([]byte(nil), valid[rng.IntN(len(valid))]...)
			for k := 1 + rng.IntN(4); k > 0; k-- {
				s[rng.IntN(len(s))] ^= byte(1 << rng.IntN(8))
			}
		}
		if _, ok := agree(t, s); ok {
			accepted++
		}
	}
	t.Logf("%d of 3000 garbage streams accepted by both", accepted)
}
