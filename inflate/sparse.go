package inflate

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// A sparseEncoder deflates masked windows (mostly zeros: the bytes later
// spans read, the others zeroed), keeping its buffers from one window to
// the next.
type sparseEncoder struct {
	// A token is a literal byte (0-255) or a run of 3 to 258 zeros
	// copied from 1 back (256 + length - 3).
	tokens  []uint16
	litFreq [maxLit]uint32
	cl      []uint16
	bits    uint64
	nb      uint
	out     []byte
}

// deflate deflates the window w into one dynamic Huffman block, appended
// to dst. Its matches are runs of zeros only, each a literal zero then
// copies from 1 back, found eight bytes at a time; every other byte is a
// literal. Where compress/flate hashes every position, this costs a scan
// and a Huffman code of at most 286 symbols (BenchmarkPackWindow compares
// the two). Its output is larger than compress/flate's when the bytes
// read repeat among themselves (a random walk's windows), smaller when
// they do not.
func (s *sparseEncoder) deflate(dst, w []byte) []byte {
	s.tokens = s.tokens[:0]
	s.litFreq = [maxLit]uint32{}
	s.bits, s.nb = 0, 0
	s.tokenize(w)
	return s.write(dst)
}

// lenSym[l-3] is the length symbol (257-285) of a match of l bytes, and
// its extra bits' count in the high byte.
var lenSym [256]uint16

func init() {
	for s := 28; s >= 0; s-- {
		for l := int(lengthBase[s]); l < int(lengthBase[s])+1<<lengthExtra[s] && l <= 258; l++ {
			if lenSym[l-3] == 0 {
				lenSym[l-3] = uint16(257+s) | uint16(lengthExtra[s])<<9
			}
		}
	}
}

func (s *sparseEncoder) lit(b byte) {
	s.tokens = append(s.tokens, uint16(b))
	s.litFreq[b]++
}

func (s *sparseEncoder) tokenize(w []byte) {
	for i := 0; i < len(w); {
		if w[i] != 0 {
			s.lit(w[i])
			i++
			continue
		}
		j := i + 1
		for j+8 <= len(w) && binary.LittleEndian.Uint64(w[j:]) == 0 {
			j += 8
		}
		for j < len(w) && w[j] == 0 {
			j++
		}
		s.lit(0)
		for run := j - i - 1; run > 0; {
			if run < 3 {
				s.lit(0)
				run--
				continue
			}
			l := min(run, 258)
			if rest := run - l; rest > 0 && rest < 3 {
				l -= 3 - rest // leave a run of 3 for the next match
			}
			s.tokens = append(s.tokens, uint16(256+l-3))
			s.litFreq[lenSym[l-3]&0x1ff]++
			run -= l
		}
		i = j
	}
	s.litFreq[256]++ // end of block
}

// put writes the n low bits of v (n at most 16).
func (s *sparseEncoder) put(v uint64, n uint) {
	s.bits |= v << s.nb
	s.nb += n
	if s.nb >= 32 {
		s.out = binary.LittleEndian.AppendUint32(s.out, uint32(s.bits))
		s.bits >>= 32
		s.nb -= 32
	}
}

// write writes the tokens as one final dynamic Huffman block, after dst.
func (s *sparseEncoder) write(dst []byte) []byte {
	s.out = dst
	var litLens [maxLit]uint8
	huffLengths(s.litFreq[:], 15, litLens[:])
	nlit := maxLit
	for nlit > 257 && litLens[nlit-1] == 0 {
		nlit--
	}
	// One distance code, 0 (distance 1), of one bit.
	s.writeHeader(append(litLens[:nlit:nlit], 1))
	var codes [maxLit]uint16
	canonicalReversed(litLens[:], codes[:])
	for _, t := range s.tokens {
		if t < 256 {
			s.put(uint64(codes[t]), uint(litLens[t]))
			continue
		}
		l := int(t) - 256 + 3
		ls := lenSym[l-3]
		sym, ex := ls&0x1ff, uint(ls>>9)
		s.put(uint64(codes[sym]), uint(litLens[sym]))
		s.put(uint64(l-int(lengthBase[sym-257])), ex)
		s.put(0, 1) // distance code 0: distance 1
	}
	s.put(uint64(codes[256]), uint(litLens[256]))
	for ; s.nb > 0; s.nb -= min(s.nb, 8) {
		s.out = append(s.out, byte(s.bits))
		s.bits >>= 8
	}
	return s.out
}

// writeHeader writes the header of a final dynamic Huffman block whose
// code lengths (literal/length, then one distance code) are all.
func (s *sparseEncoder) writeHeader(all []uint8) {
	cl := s.codeLengthRuns(all)
	var clFreq [19]uint32
	for _, c := range cl {
		clFreq[c&31]++
	}
	var clLens [19]uint8
	huffLengths(clFreq[:], 7, clLens[:])
	nclen := 19
	for nclen > 4 && clLens[codeOrder[nclen-1]] == 0 {
		nclen--
	}
	s.put(1|2<<1, 3) // final, dynamic Huffman
	s.put(uint64(len(all)-1-257), 5)
	s.put(0, 5) // one distance code
	s.put(uint64(nclen-4), 4)
	for _, k := range codeOrder[:nclen] {
		s.put(uint64(clLens[k]), 3)
	}
	var clCodes [19]uint16
	canonicalReversed(clLens[:], clCodes[:])
	for _, c := range cl {
		sym := c & 31
		s.put(uint64(clCodes[sym]), uint(clLens[sym]))
		switch sym {
		case 16:
			s.put(uint64(c>>5), 2)
		case 17:
			s.put(uint64(c>>5), 3)
		case 18:
			s.put(uint64(c>>5), 7)
		}
	}
}

// codeLengthRuns returns the code lengths all, run-length coded (16:
// repeat the last 3-6 times; 17, 18: 3-10, 11-138 zeros), each symbol
// with its extra value shifted left by 5, in s.cl.
func (s *sparseEncoder) codeLengthRuns(all []uint8) []uint16 {
	cl := s.cl[:0]
	for i := 0; i < len(all); {
		v := all[i]
		n := 1
		for i+n < len(all) && all[i+n] == v {
			n++
		}
		i += n
		if v == 0 {
			for n >= 11 {
				k := min(n, 138)
				cl = append(cl, 18|uint16(k-11)<<5)
				n -= k
			}
			if n >= 3 {
				cl = append(cl, 17|uint16(n-3)<<5)
				n = 0
			}
		} else {
			cl = append(cl, uint16(v))
			n--
			for n >= 3 {
				k := min(n, 6)
				cl = append(cl, 16|uint16(k-3)<<5)
				n -= k
			}
		}
		for ; n > 0; n-- {
			cl = append(cl, uint16(v))
		}
	}
	s.cl = cl
	return cl
}

// canonicalReversed sets codes to the canonical codes of lens,
// bit-reversed as the stream sends them.
func canonicalReversed(lens []uint8, codes []uint16) {
	var count, next [16]uint16
	for _, n := range lens {
		count[n]++
	}
	count[0] = 0
	var code uint16
	for n := 1; n < 16; n++ {
		code = (code + count[n-1]) << 1
		next[n] = code
	}
	for s, n := range lens {
		if n != 0 {
			c := next[n]
			next[n]++
			codes[s] = bits.Reverse16(c) >> (16 - n)
		}
	}
}

// huffLengths sets lens to Huffman code lengths of at most maxBits for
// the symbols of freq (at most maxLit) that occur, 0 for the others.
// While the code is too deep, frequencies are halved (staying at least 1)
// and it is built again. A lone symbol gets a one-bit code.
func huffLengths(freq []uint32, maxBits int, lens []uint8) {
	// Leaves sorted by weight (weight<<9 | symbol), then internal nodes
	// as made, whose weights only grow: two queues.
	var keys [maxLit]uint32
	var weight [2 * maxLit]uint32
	var parent [2 * maxLit]int16
	var depth [2 * maxLit]uint8
	n := 0
	for s, f := range freq {
		lens[s] = 0
		if f > 0 {
			keys[n] = min(f, 1<<22)<<9 | uint32(s)
			n++
		}
	}
	if n == 1 {
		lens[keys[0]&511] = 1
		return
	}
	for {
		slices.Sort(keys[:n])
		for i, k := range keys[:n] {
			weight[i] = k >> 9
		}
		leaf, inner, made := 0, n, n
		pick := func() int {
			if leaf < n && (inner >= made || weight[leaf] <= weight[inner]) {
				leaf++
				return leaf - 1
			}
			inner++
			return inner - 1
		}
		for range n - 1 {
			a, b := pick(), pick()
			weight[made] = weight[a] + weight[b]
			parent[a], parent[b] = int16(made), int16(made)
			made++
		}
		depth[made-1] = 0
		deepest := uint8(0)
		for i := made - 2; i >= 0; i-- {
			depth[i] = depth[parent[i]] + 1
			deepest = max(deepest, depth[i])
		}
		if int(deepest) <= maxBits {
			for i, k := range keys[:n] {
				lens[k&511] = depth[i]
			}
			return
		}
		for i, k := range keys[:n] {
			keys[i] = max(1, k>>9/2)<<9 | k&511
		}
	}
}
