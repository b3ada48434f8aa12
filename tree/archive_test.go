//go:build linux

package tree

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/npz"
)

// TestArchiveErrno: what npz reports of a member it cannot read reaches
// the kernel as EIO.
func TestArchiveErrno(t *testing.T) {
	for _, err := range []error{
		&npz.MethodError{Name: "a.npy", Method: 12},
		fmt.Errorf("open: %w", &npz.MethodError{Name: "a.npy", Encrypted: true}),
		&npz.FormatError{Offset: 10, Msg: "bad local header"},
	} {
		if got := fs.Errno(err); got != syscall.EIO {
			t.Errorf("Errno(%v) = %v, want EIO", err, got)
		}
	}
}
