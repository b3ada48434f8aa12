//go:build linux

package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	npzfs "github.com/npzfs/npzfs/fs"
)

// TestHandOn: the daemon gets a handed FUSE device as its next extra
// file, its mount point argument renamed to that descriptor; other mount
// points and other arguments are left alone.
func TestHandOn(t *testing.T) {
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("cannot open /dev/fuse: %v", err)
	}
	defer dev.Close()
	mp := "/dev/fd/" + strconv.Itoa(int(dev.Fd()))
	cmd := exec.Command("npzfs", "mount", "--ready-fd=3", "a.npz", mp)
	ready := os.Stdin
	cmd.ExtraFiles = []*os.File{ready}
	if err := handOn(cmd, mp); err != nil {
		t.Fatal(err)
	}
	if want := []string{"npzfs", "mount", "--ready-fd=3", "a.npz", "/dev/fd/4"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	if len(cmd.ExtraFiles) != 2 {
		t.Fatalf("extra files %v", cmd.ExtraFiles)
	}
	defer cmd.ExtraFiles[1].Close()
	if err := npzfs.CheckFD(int(cmd.ExtraFiles[1].Fd())); err != nil {
		t.Errorf("the file handed on: %v", err)
	}

	cmd = exec.Command("npzfs", "mount", "a.npz", "/mnt/x")
	if err := handOn(cmd, "/mnt/x"); err != nil || len(cmd.ExtraFiles) != 0 || cmd.Args[3] != "/mnt/x" {
		t.Errorf("a folder: %v, %v, %q", err, cmd.ExtraFiles, cmd.Args)
	}
	if err := handOn(exec.Command("npzfs", "mount", "a.npz", "/dev/fd/999"), "/dev/fd/999"); err == nil {
		t.Error("a closed descriptor is handed on")
	}
}

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
