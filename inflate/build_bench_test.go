package inflate

import (
	"bytes"
	"testing"
)

// BenchmarkBuildTables times building the three tables of a typical
// dynamic block header (of noisy float32 data), which happens once per
// block (compress/flate makes a block per 16K symbols).
func BenchmarkBuildTables(b *testing.B) {
	comp := deflate(b, noisyFloat32(1<<20, 3), 6)
	d := newDecoder()
	d.resetStream(bytes.NewReader(comp))
	d.out = make([]byte, 64)
	if err := d.readHeader(); err != nil {
		b.Fatal(err)
	}
	start := d.blockBit
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.resetStream(bytes.NewReader(comp))
		d.bits, d.nb = 0, 0
		_ = start
		if err := d.readHeader(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildPairs times building the pair table huffLoop decodes
// through, for the same block: on amd64 this too happens once per block.
func BenchmarkBuildPairs(b *testing.B) {
	comp := deflate(b, noisyFloat32(1<<20, 3), 6)
	d := newDecoder()
	d.resetStream(bytes.NewReader(comp))
	if err := d.readHeader(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		d.buildPairs()
	}
}
