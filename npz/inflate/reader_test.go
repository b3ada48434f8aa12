package inflate

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestNewReaderShortReads feeds the compressed stream a byte or a few at a
// time and reads the output in odd sizes.
func TestNewReaderShortReads(t *testing.T) {
	data := mixed(300000, 51)
	for _, lvl := range []int{0, 1, 6, -2} {
		comp := deflate(t, data, lvl)
		for name, r := range map[string]io.Reader{
			"onebyte": iotest.OneByteReader(bytes.NewReader(comp)),
			"half":    iotest.HalfReader(bytes.NewReader(comp)),
			"dataerr": iotest.DataErrReader(bytes.NewReader(comp)),
		} {
			zr := NewReader(r)
			var out []byte
			buf := make([]byte, 777)
			for {
				n, err := zr.Read(buf)
				out = append(out, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("level %d %s: %v", lvl, name, err)
				}
			}
			if !bytes.Equal(out, data) {
				t.Fatalf("level %d %s: output differs", lvl, name)
			}
		}
	}
}

func TestNewReaderErrors(t *testing.T) {
	comp := deflate(t, mixed(100000, 52), 6)
	// A read error from the source is passed on.
	errBoom := errors.New("boom")
	r := NewReader(io.MultiReader(bytes.NewReader(comp[:len(comp)/2]), iotest.ErrReader(errBoom)))
	if _, err := io.ReadAll(r); !errors.Is(err, errBoom) {
		t.Fatalf("source error: got %v", err)
	}
	// Truncation is io.ErrUnexpectedEOF.
	if _, err := io.ReadAll(NewReader(bytes.NewReader(comp[:len(comp)-3]))); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated: got %v", err)
	}
	// Corruption is a *CorruptError with an offset inside the stream.
	bad := []byte{0x07, 0, 0} // final block of reserved type 3
	_, err := io.ReadAll(NewReader(bytes.NewReader(bad)))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > int64(len(bad)) {
		t.Fatalf("corrupt: got %v", err)
	}
	// Errors repeat.
	r = NewReader(bytes.NewReader(bad))
	io.ReadAll(r)
	if _, err2 := r.Read(make([]byte, 10)); !errors.As(err2, &ce) {
		t.Fatalf("second read after corruption: %v", err2)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestNewReaderHeaderIsCheap: reading the first bytes of a long stream
// reads only a little of it.
func TestNewReaderHeaderIsCheap(t *testing.T) {
	data := noisyFloat32(1<<20, 61)
	comp := deflate(t, data, 6)
	cr := &countingReader{r: bytes.NewReader(comp)}
	head := make([]byte, 128)
	if _, err := io.ReadFull(NewReader(cr), head); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(head, data[:128]) {
		t.Fatal("wrong header bytes")
	}
	if cr.n > 16<<10 {
		t.Fatalf("read %d compressed bytes for a 128-byte header", cr.n)
	}
}
