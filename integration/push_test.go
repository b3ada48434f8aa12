//go:build linux

package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/npzfs/npzfs/internal/pagecache"
)

// TestIoctlPushesSmallFiles: a single archive's files open without a
// request, so the first request that shows one open is the isatty ioctl
// that Python's open() makes. It is refused with ENOTTY, and a small
// stored file (a member, a view with a head made in memory, raw.bin) is
// in the page cache when it returns, before any read; a deflated member
// is not. The bytes pushed are those the daemon's reads serve.
func TestIoctlPushesSmallFiles(t *testing.T) {
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	want := map[string][]byte{}
	for _, a := range arrays {
		want[a.name] = a.data
	}
	for _, tc := range []struct {
		name   string
		pushed bool
	}{
		{"images.npy", true},
		{"images.ra", true},
		{"images/raw.bin", true},
		{"labels.npy", false}, // deflated
	} {
		f, err := os.Open(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if all, err := pagecache.All(f); all || err != nil {
			t.Errorf("%s: in the page cache after an open alone: %v, %v", tc.name, all, err)
		}
		var termios [64]byte
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&termios[0])))
		if !errors.Is(e, syscall.ENOTTY) {
			t.Errorf("%s: isatty's ioctl: %v, want ENOTTY", tc.name, e)
		}
		if all, err := pagecache.All(f); all != tc.pushed || err != nil {
			t.Errorf("%s: in the page cache after the ioctl: %v, %v; want %v", tc.name, all, err, tc.pushed)
		}
		pushed, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pagecache.Drop(f); err != nil {
			t.Fatal(err)
		}
		read, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pushed, read) || len(read) == 0 {
			t.Errorf("%s: %d bytes from the page cache, %d read from the daemon: not the same", tc.name, len(pushed), len(read))
		}
		if w, ok := want[tc.name]; ok && !bytes.Equal(read, w) {
			t.Errorf("%s: %d bytes, not the member's %d", tc.name, len(read), len(w))
		}
		f.Close()
	}
}

// TestNoPushFromAChangedArchive: a small file of an archive whose file
// changed since it was mounted (here only its modification time) is not
// pushed at its ioctl, and its read reaches the daemon and fails with
// EIO, as docs/guarantees.md says.
func TestNoPushFromAChangedArchive(t *testing.T) {
	archive := manyArrays(t, 3)
	dir := mount(t, archive)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(archive, later, later); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "a000001.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var termios [64]byte
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&termios[0]))); !errors.Is(e, syscall.ENOTTY) {
		t.Errorf("isatty's ioctl: %v, want ENOTTY", e)
	}
	if all, err := pagecache.All(f); all || err != nil {
		t.Errorf("in the page cache after the ioctl: %v, %v; want nothing pushed", all, err)
	}
	if _, err := io.ReadAll(f); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a file of the changed archive: %v, want EIO", err)
	}
}
