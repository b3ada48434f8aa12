package inflate

import (
	"bytes"
	"compress/flate"
	"errors"
	"slices"
	"sync"
)

// A stored window keeps only the bytes of the 32 KiB before a checkpoint
// that the span after it actually reads (the others are zeroed), deflated.
// Untouched windows cost nothing; for typical data the rest deflates well.

// A windowPacker deflates windows. It holds a flate.Writer, over a
// megabyte of state: one (packer) serves every reader, since packing a
// window takes a small part of the time inflating the span after it does,
// so readers seldom wait; the parallel first pass gives each of its
// workers its own.
type windowPacker struct {
	w   *flate.Writer
	out bytes.Buffer
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
	p.out.Reset()
	if p.w == nil {
		p.w, _ = flate.NewWriter(&p.out, flate.BestSpeed)
	} else {
		p.w.Reset(&p.out)
	}
	p.w.Write(masked)
	p.w.Close()
	return bytes.Clone(p.out.Bytes())
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
