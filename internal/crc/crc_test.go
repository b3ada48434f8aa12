package crc

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCombine: the combined CRC-32 of two ranges is the CRC-32 of both,
// for lengths from empty to past a power of two, and a Shift made once
// combines many ranges of its length as Combine does.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 70000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 2, 3, 7, 8, 255, 4096, 65536, 69999} {
		for _, cut := range []int{0, min(1, n), n / 2, n} {
			a, b := buf[:cut], buf[cut:n]
			got := Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
			if want := crc32.ChecksumIEEE(buf[:n]); got != want {
				t.Errorf("n %d cut %d: %08x, want %08x", n, cut, got, want)
			}
		}
	}
	// Combine's short cut for crcA 0: every shift maps 0 to 0.
	for _, n := range []int64{1, 3, 1000, 1 << 20, 1<<40 + 7} {
		if got := NewShift(n).Apply(0); got != 0 {
			t.Errorf("the shift of %d zero bytes maps 0 to %08x", n, got)
		}
	}
	const block = 1000
	s := NewShift(block)
	var acc uint32
	for off := 0; off+block <= len(buf); off += block {
		acc = s.Apply(acc) ^ crc32.ChecksumIEEE(buf[off:off+block])
		if want := crc32.ChecksumIEEE(buf[:off+block]); acc != want {
			t.Fatalf("blocks to %d: %08x, want %08x", off+block, acc, want)
		}
	}
}
