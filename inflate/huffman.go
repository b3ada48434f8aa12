package inflate

import (
	"math/bits"
	"sync"
)

// A decoding table entry is a uint32:
//
//	bits  0-5   n: bits the codeword takes (for a sub-table link: the
//	            number of index bits of the sub-table); masking with 63
//	            lets the compiler shift by it with no extra instruction
//	bits  6-8   kind
//	bits  9-15  extra bits that follow the codeword (lengths, distances)
//	bits 16-31  value: literal byte, base length or distance, symbol, or
//	            sub-table offset
//
// Tables are indexed by the next bits of the stream (least significant bit
// first, so by bit-reversed codewords). A primary table of 2^pbits entries
// resolves every codeword up to pbits long; longer codewords go through a
// link to a sub-table indexed by the bits after the first pbits.
const (
	kindLit  = 0 << 6 // literal byte (value)
	kindLen  = 1 << 6 // length or distance: value is the base, extra bits follow
	kindEOB  = 2 << 6 // end of block
	kindSub  = 3 << 6 // link to a sub-table
	kindBad  = 4 << 6 // no codeword, or a symbol that must not occur
	kindMask = 7 << 6
	nMask    = 63
	exShift  = 9

	litBits  = 10
	litSize  = 1 << litBits
	litMask  = litSize - 1
	distBits = 8
	distSize = 1 << distBits
	distMask = distSize - 1
	clBits   = 7

	maxLit  = 286 // literal/length symbols a dynamic header may declare
	maxDist = 30
)

const badEntry = kindBad

var lengthBase = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
	35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
var lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
	3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
var distBase = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
	257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
var distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
	7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

// Symbol-to-entry maps (without n) for the three alphabets.
var litSym, distSym, clSym [288]uint32

func init() {
	for s := 0; s < 288; s++ {
		switch {
		case s < 256:
			litSym[s] = kindLit | uint32(s)<<16
		case s == 256:
			litSym[s] = kindEOB
		case s < 286:
			litSym[s] = kindLen | uint32(lengthExtra[s-257])<<exShift | uint32(lengthBase[s-257])<<16
		default:
			litSym[s] = kindBad
		}
		if s < 30 {
			distSym[s] = kindLen | uint32(distExtra[s])<<exShift | uint32(distBase[s])<<16
		} else {
			distSym[s] = kindBad
		}
		clSym[s] = kindLen | uint32(s)<<16
	}
}

// huffTable is a primary table plus its sub-tables.
type huffTable struct {
	prim []uint32
	sub  []uint32
}

// build fills t from code lengths (0 = unused). It reports false for a code
// set the standard library's decoder rejects: over-subscribed, or
// incomplete unless it is a single codeword of one bit. An empty set is
// accepted; every lookup in it finds kindBad.
func (t *huffTable) build(lengths []uint8, symMap *[288]uint32, pbits uint) bool {
	var count [16]int
	maxLen := 0
	for _, n := range lengths {
		if n != 0 {
			count[n]++
			if int(n) > maxLen {
				maxLen = int(n)
			}
		}
	}
	t.sub = t.sub[:0]
	if maxLen == 0 {
		for i := range t.prim {
			t.prim[i] = badEntry
		}
		return true
	}
	// Kraft sum scaled to 2^maxLen.
	sum := 0
	for i := 1; i <= maxLen; i++ {
		sum += count[i] << uint(maxLen-i)
	}
	if sum != 1<<uint(maxLen) && !(sum == 1 && maxLen == 1) {
		return false
	}
	if sum != 1<<uint(maxLen) {
		// Incomplete (a single one-bit code): some entries stay unused.
		for i := range t.prim {
			t.prim[i] = badEntry
		}
	}
	var next [16]int
	code := 0
	for i := 1; i <= 15; i++ {
		code = (code + count[i-1]) << 1
		next[i] = code
	}
	psize := 1 << pbits
	pmask := psize - 1
	if maxLen > int(pbits) {
		t.linkSubTables(lengths, next, pbits)
	}
	for s, n := range lengths {
		if n == 0 {
			continue
		}
		c := next[n]
		next[n]++
		rev := int(bits.Reverse16(uint16(c)) >> (16 - n))
		e := symMap[s] | uint32(n)
		if uint(n) <= pbits {
			for i := rev; i < psize; i += 1 << n {
				t.prim[i] = e
			}
			continue
		}
		link := t.prim[rev&pmask]
		sb := uint(link & nMask)
		off := int(link >> 16)
		for i := rev >> pbits; i < 1<<sb; i += 1 << (uint(n) - pbits) {
			t.sub[off+i] = e
		}
	}
	return true
}

// linkSubTables makes the sub-tables of the codewords longer than pbits
// bits, each sized by the longest codeword sharing its prefix, and links
// them from the primary table; next is the first codeword of each
// length.
func (t *huffTable) linkSubTables(lengths []uint8, next [16]int, pbits uint) {
	pmask := 1<<pbits - 1
	var subLen [1 << litBits]uint8
	var prefixes [288]uint16
	np := 0
	for _, n := range lengths {
		if int(n) <= int(pbits) {
			continue
		}
		c := next[n]
		next[n]++
		p := int(bits.Reverse16(uint16(c))>>(16-n)) & pmask
		if subLen[p] == 0 {
			prefixes[np] = uint16(p)
			np++
		}
		if n > subLen[p] {
			subLen[p] = n
		}
	}
	for _, p := range prefixes[:np] {
		sb := uint(subLen[p]) - pbits
		off := len(t.sub)
		for j := 0; j < 1<<sb; j++ {
			t.sub = append(t.sub, badEntry)
		}
		t.prim[p] = kindSub | uint32(sb) | uint32(off)<<16
	}
}

// Fixed Huffman tables (RFC 1951 3.2.6), built once.
var (
	fixedOnce sync.Once
	fixedLit  [litSize]uint32
	// fixedLitLens are the fixed literal/length code's lengths.
	fixedLitLens [288]uint8
	fixedLitT    huffTable
	fixedDist    [distSize]uint32
	fixedDisT    huffTable
)

func fixedTables() (*huffTable, *huffTable) {
	fixedOnce.Do(func() {
		l := &fixedLitLens
		for i := range l {
			switch {
			case i < 144:
				l[i] = 8
			case i < 256:
				l[i] = 9
			case i < 280:
				l[i] = 7
			default:
				l[i] = 8
			}
		}
		fixedLitT.prim = fixedLit[:]
		fixedLitT.build(l[:], &litSym, litBits)
		var d [32]uint8
		for i := range d {
			d[i] = 5
		}
		fixedDisT.prim = fixedDist[:]
		fixedDisT.build(d[:], &distSym, distBits)
	})
	return &fixedLitT, &fixedDisT
}
