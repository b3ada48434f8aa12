//go:build !linux

package main

import (
	"strings"
	"testing"
)

// TestNoMounts: where there are no mounts, mount, unmount and status
// are no commands, and say in one line why and what to use instead.
func TestNoMounts(t *testing.T) {
	for _, args := range [][]string{{"mount", "a.npz", "mnt"}, {"unmount", "mnt"}, {"umount", "mnt"}, {"status"}, {"help", "mount"}} {
		code, out, errs := runCmd(args...)
		if code != exitFail || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "Linux with FUSE") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if _, _, errs := runCmd("mount", "a.npz", "mnt"); !strings.Contains(errs, "npzfs.open") {
		t.Errorf("mount does not say what to use instead: %q", errs)
	}
	if _, ok := commands["mount"]; ok {
		t.Error("mount is a command")
	}
}
