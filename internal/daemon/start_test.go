//go:build linux

package daemon

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

// TestReadyLine: what the daemon reports comes through whole, and what
// is not a report is not taken for one.
func TestReadyLine(t *testing.T) {
	st := Ready{Source: "/data/a.npz", Mountpoint: "/mnt/a", Members: 3, Unreadable: 1, Hidden: 2,
		Unindexed: 1, UnindexedBytes: 3 << 30, LogCreated: "/x/npzfs.log"}
	if got, ok := parseReady(st.line()); !ok || got != st {
		t.Fatalf("parseReady(line()) = %+v, %v; want %+v", got, ok, st)
	}
	for _, line := range []string{"cannot mount: why", "", "ok\t1", "ok\tx\t1\t2\t3\t4\t/a\t/b\t"} {
		if _, ok := parseReady(line); ok {
			t.Errorf("%q parsed as a report of a live mount", line)
		}
	}
}
