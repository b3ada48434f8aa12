package inflate

//go:generate go run genloops.go

import (
	"encoding/binary"
	"io"
	"unsafe"
)

// Decoder states between calls to decode.
const (
	stHeader = iota // next comes a block header
	stStored        // inside a stored block, d.stored bytes left
	stHuff          // inside a Huffman block, at a symbol boundary
	stDone          // the final block has ended
)

const (
	windowSize = 32 << 10
	// outSlack is the room a caller leaves after its target in the output
	// buffer: one symbol may run past the target by up to 258 bytes, and
	// match copies write in 8-byte chunks.
	outSlack  = 258 + 16
	inBufSize = 64 << 10
	// smallFill is the first read of a stream: a caller after the first
	// bytes of a member (its header) should not pay for more.
	smallFill = 4 << 10
)

var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// decoder inflates a raw DEFLATE stream into a flat buffer. It is its
// input (bitReader), its output (outBuf) and its code tables (codes),
// and the state of the block it is in. decode stops at the first symbol
// boundary at or after its target, so a stop point is a function of the
// target alone: resuming from a recorded state reproduces the same stops.
type decoder struct {
	bitReader
	outBuf

	state    int
	final    bool
	stored   int
	blockBit int64 // bit position of the current block's header
	// stopBit, when not 0, stops decode at the first block header at
	// or past it (see parallelPass.run).
	stopBit int64
	// goLoop makes huffFast decode with its Go loop even where huffLoop
	// exists (tests compare the two).
	goLoop bool

	codes
}

// outBuf is a decoder's output: out[:pos] is output, of which
// out[minPos:pos] may be referred to by distances; callers slide or
// reset out between calls.
type outBuf struct {
	out    []byte
	pos    int
	minPos int
	// Touch tracking: a match whose source starts before trackEnd marks
	// the bytes it reads below trackEnd in touched.
	trackEnd int
	touched  []bool
}

// codes are a decoder's code tables: those of the current block (lit and
// dist: the fixed ones, or the dynamic ones read from its header), and
// the tables huffLoop decodes with, built from them.
type codes struct {
	lit, dist *huffTable

	dynLit, dynDist, clT huffTable
	dynLitArr            [litSize]uint32
	dynDistArr           [distSize]uint32
	clArr                [1 << clBits]uint32
	lens                 [maxLit + maxDist]uint8
	// pairs (from litLens, the code lengths of lit) and distLoop (from
	// dist) are built for huffLoop when it first runs in a block.
	pairs      [1 << pairBits]uint32
	distLoop   [distSize]uint32
	pairsBuilt bool
	litLens    []uint8
}

func newDecoder() *decoder {
	d := &decoder{bitReader: bitReader{in: make([]byte, inBufSize)}}
	d.dynLit.prim = d.dynLitArr[:]
	d.dynDist.prim = d.dynDistArr[:]
	d.clT.prim = d.clArr[:]
	return d
}

// resetStream starts decoding a fresh stream read from r.
func (d *decoder) resetStream(r io.Reader) {
	d.bitReader.reset(r)
	d.pos, d.minPos = 0, 0
	d.state, d.final, d.stored = stHeader, false, 0
	d.trackEnd, d.stopBit = 0, 0
	d.goLoop = false
}

func (d *decoder) finishBlock() {
	if d.final {
		d.state = stDone
	} else {
		d.state = stHeader
	}
}

// readHeader reads a block header (and its code tables).
func (d *decoder) readHeader() error {
	d.blockBit = d.bitPos()
	d.pairsBuilt = false
	if err := d.need(3); err != nil {
		return err
	}
	d.final = d.bits&1 == 1
	typ := (d.bits >> 1) & 3
	d.consume(3)
	switch typ {
	case 0:
		d.consume(d.nb & 7)
		if err := d.need(32); err != nil {
			return err
		}
		n := uint16(d.bits)
		nn := uint16(d.bits >> 16)
		if n != ^nn {
			return d.corrupt("stored block length does not match its complement")
		}
		d.consume(32)
		d.stored = int(n)
		d.state = stStored
		if n == 0 {
			d.finishBlock()
		}
	case 1:
		d.lit, d.dist = fixedTables()
		d.litLens = fixedLitLens[:]
		d.state = stHuff
	case 2:
		if err := d.readDynamic(); err != nil {
			return err
		}
		d.lit, d.dist = &d.dynLit, &d.dynDist
		d.state = stHuff
	default:
		return d.corrupt("reserved block type")
	}
	return nil
}

func (d *decoder) readDynamic() error {
	if err := d.need(14); err != nil {
		return err
	}
	nlit := int(d.bits&31) + 257
	ndist := int(d.bits>>5&31) + 1
	nclen := int(d.bits>>10&15) + 4
	if nlit > maxLit {
		return d.corrupt("too many literal/length codes")
	}
	if ndist > maxDist {
		return d.corrupt("too many distance codes")
	}
	d.consume(14)
	var cl [19]uint8
	for i := 0; i < nclen; i++ {
		if err := d.need(3); err != nil {
			return err
		}
		cl[codeOrder[i]] = uint8(d.bits & 7)
		d.consume(3)
	}
	if !d.clT.build(cl[:], &clSym, clBits) {
		return d.corrupt("invalid code length code set")
	}
	n := nlit + ndist
	lens := d.lens[:n]
	for i := 0; i < n; {
		e, err := d.slowSym(&d.clT, clBits)
		if err != nil {
			return err
		}
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var nbx uint
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return d.corrupt("repeat with no previous code length")
			}
			rep, nbx, v = 3, 2, lens[i-1]
		case 17:
			rep, nbx = 3, 3
		default:
			rep, nbx = 11, 7
		}
		if err := d.need(nbx); err != nil {
			return err
		}
		rep += int(d.bits & (1<<nbx - 1))
		d.consume(nbx)
		if i+rep > n {
			return d.corrupt("code lengths repeat past the end")
		}
		for ; rep > 0; rep-- {
			lens[i] = v
			i++
		}
	}
	d.litLens = lens[:nlit]
	if !d.dynLit.build(lens[:nlit], &litSym, litBits) {
		return d.corrupt("invalid literal/length code set")
	}
	if !d.dynDist.build(lens[nlit:n], &distSym, distBits) {
		return d.corrupt("invalid distance code set")
	}
	return nil
}

// decode inflates until d.pos >= target (stopping at the first symbol
// boundary there), the stream ends, or a block header at or past
// d.stopBit (if set) is next. len(d.out) must be >= target+outSlack.
func (d *decoder) decode(target int) error {
	for d.pos < target {
		var err error
		switch d.state {
		case stHeader:
			if d.stopBit != 0 && d.bitPos() >= d.stopBit {
				return nil
			}
			err = d.readHeader()
		case stStored:
			err = d.copyStored(target)
		case stHuff:
			err = d.huff(target)
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) copyStored(target int) error {
	for d.stored > 0 && d.pos < target {
		if d.nb >= 8 {
			d.out[d.pos] = byte(d.bits)
			d.consume(8)
			d.pos++
			d.stored--
			continue
		}
		d.bits = 0 // nb is 0: we read straight from in below
		if d.inPos == d.inEnd {
			if err := d.fill(); err != nil {
				return err
			}
			if d.inPos == d.inEnd {
				return d.truncErr()
			}
		}
		n := min(d.stored, target-d.pos, d.inEnd-d.inPos)
		copy(d.out[d.pos:d.pos+n], d.in[d.inPos:d.inPos+n])
		d.pos += n
		d.inPos += n
		d.stored -= n
	}
	if d.stored == 0 {
		d.finishBlock()
	}
	return nil
}

func (d *decoder) huff(target int) error {
	for d.state == stHuff && d.pos < target {
		if d.inEnd-d.inPos < 8 && !d.inEOF {
			if err := d.fill(); err != nil {
				return err
			}
			continue
		}
		if d.inEnd-d.inPos >= 8 {
			if err := d.huffFast(target); err != nil {
				return err
			}
			continue
		}
		if err := d.huffSlow(); err != nil {
			return err
		}
	}
	return nil
}

// mark records the window bytes [from, to) as read by a match.
func (o *outBuf) mark(from, to int) {
	t := o.touched[from:to]
	for i := range t {
		t[i] = true
	}
}

// copyMatch writes length bytes from dist back at pos. It may write up to
// 15 bytes past pos+length (callers leave outSlack).
func copyMatch(out []byte, pos, dist, length int) {
	src := pos - dist
	if dist >= length && length > 32 {
		copy(out[pos:pos+length], out[src:src+length])
		return
	}
	if dist >= 8 {
		for k := 0; k < length; k += 8 {
			binary.LittleEndian.PutUint64(out[pos+k:], binary.LittleEndian.Uint64(out[src+k:]))
		}
		return
	}
	if dist == 1 {
		if out[src] == 0 && length > 32 {
			clear(out[pos : pos+length]) // runs of zeros are common in arrays
			return
		}
		v := uint64(out[src]) * 0x0101010101010101
		for k := 0; k < length; k += 8 {
			binary.LittleEndian.PutUint64(out[pos+k:], v)
		}
		return
	}
	// Copy dist bytes at a time until at least 8 are written (each 8-byte
	// store also writes bytes that are not right yet, which the next one
	// overwrites); the rest repeats from that distance, a multiple of dist
	// and >= 8, in 8-byte chunks.
	k := 0
	for ; k < length && k < 8; k += dist {
		binary.LittleEndian.PutUint64(out[pos+k:], binary.LittleEndian.Uint64(out[src+k:]))
	}
	for j := k; j < length; j += 8 {
		binary.LittleEndian.PutUint64(out[pos+j:], binary.LittleEndian.Uint64(out[pos+j-k:]))
	}
}

// huffFast decodes symbols while at least 8 input bytes are buffered:
// with huffLoop where there is one (see fast.go), else with huffGo (both
// are written once: huffGo in loops.go.tmpl).
func (d *decoder) huffFast(target int) error {
	// Every symbol starts below target and writes at most 258 bytes, in
	// 8-byte stores up to 15 bytes past its end; every match reads from
	// minPos on: both loops address out unchecked.
	if target+outSlack > len(d.out) || d.minPos < 0 {
		panic("inflate: output buffer shorter than target+outSlack")
	}
	if d.pos >= target || d.inPos > d.inEnd-8 {
		return nil
	}
	if haveFastLoop && !d.goLoop && d.pos+1 < target {
		return d.fastLoop(target)
	}
	return d.huffGo(target)
}

// outPtr addresses an output buffer without bounds checks, for huffGo,
// whose caller checks once that every address it forms lies in the
// buffer.
type outPtr struct{ p unsafe.Pointer }

// set stores b at i.
func (o outPtr) set(i int, b byte) { *(*byte)(unsafe.Add(o.p, i)) = b }

// get loads the 8 bytes at i, little-endian.
func (o outPtr) get(i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(o.p, i)), 8))
}

// put stores v at i, little-endian.
func (o outPtr) put(i int, v uint64) {
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(o.p, i)), 8), v)
}
