package inflate

import "io"

// bitReader is a decoder's input: in[inPos:inEnd] are unread bytes, and
// in[0] is byte inBase of the stream; bits holds the next nb bits, and
// its bits above nb are zero or the stream's true next bits. It reads
// from r, or, to seek, from a section of ra.
type bitReader struct {
	r      io.Reader
	ra     io.ReaderAt // for seekBit; nil for a plain stream
	raSize int64
	in     []byte
	inPos  int
	inEnd  int
	inBase int64
	inEOF  bool
	inErr  error
	inStep int // bytes the next fill asks for; grows up to len(in)
	bits   uint64
	nb     uint
}

// reset starts reading a fresh stream from r.
func (br *bitReader) reset(r io.Reader) {
	br.r, br.ra = r, nil
	br.inPos, br.inEnd, br.inBase = 0, 0, 0
	br.inEOF, br.inErr = false, nil
	br.inStep = smallFill
	br.bits, br.nb = 0, 0
}

// seekBit positions the input at bit pos of a ReaderAt source. step is
// the size of the first read if the buffer does not already hold pos.
func (br *bitReader) seekBit(pos int64, step int) error {
	off := pos >> 3
	if br.r != nil && off >= br.inBase && off <= br.inBase+int64(br.inEnd) {
		br.inPos = int(off - br.inBase)
	} else {
		if off > br.raSize {
			off = br.raSize
		}
		br.r = io.NewSectionReader(br.ra, off, br.raSize-off)
		br.inBase, br.inPos, br.inEnd = off, 0, 0
		br.inEOF, br.inErr = false, nil
		br.inStep = step
	}
	br.bits, br.nb = 0, 0
	if k := uint(pos & 7); k != 0 {
		if err := br.need(k); err != nil {
			return err
		}
		br.consume(k)
	}
	return nil
}

func (br *bitReader) bitPos() int64 { return (br.inBase+int64(br.inPos))*8 - int64(br.nb) }

func (br *bitReader) corrupt(msg string) error {
	return &CorruptError{Offset: br.bitPos() >> 3, Msg: msg}
}

// fill moves the unread input to the front of the buffer and reads more.
// It returns a read error other than io.EOF.
func (br *bitReader) fill() error {
	if br.inEOF {
		return br.inErr
	}
	if br.inPos > 0 {
		n := copy(br.in, br.in[br.inPos:br.inEnd])
		br.inBase += int64(br.inPos)
		br.inPos, br.inEnd = 0, n
	}
	end := min(len(br.in), br.inEnd+br.inStep)
	br.inStep = min(2*br.inStep, len(br.in))
	for tries := 0; br.inEnd < end; tries++ {
		n, err := br.r.Read(br.in[br.inEnd:end])
		br.inEnd += n
		if err != nil {
			br.inEOF = true
			if err != io.EOF {
				br.inErr = err
				return err
			}
			return nil
		}
		if n > 0 || tries > 100 {
			break
		}
	}
	return nil
}

// pullByte moves one input byte into the bit buffer (nb must be <= 56).
func (br *bitReader) pullByte() bool {
	if br.inPos == br.inEnd {
		if br.fill() != nil || br.inPos == br.inEnd {
			return false
		}
	}
	br.bits |= uint64(br.in[br.inPos]) << br.nb
	br.inPos++
	br.nb += 8
	return true
}

// truncErr is what running out of input is reported as.
func (br *bitReader) truncErr() error {
	if br.inErr != nil {
		return br.inErr
	}
	return io.ErrUnexpectedEOF
}

func (br *bitReader) need(n uint) error {
	for br.nb < n {
		if !br.pullByte() {
			return br.truncErr()
		}
	}
	return nil
}

func (br *bitReader) consume(n uint) {
	br.bits >>= n
	br.nb -= n
}

// slowSym decodes one symbol with t, pulling input a byte at a time.
func (br *bitReader) slowSym(t *huffTable, pbits uint) (uint32, error) {
	short := false
	for br.nb < 15 {
		if !br.pullByte() {
			short = true
			break
		}
	}
	e := t.prim[br.bits&(1<<pbits-1)]
	if e&kindMask == kindSub {
		e = t.sub[(e>>16)+uint32(br.bits>>pbits)&(1<<(e&nMask)-1)]
	}
	if e&kindMask == kindBad {
		if short {
			return 0, br.truncErr()
		}
		return 0, br.corrupt("invalid Huffman code")
	}
	n := uint(e & nMask)
	if n > br.nb {
		return 0, br.truncErr()
	}
	br.consume(n)
	return e, nil
}
