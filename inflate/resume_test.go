package inflate

import (
	"bytes"
	"compress/flate"
	"context"
	"testing"
)

// TestResumeEveryCheckpoint inflates every span straight from its
// checkpoint (packed window and all) and checks it against a full inflate,
// and checks that checkpoints fall inside blocks, not only between them.
func TestResumeEveryCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  []byte
		level int
	}{
		{"zeros", make([]byte, 2<<20), 9}, // one block covers megabytes
		{"mixed", mixed(1<<20, 41), 6},
		{"ramp", intRamp(1 << 20), 1},
		{"stored", mixed(400000, 42), flate.NoCompression},
		{"huffman-only", noisyFloat32(400000, 43), flate.HuffmanOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comp := deflate(t, tc.data, tc.level)
			const span = 4096
			ra := newRA(tc.data, comp, span, NewCache(1))
			size := int64(len(tc.data))
			if _, err := ra.ReadAt(make([]byte, 1), size-1); err == nil {
				t.Fatal("read of the last byte did not report io.EOF")
			}
			cps := ra.checkpoints()
			done := ra.Progress().Complete
			if !done {
				t.Fatal("index not complete after reading the last byte")
			}
			var midHuff, midStored int
			for k, cp := range cps {
				end := size
				if k+1 < len(cps) {
					end = cps[k+1].out
				}
				if k > 0 {
					if d := end - cp.out; k+1 < len(cps) && (d < span || d > span+258) {
						t.Errorf("span %d is %d bytes", k, d)
					}
				}
				switch cp.state {
				case stHuff:
					midHuff++
					if cp.block >= cp.bit {
						t.Errorf("checkpoint %d: block header %d not before symbol %d", k, cp.block, cp.bit)
					}
				case stStored:
					midStored++
				}
				win, err := ra.ix.windowOf(context.Background(), &cp)
				if err != nil {
					t.Fatalf("span %d: window: %v", k, err)
				}
				got, err := ra.inflateSpan(context.Background(), &cp, win, end, end, nil)
				if err != nil {
					t.Fatalf("span %d: %v", k, err)
				}
				if !bytes.Equal(got.data, tc.data[cp.out:end]) {
					t.Fatalf("span %d [%d, %d) differs after resume", k, cp.out, end)
				}
				ra.cache.release(got)
				// A prefix, as a small read inflates it.
				if mid := cp.out + (end-cp.out)/3 + 1; mid < end {
					pre, err := ra.inflateSpan(context.Background(), &cp, win, end, mid, nil)
					if err != nil {
						t.Fatalf("span %d prefix: %v", k, err)
					}
					if int64(len(pre.data)) < mid-cp.out || !bytes.Equal(pre.data, tc.data[cp.out:cp.out+int64(len(pre.data))]) {
						t.Fatalf("span %d: prefix to %d wrong (%d bytes)", k, mid, len(pre.data))
					}
					ra.cache.release(pre)
				}
			}
			switch tc.level {
			case flate.NoCompression:
				if midStored == 0 {
					t.Error("no checkpoint inside a stored block")
				}
			default:
				if midHuff < len(cps)/2 {
					t.Errorf("only %d of %d checkpoints inside Huffman blocks", midHuff, len(cps))
				}
			}
			cpsN, win := ra.IndexStats()
			t.Logf("%d checkpoints, %d window bytes for %d bytes (%d compressed)", cpsN, win, size, len(comp))
		})
	}
}
