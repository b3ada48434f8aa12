package inflate

import "io"

const streamChunk = 256 << 10

// NewReader returns a streaming inflater over a raw DEFLATE stream. It
// reads r in large blocks, so it may read past the end of the stream.
// Invalid data is reported as *CorruptError and a stream cut short as
// io.ErrUnexpectedEOF; read errors from r are passed on.
func NewReader(r io.Reader) io.Reader {
	d := newDecoder()
	d.resetStream(r)
	d.out = make([]byte, windowSize+streamChunk+outSlack)
	return &streamReader{d: d}
}

type streamReader struct {
	d    *decoder
	rpos int // d.out[rpos:d.pos] is inflated but not yet returned
	err  error
}

func (s *streamReader) Read(p []byte) (int, error) {
	d := s.d
	for {
		if s.rpos < d.pos {
			n := copy(p, d.out[s.rpos:d.pos])
			s.rpos += n
			return n, nil
		}
		if s.err != nil {
			return 0, s.err
		}
		if d.state == stDone {
			s.err = io.EOF
			continue
		}
		target := len(d.out) - outSlack
		if d.pos >= target {
			shift := d.pos - windowSize
			copy(d.out, d.out[shift:d.pos])
			d.pos = windowSize
			d.minPos = max(0, d.minPos-shift)
			s.rpos = d.pos
		}
		// Inflate about as much as asked for (at least 4 KiB), so reading
		// just the first bytes of a stream is cheap.
		target = min(target, d.pos+max(len(p), 4<<10))
		if err := d.decode(target); err != nil {
			s.err = err
		}
	}
}
