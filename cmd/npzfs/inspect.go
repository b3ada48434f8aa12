package main

import (
	"io"
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
	ctx, stop := interruptible()
	defer stop()
	switch fl.NArg() {
	case 1:
		// A .npy file: its header; an archive: which keys it has.
		return inspectArchive(ctx, fl.Arg(0), "", &rf, stdout, stderr)
	case 2:
		return inspectArchive(ctx, fl.Arg(0), fl.Arg(1), &rf, stdout, stderr) // in ls.go
	}
	return argsError(stderr, "inspect", fl.Args(), 2, "FILE.npy, or ARCHIVE KEY")
}
