package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileNoticesChanges: a File reads until the file's size or time
// changes, then fails every read with an error wrapping ErrChanged that
// says what happened to it.
func TestFileNoticesChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(path string) error
		want   string
	}{
		{"appended", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("more")
			return err
		}, "grew from 10 to 14 bytes (appended to, or rewritten)"},
		{"truncated", func(p string) error { return os.Truncate(p, 4) }, "shrank from 10 to 4 bytes"},
		{"touched", func(p string) error {
			return os.Chtimes(p, time.Now(), time.Now().Add(time.Hour))
		}, "same size (10 bytes), new modification time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a")
			if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			id := f.Identity()
			buf := make([]byte, 4)
			if n, err := ReadAt(context.Background(), f, buf, 2); n != 4 || err != nil || string(buf) != "2345" {
				t.Fatalf("read before the change: %d, %v, %q", n, err, buf)
			}
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			_, err = f.ReadAt(buf, 0)
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("read after the change: %v; want ErrChanged saying %q", err, tc.want)
			}
			if err := f.Check(); !errors.Is(err, ErrChanged) {
				t.Errorf("Check after the change: %v", err)
			}
			if f.Identity() != id {
				t.Error("the identity moved with the file: it must stay what it was at open")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), "b")
	os.WriteFile(path, []byte("x"), 0o644)
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ReadAt(ctx, f, make([]byte, 1), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("read with a done context: %v", err)
	}
	if _, err := OpenFile(t.TempDir()); err == nil {
		t.Error("OpenFile of a folder succeeded")
	}
}

// TestSection: a section reads its bytes of its source, io.EOF where it
// ends, and passes a read's context on.
func TestSection(t *testing.T) {
	data := []byte("0123456789")
	s := NewSection(bytes.NewReader(data), 2, 5)
	b := make([]byte, 4)
	if n, err := s.ReadAt(b, 0); n != 4 || err != nil || string(b) != "2345" {
		t.Errorf("ReadAt(0): %d %v %q", n, err, b)
	}
	if n, err := s.ReadAt(b, 3); n != 2 || err != io.EOF || string(b[:n]) != "56" {
		t.Errorf("ReadAt(3): %d %v %q", n, err, b[:n])
	}
	if n, err := s.ReadAt(b, 5); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(5): %d %v", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ReadAtContext(ctx, b, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a read whose context is done: %v", err)
	}
}
