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

// TestNewReaderWriteTo: io.Copy through WriteTo gives the stream's bytes,
// passes the source's errors, truncation and corruption on as Read does,
// and stops at a writer's error or short write.
func TestNewReaderWriteTo(t *testing.T) {
	data := mixed(900000, 53)
	for _, lvl := range []int{0, 1, 6, -2} {
		comp := deflate(t, data, lvl)
		var out bytes.Buffer
		n, err := io.Copy(&out, NewReader(iotest.HalfReader(bytes.NewReader(comp))))
		if err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("level %d: copied %d bytes, %v; equal %v", lvl, n, err, bytes.Equal(out.Bytes(), data))
		}
	}
	comp := deflate(t, data, 6)
	errBoom := errors.New("boom")
	if _, err := io.Copy(io.Discard, NewReader(io.MultiReader(bytes.NewReader(comp[:len(comp)/2]), iotest.ErrReader(errBoom)))); !errors.Is(err, errBoom) {
		t.Errorf("source error: got %v", err)
	}
	if _, err := io.Copy(io.Discard, NewReader(bytes.NewReader(comp[:len(comp)-3]))); err != io.ErrUnexpectedEOF {
		t.Errorf("truncated: got %v", err)
	}
	var ce *CorruptError
	if _, err := io.Copy(io.Discard, NewReader(bytes.NewReader([]byte{0x07, 0, 0}))); !errors.As(err, &ce) {
		t.Errorf("corrupt: got %v", err)
	}
	if n, err := io.Copy(shortWriter{}, NewReader(bytes.NewReader(comp))); err != io.ErrShortWrite || n != 1 {
		t.Errorf("short writer: %d, %v", n, err)
	}
	// A read after WriteTo stopped at a writer's error goes on from there.
	r := NewReader(bytes.NewReader(comp))
	n, _ := io.Copy(shortWriter{}, r)
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(append(data[:n:n], rest...), data) {
		t.Errorf("read after a short write: %d + %d bytes, %v", n, len(rest), err)
	}
}

// shortWriter takes one byte of each write.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return min(len(p), 1), nil }

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

// TestCopyMatch: every distance up to 40 and length from 3 to 258 copies
// as deflate's byte-by-byte definition does, writing nothing before pos and
// at most 15 bytes past the match.
func TestCopyMatch(t *testing.T) {
	for dist := 1; dist <= 40; dist++ {
		for length := 3; length <= 258; length++ {
			const pos = 100
			out := make([]byte, pos+length+outSlack)
			for i := range out {
				out[i] = byte(i*7 + 3)
			}
			want := bytes.Clone(out)
			for i := 0; i < length; i++ {
				want[pos+i] = want[pos-dist+i]
			}
			copyMatch(out, pos, dist, length)
			if !bytes.Equal(out[:pos+length], want[:pos+length]) {
				t.Fatalf("dist %d length %d: wrong bytes", dist, length)
			}
			if !bytes.Equal(out[pos+length+15:], want[pos+length+15:]) {
				t.Fatalf("dist %d length %d: wrote more than 15 bytes past the match", dist, length)
			}
		}
	}
}

// TestEveryShortMatch decodes a fixed-Huffman stream, written here, that
// holds a match of every length from 3 to 40 at every distance from 1 to
// 40, each after one to three literals: the decoding loop copies such
// matches inline, by cases of length and distance, and each case must
// give compress/flate's bytes.
func TestEveryShortMatch(t *testing.T) {
	var w bitWriter
	w.bits(1, 1) // final
	w.bits(1, 2) // fixed Huffman codes
	var want []byte
	lit := func(b byte) {
		w.fixedLit(int(b))
		want = append(want, b)
	}
	for i := 0; i < 64; i++ {
		lit(byte(i*37 + 11))
	}
	n := 0
	for length := 3; length <= 40; length++ {
		for dist := 1; dist <= 40; dist++ {
			for k := 0; k <= n%3; k++ {
				lit(byte(n*13 + k*101))
			}
			n++
			fixedMatch(&w, length, dist)
			for i := 0; i < length; i++ {
				want = append(want, want[len(want)-dist])
			}
		}
	}
	w.fixedLit(256)
	comp := w.bytes()
	if std, err := stdInflate(comp); err != nil || !bytes.Equal(std, want) {
		t.Fatalf("compress/flate does not read the stream as written (%v): the test's writer is wrong", err)
	}
	got, err := ourInflate(comp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%d bytes, want %d; first difference at %d", len(got), len(want), i)
	}
}

// fixedMatch writes a length and a distance with the fixed codes.
func fixedMatch(w *bitWriter, length, dist int) {
	i := len(lengthBase) - 1
	for int(lengthBase[i]) > length {
		i--
	}
	w.fixedLit(257 + i)
	w.bits(uint64(length-int(lengthBase[i])), uint(lengthExtra[i]))
	j := len(distBase) - 1
	for int(distBase[j]) > dist {
		j--
	}
	w.code(uint32(j), 5)
	w.bits(uint64(dist-int(distBase[j])), uint(distExtra[j]))
}
