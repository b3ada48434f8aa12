// Package crc combines CRC-32s (IEEE, as zip uses) of consecutive byte
// ranges, so that ranges checksummed apart, on several cores or at
// different times, give the checksum of the whole.
package crc

// Combine returns the CRC-32 of a‖b from the CRC-32s of a and b and the
// length of b. The effect of n zero bytes on a CRC is a linear map over
// GF(2), applied here by repeated squaring of the one-zero-bit operator
// (the method of zlib's crc32_combine).
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	if crcA == 0 {
		// The map is linear, so it leaves 0 as it is: an empty a (a
		// small member's only block) needs no map made.
		return crcB
	}
	return NewShift(lenB).Apply(crcA) ^ crcB
}

// Shift is the map a run of a fixed number of zero bytes makes of a
// CRC-32: made once, it combines the CRC-32s of many ranges of that
// length at 32 steps each (a block table's).
type Shift struct{ mat [32]uint32 }

// NewShift returns the Shift of n zero bytes (n > 0).
func NewShift(n int64) *Shift {
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reflected polynomial: one zero bit
	row := uint32(1)
	for i := 1; i < 32; i++ {
		odd[i] = row
		row <<= 1
	}
	square(&even, &odd) // two zero bits
	square(&odd, &even) // four
	s := &Shift{}
	for i := range s.mat {
		s.mat[i] = 1 << i // the identity
	}
	for {
		square(&even, &odd) // one zero byte, then 4, 16, ...
		if n&1 != 0 {
			s.compose(&even)
		}
		if n >>= 1; n == 0 {
			break
		}
		square(&odd, &even) // 2 zero bytes, then 8, 32, ...
		if n&1 != 0 {
			s.compose(&odd)
		}
		if n >>= 1; n == 0 {
			break
		}
	}
	return s
}

// Apply returns the CRC-32 crc becomes once the run of zero bytes is
// appended to what it covers; Apply(crcA) ^ crcB is Combine(crcA, crcB,
// n) for a range b of the Shift's length n.
func (s *Shift) Apply(crc uint32) uint32 { return times(&s.mat, crc) }

// compose makes s the map of s followed by m.
func (s *Shift) compose(m *[32]uint32) {
	for i := range s.mat {
		s.mat[i] = times(m, s.mat[i])
	}
}

func times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func square(sq, mat *[32]uint32) {
	for n := range 32 {
		sq[n] = times(mat, mat[n])
	}
}
