package inflate

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

func FuzzInflate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0})
	f.Add(deflate(f, nil, 6))
	f.Add(deflate(f, []byte("hello, hello, hello world"), 9))
	f.Add(deflate(f, mixed(3000, 4), 6))
	f.Add(deflate(f, mixed(3000, 5), flate.HuffmanOnly))
	f.Add(deflate(f, mixed(3000, 6), flate.NoCompression))
	f.Add(deflate(f, make([]byte, 5000), 1))
	f.Add(deflate(f, intRamp(2000), 9))
	f.Add(deflate(f, intRamp(300<<10), 6)) // long enough for the parallel pass
	for _, c := range adversarialStreams() {
		f.Add(c.s)
	}
	f.Fuzz(func(t *testing.T, comp []byte) {
		want, ok := agree(t, comp)
		if !ok {
			// The parallel pass, and the sequential pass it falls back
			// on, find the stream bad.
			bad := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), 1<<20, 0, nil)
			if _, err := bad.indexAllParallel(context.Background(), 3, max(1, int64(len(comp))/6)); err == nil {
				t.Fatal("the parallel pass accepted a bad stream")
			}
			return
		}
		if len(want) > 4<<20 {
			return
		}
		span := max(64, int64(len(want)/128))
		crc := crc32.ChecksumIEEE(want)
		ra := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(want)), crc, &Options{SpanSize: span, Cache: NewCache(4 * span)})
		// Read back to front in uneven pieces, then the whole.
		size := int64(len(want))
		for off := size; off > 0; {
			n := min(off, 1+off%977)
			off -= n
			p := make([]byte, n)
			got, err := ra.ReadAt(p, off)
			if (err != nil && err != io.EOF) || got != int(n) || !bytes.Equal(p, want[off:off+n]) {
				t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, got, err)
			}
		}
		p := make([]byte, size+1)
		if got, err := ra.ReadAt(p, 0); got != int(size) || err != io.EOF || !bytes.Equal(p[:got], want) {
			t.Fatalf("whole ReadAt = %d, %v", got, err)
		}
		// The parallel pass (in chunks of a sixth of the stream) indexes
		// it as well, or leaves it to the sequential pass.
		par := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), size, crc, &Options{SpanSize: span})
		if _, err := par.indexAllParallel(context.Background(), 3, max(1, int64(len(comp))/6)); err != nil {
			t.Fatalf("parallel pass: %v", err)
		}
		if got, err := par.ReadAt(p, 0); got != int(size) || err != io.EOF || !bytes.Equal(p[:got], want) {
			t.Fatalf("whole ReadAt after the parallel pass = %d, %v", got, err)
		}
		// With helpers (in chunks of a sixth of the stream): the last
		// byte first, then the whole.
		hr := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), size, crc, &Options{SpanSize: span, Helpers: 2, HelperBudget: NewHelperBudget(2)})
		hr.front.helpChunk = max(1, int64(len(comp))/6)
		if size > 0 {
			if got, err := hr.ReadAt(p[:1], size-1); got != 1 || (err != nil && err != io.EOF) || p[0] != want[size-1] {
				t.Fatalf("last byte with helpers: %d, %v", got, err)
			}
		}
		if got, err := hr.ReadAt(p, 0); got != int(size) || err != io.EOF || !bytes.Equal(p[:got], want) {
			t.Fatalf("whole ReadAt with helpers = %d, %v", got, err)
		}
		hr.Release()
		// A wrong CRC is caught when the end is reached.
		if size > 0 {
			bad := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), size, crc^0x80, &Options{SpanSize: span})
			if _, err := bad.ReadAt(p, 0); err == nil || err == io.EOF {
				t.Fatalf("CRC mismatch not reported: %v", err)
			}
		}
	})
}

// FuzzLoadIndex: whatever bytes an index file holds, LoadIndex refuses
// them, or every read gives the stream's bytes or fails, after right
// bytes, with an error in the stream: never a wrong byte. (A lying index
// whose checksums hold is evidence the stream is damaged, see
// ErrDamaged; one caught by its own checks is discarded.) Nothing
// panics.
func FuzzLoadIndex(f *testing.F) {
	data := mixed(400_000, 8)
	comp := deflate(f, data, 6)
	crc := crc32.ChecksumIEEE(data)
	const span = 32 << 10
	r := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
	if _, err := r.ReadAt(make([]byte, len(data)), 0); err != nil && err != io.EOF {
		f.Fatal(err)
	}
	idx, ok := r.MarshalIndex()
	if !ok {
		f.Fatal("no index")
	}
	f.Add(idx)
	f.Add(idx[:indexHeader+indexRecord])
	half := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
	if _, err := half.ReadAt(make([]byte, 10), int64(len(data))/2); err != nil {
		f.Fatal(err)
	}
	part, ok := half.MarshalPartialIndex(2)
	if !ok {
		f.Fatal("no partial index")
	}
	f.Add(part)
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Mutated checkpoints must pass the header's checksum to be
		// looked at: recompute it, as a forger would.
		if len(b) >= indexHeader && string(b[:8]) == indexMagic {
			n := int(binary.LittleEndian.Uint32(b[36:]))
			if n > 0 && n <= (len(b)-indexHeader)/indexRecord {
				b = resum(b)
			}
		}
		ra := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc, &Options{SpanSize: span})
		if err := ra.LoadIndex(bytes.NewReader(b), int64(len(b))); err != nil {
			return
		}
		for _, off := range []int64{int64(len(data)) - 1000, 0, 123_456, 300_000} {
			p := make([]byte, 1000)
			n, err := ra.ReadAt(p, off)
			if !bytes.Equal(p[:n], data[off:off+int64(n)]) {
				t.Fatalf("ReadAt(1000 at %d) = %d, %v: wrong bytes from an index LoadIndex took", off, n, err)
			}
			if n != len(p) && !errors.Is(err, ErrDamaged) && !isStreamError(err) {
				t.Fatalf("ReadAt(1000 at %d) = %d, %v: not the stream's error", off, n, err)
			}
		}
	})
}
