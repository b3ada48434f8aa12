package pack

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOutput: bytes written again in place land where they were, in the
// buffer or in the file or across both; a truncation drops what follows
// wherever it is; commit leaves the file whole at its destination and
// nothing else.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "out")
	o, err := create(dest)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	write := func(p []byte) {
		if _, err := o.Write(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}
	at := func(p []byte, off int64) {
		if err := o.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], p)
	}
	write(bytes.Repeat([]byte("a"), 100))
	at([]byte("head"), 0) // in the buffer
	write(bytes.Repeat([]byte("b"), outBuf))
	write([]byte("tail"))
	at([]byte("HEAD"), 0) // in the file
	at([]byte("across"), int64(len(want))-2-int64(len("across")))
	at([]byte("spans"), 100+outBuf-2) // the file and the buffer
	if err := o.WriteAt([]byte("past"), int64(len(want))-1); err == nil {
		t.Error("a rewrite past the end accepted")
	}
	if err := o.Truncate(50); err != nil { // into the file
		t.Fatal(err)
	}
	want = want[:50]
	write([]byte("after"))
	if err := o.Truncate(52); err != nil { // into the buffer
		t.Fatal(err)
	}
	want = want[:52]
	write(bytes.Repeat([]byte("c"), 3*outBuf))
	if n, err := o.commit(); err != nil || n != int64(len(want)) {
		t.Fatalf("commit: %d bytes, %v", n, err)
	}
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%d bytes written, %d wanted, %v", len(got), len(want), err)
	}
	noTemporaries(t, dir)
}
