package inflate

import (
	"bytes"
	"compress/flate"
	"testing"
)

func TestQuick(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("a"), mixed(300000, 1), noisyFloat32(200000, 3), intRamp(300000), make([]byte, 500000)} {
		for _, lvl := range []int{flate.HuffmanOnly, flate.NoCompression, 1, 6, 9} {
			comp := deflate(t, data, lvl)
			got, err := ourInflate(comp)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("lvl %d len %d: err %v eq %v", lvl, len(data), err, bytes.Equal(got, data))
			}
		}
	}
}
