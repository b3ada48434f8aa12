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
		help:    inspectHelp,
		run:     runInspect,
	})
}

func runInspect(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("inspect", stdout, stderr)
	var rf remoteFlags
	rf.add(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if err := rf.check(); err != nil {
		return usageError(stderr, "inspect", err.Error())
	}
	switch fl.NArg() {
	case 1:
		if isRemote(fl.Arg(0)) {
			// A remote .npy is an archive of one member; an archive
			// without a key lists its keys.
			return inspectArchive(fl.Arg(0), "", &rf, stdout, stderr)
		}
		if kind, _ := sniff(fl.Arg(0)); kind == kindArchive {
			return inspectArchive(fl.Arg(0), "", &rf, stdout, stderr) // lists the keys
		}
		return inspectFile(fl.Arg(0), stdout, stderr)
	case 2:
		return inspectArchive(fl.Arg(0), fl.Arg(1), &rf, stdout, stderr) // in ls.go
	}
	return argsError(stderr, "inspect", fl.Args(), 2, "FILE.npy, or ARCHIVE KEY")
}

// File kinds sniff tells apart by their first bytes.
const (
	kindOther   = iota
	kindArchive // a zip archive: "PK"
	kindNPY     // a .npy file: "\x93NUMPY"
)

// notAnNPY says, when path is a .npy file given where an archive with
// keys is expected, what it is and what to do with it.
func notAnNPY(path string) error {
	if kind, _ := sniff(path); kind == kindNPY {
		return fmt.Errorf("%s is a .npy file, not an .npz archive: it has no keys; see its header with: npzfs inspect %s", path, path)
	}
	return nil
}

// sniff reads the first bytes of the file at path to tell an archive from
// a .npy file.
func sniff(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return kindOther, err
	}
	defer f.Close()
	var b [6]byte
	n, _ := io.ReadFull(f, b[:])
	switch {
	case n == 6 && string(b[:]) == npy.Magic:
		return kindNPY, nil
	case n >= 2 && string(b[:2]) == "PK":
		return kindArchive, nil
	}
	return kindOther, nil
}

// inspectFile prints the header.json of one .npy file, after checking
// that the file holds all the data its header declares (numpy refuses to
// load one that does not).
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
	if size >= 0 {
		if have, want := size-h.DataOffset, h.DataLength(size); have < want {
			return fail(stderr, "inspect", fmt.Errorf("%s: the header declares %d bytes of data but the file holds %d after it (truncated?)", path, want, have))
		}
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
