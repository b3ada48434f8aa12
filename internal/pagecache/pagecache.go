//go:build linux

// Package pagecache reports which pages of a file the kernel holds in its
// page cache, reading none of them: for tests that check what npzfs puts
// there unasked.
package pagecache

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Resident reports, for each page of f, whether the kernel holds it: f is
// mapped (which reads nothing) and mincore(2) asked about the mapping.
func Resident(f *os.File) ([]bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("pagecache: mapping %s: %w", f.Name(), err)
	}
	defer syscall.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return nil, fmt.Errorf("pagecache: mincore of %s: %w", f.Name(), e)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out, nil
}

// All reports whether the kernel holds every page of f.
func All(f *os.File) (bool, error) {
	pages, err := Resident(f)
	for _, in := range pages {
		if !in {
			return false, err
		}
	}
	return err == nil, err
}

// Drop asks the kernel to forget f's clean cached pages
// (POSIX_FADV_DONTNEED), so that the next reads reach the file system.
func Drop(f *os.File) error {
	const fadvDontneed = 4
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontneed, 0, 0); e != 0 {
		return fmt.Errorf("pagecache: dropping the pages of %s: %w", f.Name(), e)
	}
	return nil
}
