//go:build linux

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/npzfs/npzfs/internal/daemon"
)

func init() {
	register("unmount", &command{
		summary: "unmount a mounted archive (alias: umount)",
		usage:   "[flags] MOUNTPOINT",
		help:    unmountHelp,
		run:     runUnmount,
	})
}

// exitWait is how long npzfs unmount waits for the daemon of a mount it
// removed to exit (its log closed, its files and indexes written); a
// daemon takes a few milliseconds.
const exitWait = 5 * time.Second

func runUnmount(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("unmount", stdout, stderr)
	lazy := fl.BoolP("lazy", "z", false, "detach the mount even if files are open in it")
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 1 {
		return argsError(stderr, "unmount", fl.Args(), 1, "MOUNTPOINT")
	}
	u, err := daemon.Unmount(fl.Arg(0), *lazy)
	if err != nil {
		return fail(stderr, "unmount", err)
	}
	if running := u.Wait(exitWait); len(running) > 0 {
		fmt.Fprintf(stderr, "npzfs unmount: %s is unmounted, but its daemon (pid %d) has not exited after %v (is the mount still in another mount namespace?)\n", u.Dir, running[0], exitWait)
	}
	return exitOK
}
