//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/npzfs/npzfs/internal/daemon"
	"github.com/npzfs/npzfs/internal/mountinfo"
)

func init() {
	register("status", &command{
		summary: "show what this user's npzfs mounts are doing",
		usage:   "[--json] [MOUNTPOINT]",
		help:    statusHelp,
		run:     runStatus,
	})
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("status", stdout, stderr)
	asJSON := fl.Bool("json", false, "print one JSON document (see the README)")
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() > 1 {
		return argsError(stderr, "status", fl.Args(), 1, "at most a MOUNTPOINT")
	}
	list := daemon.Statuses()
	if fl.NArg() == 1 {
		want, err := daemon.MountPath(fl.Arg(0))
		if err != nil {
			return fail(stderr, "status", err)
		}
		var one []daemon.Status
		for _, st := range list {
			if st.Mountpoint == want {
				one = append(one, st)
			}
		}
		if len(one) == 0 {
			if _, mounted := mountinfo.Find(want); !mounted {
				// Not a mount point, so looking at it waits on no daemon.
				if _, err := os.Lstat(want); errors.Is(err, os.ErrNotExist) {
					return fail(stderr, "status", fmt.Errorf("%s does not exist", want))
				}
			}
			return fail(stderr, "status", fmt.Errorf("%s is not an npzfs mount of yours", want))
		}
		list = one
	}
	if *asJSON {
		if list == nil {
			list = []daemon.Status{}
		}
		if err := writeJSON(stdout, struct {
			Mounts []daemon.Status `json:"mounts"`
		}{list}); err != nil {
			return fail(stderr, "status", err)
		}
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no npzfs mounts of yours")
	}
	for i, st := range list {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		st.WriteText(stdout)
	}
	return exitOK
}
