package inflate

import "unsafe"

// loopState is huffLoop's view of a decoder: addresses into its input
// and output buffers, and its bit buffer. The assembly reads and writes
// the fields at fixed offsets; TestLoopStateLayout checks them.
type loopState struct {
	in      unsafe.Pointer // 0: next input byte
	inLimit unsafe.Pointer // 8: the last address 8 input bytes can be loaded from
	bits    uint64         // 16
	nb      uint64         // 24
	out     unsafe.Pointer // 32: next output byte
	target  unsafe.Pointer // 40: stop at a symbol boundary at or past it (fastLoop: 1 before the target)
	low     unsafe.Pointer // 48: the higher of outMin and trackEnd
	lit     unsafe.Pointer // 56: primary literal/length table
	litSub  unsafe.Pointer // 64: its sub-tables
	dist    unsafe.Pointer // 72: primary distance table, n counting extra bits
	distSub unsafe.Pointer // 80: its sub-tables
	pairs   unsafe.Pointer // 88: the pair table (see buildPairs)
	outMin  unsafe.Pointer // 96: matches may not read below it
	// A match reading bytes below trackEnd marks them in touched, at
	// their address plus touchAt (touched's address less out's).
	trackEnd unsafe.Pointer // 104
	touchAt  uintptr        // 112
}

// What huffLoop stopped at.
const (
	loopStopped = iota // the target, or the end of the buffered input
	loopEOB            // an end-of-block code, consumed
	loopBadLit         // an invalid literal/length code
	loopBadDist        // an invalid distance code
	loopTooFar         // a distance reaching before outMin
)

// fastLoop runs huffLoop from d's state and takes its state back. The
// caller has checked what huffFast's Go loop checks: at least 8 input
// bytes buffered and room for target+outSlack in d.out; and that the
// target is 2 or more bytes ahead.
func (d *decoder) fastLoop(target int) error {
	in := unsafe.Pointer(unsafe.SliceData(d.in))
	out := unsafe.Pointer(unsafe.SliceData(d.out))
	s := loopState{
		in:      unsafe.Add(in, d.inPos),
		inLimit: unsafe.Add(in, d.inEnd-8),
		bits:    d.bits,
		nb:      uint64(d.nb),
		out:     unsafe.Add(out, d.pos),
		target:  unsafe.Add(out, target-1),
		low:     unsafe.Add(out, max(d.minPos, d.trackEnd)),
		lit:     unsafe.Pointer(unsafe.SliceData(d.lit.prim)),
		litSub:  unsafe.Pointer(unsafe.SliceData(d.lit.sub)),
		dist:    unsafe.Pointer(&d.distLoop),
		distSub: unsafe.Pointer(unsafe.SliceData(d.dist.sub)),
		pairs:   unsafe.Pointer(&d.pairs),
		outMin:  unsafe.Add(out, d.minPos),
	}
	if d.trackEnd > d.minPos {
		s.trackEnd = unsafe.Add(out, d.trackEnd)
		s.touchAt = uintptr(unsafe.Pointer(unsafe.SliceData(d.touched))) - uintptr(out)
	}
	d.buildLoop()
	code := huffLoop(&s)
	d.inPos = int(uintptr(s.in) - uintptr(in))
	d.bits, d.nb = s.bits, uint(s.nb)
	d.pos = int(uintptr(s.out) - uintptr(out))
	switch code {
	case loopEOB:
		d.finishBlock()
	case loopBadLit:
		return d.corrupt("invalid literal/length code")
	case loopBadDist:
		return d.corrupt("invalid distance code")
	case loopTooFar:
		return d.corrupt("distance too far back")
	}
	return nil
}

// The pair table: 2^pairBits entries indexed like the literal/length
// table, each decoding up to two symbols: one or two literals, or a
// length after a literal or not. An entry is a uint32:
//
//	bits  0-5   n: bits its codewords take, and a length's extra bits
//	bits  6-8   kind: kindLit (literals only), kindLen (ends with a
//	            length), kindEOB, kindSub (a codeword over pairBits
//	            bits: decode it through the literal/length table), kindBad
//	bits  9-11  extra bits after the length
//	bits 12-13  literals: 0, 1 or 2
//	bits 16-23  the first literal
//	bits 24-31  the second literal, or the length's base less 3
//
// Two symbols share an entry when both codewords fit in pairBits bits and
// the first is a literal; on data where a literal and a short match
// alternate, each lookup then decodes both, and the branch on the kind
// sees one kind where it saw two alternating.
const pairBits = 12

// Symbol maps for the pair table: pairOne[s] is symbol s's entry alone
// but for its codeword's length (which is added to n), pairTwo[s] what
// symbol s adds to a literal's entry when it follows that literal (0 for
// a symbol that cannot).
var pairOne, pairTwo [288]uint32

func init() {
	for s := range 288 {
		switch {
		case s < 256:
			pairOne[s] = 1<<12 | uint32(s)<<16
			pairTwo[s] = 1<<12 | uint32(s)<<24
		case s == 256:
			pairOne[s] = kindEOB
		case s < maxLit:
			ex := uint32(lengthExtra[s-257])
			x := ex | kindLen | ex<<9 | uint32(lengthBase[s-257]-3)<<24
			pairOne[s] = x
			pairTwo[s] = x
		default:
			pairOne[s] = kindBad
		}
	}
}

// buildLoop builds the tables huffLoop decodes the block with, unless
// they are built: the pair table, and the distance table with a
// length's n counting its extra bits too.
func (c *codes) buildLoop() {
	if c.pairsBuilt {
		return
	}
	c.buildPairs()
	for i, e := range c.dist.prim[:distSize] {
		if e&kindMask == kindLen {
			e += e >> exShift & 0x3f
		}
		c.distLoop[i] = e
	}
	c.pairsBuilt = true
}

// buildPairs fills c.pairs from the code lengths of the block's
// literal/length code, c.litLens, which huffTable.build has accepted.
// It enumerates codewords, not entries: every codeword of up to pairBits
// bits fills the entries it begins, a longer one marks its first pairBits
// bits kindSub, and then every literal's entries are overwritten with
// pairs for each codeword that fits after it.
func (c *codes) buildPairs() {
	lens := c.litLens
	var rev [maxLit + 2]uint16 // codewords, reversed as the stream sends them
	canonicalReversed(lens, rev[:len(lens)])
	// Symbols of codewords of up to pairBits bits by length, short ones
	// first.
	var count [16]uint16
	for _, n := range lens {
		count[n]++
	}
	var short [maxLit + 2]uint16
	var start [pairBits + 2]int
	for n := 1; n <= pairBits; n++ {
		start[n+1] = start[n] + int(count[n])
	}
	at := start
	for s, n := range lens {
		if n != 0 && n <= pairBits {
			short[at[n]] = uint16(s)
			at[n]++
		}
	}
	// Each codeword of n bits fills one entry of a table of 2^n, which
	// doubles (a copy) before the next length: every entry then holds
	// the codeword its low bits begin with. Entries no codeword begins
	// (an incomplete code: one codeword of one bit, or none) stay bad.
	p := &c.pairs
	p[0], p[1] = kindBad, kindBad
	for n := 1; n <= pairBits; n++ {
		if n > 1 {
			copy(p[1<<(n-1):1<<n], p[:1<<(n-1)])
		}
		for _, s := range short[start[n]:start[n+1]] {
			p[rev[s]] = pairOne[s] + uint32(n)
		}
	}
	for s, n := range lens {
		if n > pairBits {
			p[rev[s]&(1<<pairBits-1)] = kindSub
		}
	}
	// Pairs. q[j] is what the codeword the bits j begin with adds to a
	// literal's entry when it follows it within pairBits bits (0 when it
	// does not fit or cannot follow); built by doubling as above, one
	// length at a time, it serves every literal of pairBits-k bits at
	// table size 2^k. Each such literal's entries are rewritten from it.
	var q [1 << (pairBits - 1)]uint32
	for k := 1; k < pairBits; k++ {
		if k > 1 {
			copy(q[1<<(k-1):1<<k], q[:1<<(k-1)])
		}
		for _, s := range short[start[k]:start[k+1]] {
			if two := pairTwo[s]; two != 0 {
				q[rev[s]] = two + uint32(k)
			} else {
				q[rev[s]] = 0
			}
		}
		n1 := pairBits - k
		for _, s1 := range short[start[n1]:start[n1+1]] {
			if s1 >= 256 {
				break // literals come first
			}
			e := pairOne[s1] | uint32(n1)
			r := int(rev[s1])
			for j, add := range q[:1<<k] {
				p[r+j<<n1] = e + add
			}
		}
	}
}
