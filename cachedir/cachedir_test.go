package cachedir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestPutGetRemove(t *testing.T) {
	d, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.trimmed.Wait() // the folder listed: the books are Put's alone now
	if err := d.Put("g/a", []byte("alpha")); err != nil {
		t.Fatal(err)
	}
	if err := d.Put("b", []byte("beta")); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Get("g/a"); err != nil || string(b) != "alpha" {
		t.Fatalf("Get(g/a) = %q, %v", b, err)
	}
	if d.Used() != 9 {
		t.Fatalf("Used = %d, want 9", d.Used())
	}
	d.Remove("g/a")
	if _, err := d.Get("g/a"); !os.IsNotExist(err) {
		t.Fatalf("removed file: %v", err)
	}
	if d.Used() != 4 {
		t.Fatalf("Used = %d after Remove, want 4", d.Used())
	}
	// A second Dir on the folder sees what the first wrote.
	d2, err := Open(d.Path(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	d2.trimmed.Wait() // the folder listed
	if b, err := d2.Get("b"); err != nil || string(b) != "beta" || d2.Used() != 4 {
		t.Fatalf("second Dir: %q, %v, used %d", b, err, d2.Used())
	}
}

func TestLeastRecentlyUsedGoFirst(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := range 8 {
		name := fmt.Sprintf("g%d/f", i%2) + fmt.Sprint(i)
		if err := d.Put(name, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatal(err)
		}
		// Older files first, a second apart.
		at := old.Add(time.Duration(i) * time.Second)
		os.Chtimes(filepath.Join(dir, name), at, at)
	}
	d.Close()
	d, err = Open(dir, 10_000) // rescans the times set above
	if err != nil {
		t.Fatal(err)
	}
	d.trimmed.Wait()
	if _, err := d.Get("g0/f0"); err != nil { // the oldest, used now
		t.Fatal(err)
	}
	for i := range 4 {
		d.Put(fmt.Sprintf("new/n%d", i), make([]byte, 1000))
	}
	d.Close()
	// 12,000 bytes were written for a bound of 10,000: trimmed, the
	// least recently used first: f1 and f2 at least (f0 was read; f3
	// too, when the trim ran once all was written).
	for _, name := range []string{"g1/f1", "g0/f2"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s kept: %v", name, err)
		}
	}
	for _, name := range []string{"g0/f0", "g0/f4", "g1/f7", "new/n3"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s gone: %v", name, err)
		}
	}
	if d.Used() > 10_000 {
		t.Errorf("Used = %d, want at most 10,000", d.Used())
	}
}

func TestStaleTemporaryFilesGo(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "g"), 0o700)
	stale := filepath.Join(dir, "g", tempPrefix+"crash")
	fresh := filepath.Join(dir, "g", tempPrefix+"writing")
	os.WriteFile(stale, []byte("x"), 0o600)
	os.WriteFile(fresh, []byte("x"), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	d, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.trimmed.Wait() // the folder listed
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a file being written was removed: %v", err)
	}
	if d.Used() != 0 {
		t.Errorf("temporary files counted: Used = %d", d.Used())
	}
}

func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := range 4 {
		d, err := Open(dir, 50_000)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.Close()
			for i := range 100 {
				name := fmt.Sprintf("g%d/f%d", i%3, i)
				data := bytes.Repeat([]byte{byte(i)}, 1000)
				if err := d.Put(name, data); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				// Whatever is there is whole: some writer's 1,000 bytes of i.
				if b, err := d.Get(name); err == nil && !bytes.Equal(b, data) {
					t.Errorf("writer %d: %s holds %d bytes, not whole", w, name, len(b))
				}
			}
		}()
	}
	wg.Wait()
}

// failingWriter writes part of a file, then fails.
type failingWriter struct{ part []byte }

func (f failingWriter) WriteTo(w io.Writer) (int64, error) {
	n, _ := w.Write(f.part)
	return int64(n), errors.New("the source failed")
}

// TestPutFrom: what a WriterTo writes is stored whole and counted; one
// that fails part way stores nothing, and leaves no temporary file.
func TestPutFrom(t *testing.T) {
	d, err := Open(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.trimmed.Wait()
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // past the write buffer
	if err := d.PutFrom("g/big", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Get("g/big"); err != nil || !bytes.Equal(b, big) || d.Used() != int64(len(big)) {
		t.Fatalf("g/big: %d bytes, %v, used %d; want %d", len(b), err, d.Used(), len(big))
	}
	if err := d.PutFrom("g/half", failingWriter{big}); err == nil {
		t.Fatal("a failing source stored")
	}
	if d.Has("g/half") || d.Used() != int64(len(big)) {
		t.Errorf("a failed PutFrom left a file (used %d)", d.Used())
	}
	ents, _ := os.ReadDir(filepath.Join(d.Path(), "g"))
	if len(ents) != 1 {
		t.Errorf("the group folder holds %d files, want 1", len(ents))
	}
}
