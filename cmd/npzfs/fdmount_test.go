//go:build linux

package main

import (
	"os"
	"strconv"
	"testing"
)

// TestCheckHanded: /dev/fd/N must name a descriptor passed open on the
// FUSE device; mount says so in one line of one that was not.
func TestCheckHanded(t *testing.T) {
	own, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	mp := "/dev/fd/" + strconv.Itoa(int(own.Fd()))
	code, _, errs := runCmd("mount", "a.npz", mp)
	if want := "npzfs mount: " + mp + " was not passed to npzfs: the process that mounted the FUSE device must pass its descriptor open\n"; code != exitFail || errs != want {
		t.Errorf("a descriptor of this process: exit %d, stderr %q; want %q", code, errs, want)
	}
}
