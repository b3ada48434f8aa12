package serve

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// A frame is a fixed header, then a JSON object (its meta), then raw
// bytes (its data; only replies to reads carry any):
//
//	"NZS1"  magic, 4 bytes
//	M       uint32, little-endian: bytes of meta
//	D       uint32, little-endian: bytes of data
//	meta    M bytes: one JSON object, UTF-8
//	data    D bytes
const (
	frameMagic = "NZS1"
	headerLen  = 12
)

// Limits of the protocol (docs/serve.md, and the hello reply).
const (
	// MaxRequest is the longest meta of a request. A longer frame is
	// refused and skipped, read and dropped a few KiB at a time.
	MaxRequest = 64 << 10
	// MaxReplyMeta is the longest meta of a reply: a table reply is
	// filled up to TableBytes, and one member's entry is far shorter
	// unless its npy header is (a descr of a wide record).
	MaxReplyMeta = 16 << 20
	// MaxChunk is the most data one reply carries: a longer read is
	// answered by several replies, in order.
	MaxChunk = 1 << 20
	// MaxPending is how many reads and tables may be in flight at once
	// (answered or waiting for their turn); past it a request is
	// refused with the code "busy".
	MaxPending = 1024
	// TableBytes is about where a table reply stops adding members.
	TableBytes = 1 << 20
)

// A frameError is a frame the server refuses. A frame that is too long,
// or a request that carries data, has been skipped whole, and the next
// frame is read; a bad magic means the stream cannot be followed any
// more (fatal).
type frameError struct {
	msg   string
	fatal bool
}

func (e *frameError) Error() string { return e.msg }

// frameReader reads request frames, keeping one buffer for their metas.
type frameReader struct {
	hdr  [headerLen]byte
	meta []byte
}

// next reads the next frame and returns its meta, valid until the next
// call. It returns io.EOF at the end of input between frames,
// io.ErrUnexpectedEOF inside one, and a *frameError for a frame it
// refuses; it never holds more than MaxRequest bytes of a frame.
func (fr *frameReader) next(r io.Reader) ([]byte, error) {
	if _, err := io.ReadFull(r, fr.hdr[:]); err != nil {
		return nil, err
	}
	if string(fr.hdr[:4]) != frameMagic {
		return nil, &frameError{msg: fmt.Sprintf("bad frame: it starts with %s, not the magic %q", strconv.QuoteToASCII(string(fr.hdr[:4])), frameMagic), fatal: true}
	}
	m := int64(binary.LittleEndian.Uint32(fr.hdr[4:]))
	d := int64(binary.LittleEndian.Uint32(fr.hdr[8:]))
	switch {
	case m > MaxRequest || d > 0:
		if _, err := io.CopyN(io.Discard, r, m+d); err != nil {
			return nil, unexpected(err)
		}
		if d > 0 {
			return nil, &frameError{msg: fmt.Sprintf("bad frame: a request carries %d bytes of data; requests carry none", d)}
		}
		return nil, &frameError{msg: fmt.Sprintf("bad frame: a request of %d bytes, more than the %d a request may have", m, MaxRequest)}
	case m == 0:
		return nil, &frameError{msg: "bad frame: a request with no JSON object"}
	}
	if int64(cap(fr.meta)) < m {
		fr.meta = make([]byte, m)
	}
	fr.meta = fr.meta[:m]
	if _, err := io.ReadFull(r, fr.meta); err != nil {
		return nil, unexpected(err)
	}
	return fr.meta, nil
}

// unexpected is io.ErrUnexpectedEOF for an input that ends inside a
// frame, else err.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// putHeader writes a frame's header into b (headerLen bytes).
func putHeader(b []byte, meta, data int) {
	copy(b, frameMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(meta))
	binary.LittleEndian.PutUint32(b[8:], uint32(data))
}
