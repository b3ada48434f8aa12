//go:build linux

package fs

import (
	"os"
	"strings"
	"testing"
)

func TestFDMountpoint(t *testing.T) {
	for _, tc := range []struct {
		dir string
		fd  int
		ok  bool
	}{
		{"/dev/fd/3", 3, true}, {"/dev/fd/12", 12, true},
		{"/dev/fd/0", 0, false}, {"/dev/fd/-1", 0, false}, {"/dev/fd/03", 0, false},
		{"/dev/fd/3/", 0, false}, {"/dev/fd/x", 0, false}, {"/mnt/data", 0, false}, {"dev/fd/3", 0, false},
	} {
		fd, ok := FDMountpoint(tc.dir)
		if fd != tc.fd || ok != tc.ok {
			t.Errorf("FDMountpoint(%q) = %d, %v; want %d, %v", tc.dir, fd, ok, tc.fd, tc.ok)
		}
	}
}

// TestCheckFD: a descriptor of /dev/fuse passes; a closed one and one of
// another file are refused, each in one line that says what to pass.
func TestCheckFD(t *testing.T) {
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := CheckFD(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "is not a FUSE device") {
		t.Errorf("a plain file: %v", err)
	}
	if err := CheckFD(999); err == nil || !strings.Contains(err.Error(), "no such open file descriptor") {
		t.Errorf("a closed descriptor: %v", err)
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("cannot open /dev/fuse: %v", err)
	}
	defer dev.Close()
	if err := CheckFD(int(dev.Fd())); err != nil {
		t.Errorf("/dev/fuse: %v", err)
	}
}
