package inflate

import (
	"errors"
	"io"
	"sync"
)

const streamChunk = 256 << 10

// streamBufs are the output buffers of stream readers, reused after Close.
var streamBufs = sync.Pool{New: func() any {
	b := make([]byte, windowSize+streamChunk+outSlack)
	return &b
}}

var errClosed = errors.New("inflate: read after Close")

// NewReader returns a streaming inflater over a raw DEFLATE stream. It
// reads r in large blocks, so it may read past the end of the stream.
// Invalid data is reported as *CorruptError and a stream cut short as
// io.ErrUnexpectedEOF; read errors from r are passed on. Close gives its
// decoder and buffers (about 350 KB) back for the next reader: reading a
// few hundred bytes of many streams (npy headers) then costs no more.
func NewReader(r io.Reader) io.ReadCloser {
	d := decoders.Get().(*decoder)
	d.resetStream(r)
	buf := streamBufs.Get().(*[]byte)
	d.out = *buf
	return &streamReader{d: d, buf: buf}
}

// Close releases the reader's decoder and buffers; reads after it fail.
func (s *streamReader) Close() error {
	if s.d == nil {
		return nil
	}
	s.d.r, s.d.out = nil, nil
	decoders.Put(s.d)
	streamBufs.Put(s.buf)
	s.d, s.buf, s.err = nil, nil, errClosed
	return nil
}

type streamReader struct {
	d    *decoder
	buf  *[]byte
	rpos int // d.out[rpos:d.pos] is inflated but not yet returned
	err  error
}

func (s *streamReader) Read(p []byte) (int, error) {
	if s.d == nil {
		return 0, errClosed
	}
	for {
		if s.rpos < s.d.pos {
			n := copy(p, s.d.out[s.rpos:s.d.pos])
			s.rpos += n
			return n, nil
		}
		if s.err != nil {
			return 0, s.err
		}
		// Inflate about as much as asked for (at least 4 KiB), so reading
		// just the first bytes of a stream is cheap.
		s.inflate(max(len(p), 4<<10))
	}
}

// WriteTo implements io.WriterTo, so io.Copy writes the inflated bytes
// from the reader's own buffer, a chunk at a time, without copying them
// into one of its own first.
func (s *streamReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if s.d == nil {
			return total, errClosed
		}
		if s.rpos < s.d.pos {
			n, err := w.Write(s.d.out[s.rpos:s.d.pos])
			s.rpos += n
			total += int64(n)
			if err == nil && s.rpos < s.d.pos {
				err = io.ErrShortWrite
			}
			if err != nil {
				return total, err
			}
			continue
		}
		if s.err == io.EOF {
			return total, nil
		}
		if s.err != nil {
			return total, s.err
		}
		s.inflate(streamChunk)
	}
}

// inflate inflates about want more bytes into d.out[s.rpos:], once all
// before were returned, sliding the window to the buffer's start when
// the buffer is full; the stream's end or error goes to s.err.
func (s *streamReader) inflate(want int) {
	d := s.d
	if d.state == stDone {
		s.err = io.EOF
		return
	}
	target := len(d.out) - outSlack
	if d.pos >= target {
		shift := d.pos - windowSize
		copy(d.out, d.out[shift:d.pos])
		d.pos = windowSize
		d.minPos = max(0, d.minPos-shift)
		s.rpos = d.pos
	}
	target = min(target, d.pos+want)
	if err := d.decode(target); err != nil {
		s.err = err
	}
}
