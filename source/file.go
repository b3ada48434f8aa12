package source

import (
	"context"
	"fmt"
	"os"
	"time"
)

// File is a local file as a source. Every read first checks that the
// file's size and modification time are those it had when opened, and
// fails with an error wrapping ErrChanged once they differ. It is safe for
// concurrent use.
type File struct {
	f       *os.File
	name    string
	size    int64
	modTime time.Time
	id      string // FileIdentity when opened
}

// OpenFile opens the regular file at path.
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return &File{f: f, name: path, size: fi.Size(), modTime: fi.ModTime(), id: FileIdentity(fi)}, nil
}

// Size is the file's size when it was opened.
func (s *File) Size() int64 { return s.size }

// ModTime is the file's modification time when it was opened.
func (s *File) ModTime() time.Time { return s.modTime }

// Identity is the file's identity when it was opened (FileIdentity): the
// same for two opens of one file, another for a file renamed over it.
func (s *File) Identity() string { return s.id }

// String is the path the file was opened by.
func (s *File) String() string { return s.name }

// Check reports an error wrapping ErrChanged once the file's size or
// modification time differs from what it was when opened. It runs
// before every read (see stat).
func (s *File) Check() error {
	size, mtime, err := s.stat()
	if err != nil {
		return err
	}
	if size == s.size && mtime.Equal(s.modTime) {
		return nil
	}
	return &ChangedError{Was: s.size, Now: size}
}

// ReadAt checks the file (see Check), then reads it.
func (s *File) ReadAt(p []byte, off int64) (int, error) {
	if err := s.Check(); err != nil {
		return 0, err
	}
	return s.f.ReadAt(p, off)
}

// ReadAtContext is ReadAt; a local read is not interrupted, but one whose
// ctx is already done is not started.
func (s *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.ReadAt(p, off)
}

// FileExtent is the file's descriptor: the source's bytes are the file's.
func (s *File) FileExtent() (fd uintptr, base int64) { return s.f.Fd(), 0 }

// Close closes the file.
func (s *File) Close() error { return s.f.Close() }

// ChangedError is a source found changed since it was opened. It wraps
// ErrChanged.
type ChangedError struct {
	Was, Now int64 // sizes when opened and now (-1 where unknown)
	Detail   string
}

func (e *ChangedError) Error() string {
	msg := "the archive changed after it was opened"
	switch {
	case e.Was < 0 || e.Now < 0:
	case e.Now > e.Was:
		msg += fmt.Sprintf(": it grew from %d to %d bytes (appended to, or rewritten)", e.Was, e.Now)
	case e.Now < e.Was:
		msg += fmt.Sprintf(": it shrank from %d to %d bytes (truncated, or rewritten)", e.Was, e.Now)
	default:
		msg += fmt.Sprintf(": same size (%d bytes), new modification time (rewritten or touched)", e.Now)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *ChangedError) Unwrap() error { return ErrChanged }
