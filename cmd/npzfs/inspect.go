package main

import (
	"fmt"
	"io"
	"os"

	"github.com/npzfs/npzfs/npy"
)

func init() {
	register("inspect", &command{
		summary: "print the header.json of a .npy file, or of one member of an archive",
		usage:   "FILE.npy | ARCHIVE KEY",
		run:     runInspect,
	})
}

func runInspect(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("inspect", stdout, stderr)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	switch fl.NArg() {
	case 1:
		return inspectFile(fl.Arg(0), stdout, stderr)
	case 2:
		return inspectArchive(fl.Arg(0), fl.Arg(1), stdout, stderr) // in ls.go
	}
	return usageError(stderr, "inspect", "takes FILE.npy, or ARCHIVE KEY")
}

// inspectFile prints the header.json of one .npy file.
func inspectFile(path string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	size := int64(-1)
	if st.Mode().IsRegular() {
		size = st.Size()
	}
	h, err := npy.ReadHeader(f, size, nil)
	if err != nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: %v", path, err))
	}
	js, err := h.JSON(size)
	if err != nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: %v", path, err))
	}
	if _, err := stdout.Write(js); err != nil {
		return fail(stderr, "inspect", err)
	}
	return exitOK
}
