//go:build !linux

package main

import "io"

// Mounts are Linux's: elsewhere mount, unmount and status are not
// commands, and say so (linuxOnly), and mount(8)'s helper call is not
// taken.
func init() {
	const none = "mounts need Linux with FUSE: there are none on this system"
	linuxOnly["mount"] = "mounting needs Linux with FUSE: on this system, read archives with npzfs.open in Python, or npzfs serve --stdio"
	linuxOnly["unmount"], linuxOnly["umount"], linuxOnly["status"] = none, none, none
}

// isHelperCall reports whether args are mount.fuse3's call: never here.
func isHelperCall([]string) bool { return false }

// runHelper is not called here.
func runHelper([]string, io.Writer, io.Writer) int { return exitUsage }

// mountOptionNames are the values -o completes to: none here.
func mountOptionNames() []string { return nil }
