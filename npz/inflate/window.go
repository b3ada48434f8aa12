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

// packer deflates windows for packWindow. One serves every reader: a
// flate.Writer holds over a megabyte of state, which a pool would keep one
// of per thread packing at once, and packing a window takes a small part
// of the time inflating the span after it does, so readers seldom wait.
var packer struct {
	sync.Mutex
	w   *flate.Writer
	out bytes.Buffer
}

// packWindow returns the stored form of masked, a window whose untouched
// bytes are already zeroed (see packLater): nil when all are.
func packWindow(masked []byte) []byte {
	if !slices.ContainsFunc(masked, func(b byte) bool { return b != 0 }) {
		return nil
	}
	packer.Lock()
	defer packer.Unlock()
	packer.out.Reset()
	if packer.w == nil {
		packer.w, _ = flate.NewWriter(&packer.out, flate.BestSpeed)
	} else {
		packer.w.Reset(&packer.out)
	}
	packer.w.Write(masked)
	packer.w.Close()
	return bytes.Clone(packer.out.Bytes())
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
