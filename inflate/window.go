package inflate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"unsafe"
)

// A stored window keeps only the bytes of the 32 KiB before a checkpoint
// that the span after it actually reads (the others are zeroed), deflated.
// Untouched windows cost nothing; for typical data the rest deflates well.

// A windowPacker deflates windows (sparseEncoder), keeping its buffers
// from one to the next: one (packer) serves every reader, since packing a
// window takes a small part of the time inflating the span after it does,
// so readers seldom wait; the parallel first pass gives each of its
// workers its own.
type windowPacker struct {
	sparse sparseEncoder
}

var packer struct {
	sync.Mutex
	windowPacker
}

// packWindow returns the stored form of masked, a window whose untouched
// bytes are already zeroed (see packLater): nil when all are.
func packWindow(masked []byte) []byte {
	packer.Lock()
	defer packer.Unlock()
	return packer.pack(masked)
}

// pack is packWindow with p.
func (p *windowPacker) pack(masked []byte) []byte {
	if !slices.ContainsFunc(masked, func(b byte) bool { return b != 0 }) {
		return nil
	}
	return bytes.Clone(p.sparse.deflate(p.sparse.out[:0], masked))
}

// maskWindow writes into dst (as long as win) the bytes of win whose
// touched flag is set, and zeros for the others, and reports whether any
// byte written is not zero.
func maskWindow(dst, win []byte, touched []bool) bool {
	t := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(touched))), len(touched)) // each 0 or 1
	var nonzero uint64
	k := 0
	for ; k+8 <= len(win); k += 8 {
		m := binary.LittleEndian.Uint64(win[k:]) & (binary.LittleEndian.Uint64(t[k:]) * 0xff)
		binary.LittleEndian.PutUint64(dst[k:], m)
		nonzero |= m
	}
	for ; k < len(win); k++ {
		b := win[k] & (0 - t[k])
		dst[k] = b
		nonzero |= uint64(b)
	}
	return nonzero != 0
}

var errBadWindow = errors.New("inflate: internal error: stored window does not inflate")

// unpackWindow inflates a stored window of n bytes into buf[:n], using d.
// buf must have outSlack bytes past n, which it may overwrite.
func unpackWindow(d *decoder, packed []byte, buf []byte, n int) error {
	if packed == nil {
		clear(buf[:n])
		return nil
	}
	d.resetStream(bytes.NewReader(packed))
	d.out = buf
	if err := d.decode(n); err != nil {
		return err
	}
	if d.pos != n {
		return errBadWindow
	}
	return nil
}
