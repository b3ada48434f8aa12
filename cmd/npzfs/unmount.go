package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"

	npzfs "github.com/npzfs/npzfs/fs"
)

const unmountHelp = `Unmounts an npzfs mount; its daemon then exits. A mount whose daemon was
killed ("Transport endpoint is not connected") is cleared too. A mount with
files still open is busy: close them, or pass --lazy to detach it now (it
goes away when the last file closes).

Exit codes: 0 unmounted, 1 not mounted, not an npzfs mount, or busy,
2 bad command line.`

func init() {
	register("unmount", &command{
		summary: "unmount a mounted archive (alias: umount)",
		usage:   "[flags] MOUNTPOINT",
		help:    unmountHelp,
		run:     runUnmount,
	})
}

func runUnmount(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("unmount", stdout, stderr)
	lazy := fl.BoolP("lazy", "z", false, "detach the mount even if files are open in it")
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 1 {
		return argsError(stderr, "unmount", fl.Args(), 1, "MOUNTPOINT")
	}
	if err := unmount(fl.Arg(0), *lazy); err != nil {
		return fail(stderr, "unmount", err)
	}
	return exitOK
}

func unmount(dir string, lazy bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Resolve symlinks in the parent only: the mount point itself may
	// be a dead mount that cannot be stat'ed.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(parent, filepath.Base(abs))
	}
	m, ok := findMount(abs)
	if !ok {
		return fmt.Errorf("%s is not mounted", abs)
	}
	if m.fstype != "fuse."+npzfs.FSType {
		return fmt.Errorf("%s is a %s mount, not npzfs; use umount(8)", abs, m.fstype)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
		// The daemon is gone; nothing can be busy in a useful way.
		lazy = true
	}
	if lazy {
		err = npzfs.LazyUnmount(abs)
	} else {
		err = npzfs.Unmount(abs)
	}
	if err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%s is busy: close the files open in it, or use: npzfs unmount --lazy %s", abs, abs)
		}
		if errors.Is(err, npzfs.ErrNoFusermount) {
			return err
		}
		return fmt.Errorf("cannot unmount %s: %v", abs, err)
	}
	if _, still := findMount(abs); still && !lazy {
		return fmt.Errorf("%s is still mounted", abs)
	}
	return nil
}
