package inflate

import (
	"bytes"
	"compress/flate"
	"errors"
	"sync"
)

// A stored window keeps only the bytes of the 32 KiB before a checkpoint
// that the span after it actually reads (the others are zeroed), deflated.
// Untouched windows cost nothing; for typical data the rest deflates well.

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// packWindow returns the stored form of win with only the touched bytes
// kept. touched may be nil (keep everything).
func packWindow(win []byte, touched []bool) []byte {
	masked := make([]byte, len(win))
	any := false
	for i := range win {
		if touched == nil || touched[i] {
			masked[i] = win[i]
			any = any || win[i] != 0
		}
	}
	if !any {
		return nil
	}
	var buf bytes.Buffer
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	w.Write(masked)
	w.Close()
	flateWriters.Put(w)
	out := make([]byte, buf.Len())
	copy(out, buf.Bytes())
	return out
}

var errBadWindow = errors.New("inflate: internal error: stored window does not inflate")

// unpackWindow inflates a stored window of n bytes into dst[:n], using d.
func unpackWindow(d *decoder, packed []byte, dst []byte) error {
	n := len(dst)
	if packed == nil {
		clear(dst)
		return nil
	}
	d.resetStream(bytes.NewReader(packed))
	buf := make([]byte, n+outSlack)
	d.out = buf
	if err := d.decode(n); err != nil {
		return err
	}
	if d.pos != n {
		return errBadWindow
	}
	copy(dst, buf[:n])
	return nil
}
