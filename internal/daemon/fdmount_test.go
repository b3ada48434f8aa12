//go:build linux

package daemon

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckHanded: /dev/fd/N must name a descriptor passed open on the
// FUSE device. One this process opened itself (as the Go runtime does
// before main) was not passed, whatever it is open on.
func TestCheckHanded(t *testing.T) {
	own, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if err := CheckHanded(int(own.Fd())); err == nil || !strings.Contains(err.Error(), "was not passed") {
		t.Errorf("a descriptor of this process: %v", err)
	}
	if err := CheckHanded(999); err == nil || !strings.Contains(err.Error(), "was not passed") {
		t.Errorf("a closed descriptor: %v", err)
	}
	// As if passed: close-on-exec cleared.
	if _, err := unix.FcntlInt(own.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	if err := CheckHanded(int(own.Fd())); err == nil || !strings.Contains(err.Error(), "is not a FUSE device") {
		t.Errorf("a passed plain file: %v", err)
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("cannot open /dev/fuse: %v", err)
	}
	defer dev.Close()
	if _, err := unix.FcntlInt(dev.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	if err := CheckHanded(int(dev.Fd())); err != nil {
		t.Errorf("a passed /dev/fuse: %v", err)
	}
}
