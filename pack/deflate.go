package pack

import (
	"bytes"

	"github.com/klauspost/compress/flate"
)

// level is the deflate level chunks are compressed at: klauspost's level
// 6, which on numpy-like data is several times as fast as zlib's level 6
// for about the same size (the commit that chose it has the figures).
const level = 6

// fullFlush is the empty stored block a full flush adds after a sync
// flush's (the byte holding its 3 header bits, then LEN 0 and NLEN): a
// SOZip chunk ends with both, and starts afresh, from an empty window.
var fullFlush = []byte{0, 0, 0, 0xff, 0xff}

// compressor deflates chunks, each alone: a SOZip chunk is a deflate
// stream of its own but for its end, which is a sync flush and a full
// flush (or, for a member's last chunk, the final block), so chunks
// compressed apart make one stream when put end to end, as if one
// compressor had flushed at every chunk.
type compressor struct {
	w, huff *flate.Writer
	alt     bytes.Buffer
}

func newCompressor() *compressor {
	w, _ := flate.NewWriter(nil, level) // a valid level: no error
	huff, _ := flate.NewWriter(nil, flate.HuffmanOnly)
	return &compressor{w: w, huff: huff}
}

// chunk deflates p into dst, which it resets. When level 6 saves less
// than 1/32 (klauspost's fast levels store what they find no match in,
// where Huffman coding alone still saves some of noise's bytes), Huffman
// coding alone is tried too, and the shorter kept.
func (c *compressor) chunk(dst *bytes.Buffer, p []byte, last bool) {
	deflate(c.w, dst, p, last)
	if dst.Len() > len(p)-len(p)/32 {
		deflate(c.huff, &c.alt, p, last)
		if c.alt.Len() < dst.Len() {
			dst.Reset()
			dst.Write(c.alt.Bytes())
		}
	}
}

// deflate compresses p alone with w into dst, which it resets.
func deflate(w *flate.Writer, dst *bytes.Buffer, p []byte, last bool) {
	dst.Reset()
	w.Reset(dst)
	w.Write(p) // into a bytes.Buffer: no error
	if last {
		w.Close()
		return
	}
	w.Flush()
	dst.Write(fullFlush)
}
