//go:build linux

package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"syscall"
	"testing"
)

var (
	errEOF     = io.EOF
	errCorrupt = errors.New("npz: corrupt member (at byte 12)")
)

func TestErrno(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"nil", nil, 0},
		{"errno passes", syscall.EACCES, syscall.EACCES},
		{"wrapped errno", fmt.Errorf("reading member: %w", syscall.ENOSPC), syscall.ENOSPC},
		{"path error", &os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, syscall.EMFILE},
		{"zero errno", syscall.Errno(0), syscall.EIO},
		{"ENOSYS never", syscall.ENOSYS, syscall.EIO},
		{"canceled", context.Canceled, syscall.EINTR},
		{"wrapped canceled", fmt.Errorf("inflate: %w", context.Canceled), syscall.EINTR},
		{"deadline", context.DeadlineExceeded, syscall.EIO},
		{"wrapped deadline", fmt.Errorf("remote: gave up after 2s: %w", context.DeadlineExceeded), syscall.EIO},
		{"not exist", iofs.ErrNotExist, syscall.ENOENT},
		{"permission", fmt.Errorf("x: %w", iofs.ErrPermission), syscall.EACCES},
		{"unknown", errCorrupt, syscall.EIO},
		{"EOF", io.EOF, syscall.EIO},
		{"unexpected EOF", io.ErrUnexpectedEOF, syscall.EIO},
	}
	for _, c := range cases {
		if got := Errno(c.err); got != c.want {
			t.Errorf("%s: Errno(%v) = %v (%d), want %v (%d)", c.name, c.err, got, got, c.want, c.want)
		}
	}
}
