package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

func init() {
	register("ls", &command{
		summary: "list an archive's members: dtype, shape, order, size, method, and why any is not served",
		usage:   "ARCHIVE",
		run:     runLs,
	})
}

func runLs(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("ls", stderr)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 1 {
		return usageError(stderr, "ls", "takes one argument: the archive")
	}
	a, err := npz.Open(fl.Arg(0), nil)
	if err != nil {
		return fail(stderr, "ls", err)
	}
	defer a.Close()
	writeListing(stdout, a)
	return exitOK
}

// writeListing prints one aligned line per member of a, then the archive's
// own problems.
func writeListing(w io.Writer, a *npz.Archive) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDTYPE\tSHAPE\tORDER\tBYTES\tMETHOD\tRATIO\tNOTE")
	served := 0
	members := a.Members()
	for _, m := range members {
		if m.Served() {
			served++
		}
		dtype, shape, order := "-", "-", "-"
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(); err == nil {
				dtype, shape, order = dtypeString(h.DType), shapeString(h.Shape), "C"
				if h.FortranOrder {
					order = "F"
				}
			}
		}
		method := npz.MethodName(m.Method())
		if m.Encrypted() {
			method += "+encrypted"
		}
		ratio := "-"
		if m.Size() > 0 {
			ratio = strconv.FormatFloat(100*float64(m.CompressedSize())/float64(m.Size()), 'f', 1, 64) + "%"
		}
		note := m.Reason()
		if m.Served() && m.Path() != strings.TrimSuffix(m.Name(), "/") {
			note = join("served as "+quoteName(m.Path()), note)
		}
		name := m.Name()
		bytes := strconv.FormatInt(m.Size(), 10)
		if m.IsDir() {
			dtype, method, ratio, bytes = "(folder)", "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", quoteName(name), dtype, shape, order, bytes, method, ratio, note)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d members, %d served\n", len(members), served)
	for _, p := range a.Problems() {
		fmt.Fprintf(w, "archive: %s\n", p)
	}
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// quoteName shows a name as it is unless it has characters that would
// break the columns (spaces, tabs, control characters), then Go-quoted.
func quoteName(s string) string {
	if s == "" {
		return `""`
	}
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == ' ' || r == '"' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// dtypeString is numpy's dtype.str, or a short description of a record.
func dtypeString(d *npy.DType) string {
	if d == nil {
		return "?"
	}
	if d.Record {
		return fmt.Sprintf("record(%d fields, %d bytes)", len(d.Fields), d.ItemSize)
	}
	if d.Subarray != nil {
		return fmt.Sprintf("%s%s", dtypeString(d.Subarray.Base), shapeString(d.Subarray.Shape))
	}
	return d.Str()
}

// shapeString writes a shape as Python does: (), (3,), (2, 3).
func shapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = strconv.FormatInt(n, 10)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// inspectArchive prints the header.json of one member of an archive; key
// is the member's name with or without ".npy". It is the two-argument form
// of "npzfs inspect".
func inspectArchive(path, key string, stdout, stderr io.Writer) int {
	a, err := npz.Open(path, nil)
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	defer a.Close()
	var m *npz.Member
	if strings.HasSuffix(key, ".npy") {
		m = a.Member(key)
	} else if m = a.Member(key + ".npy"); m == nil {
		m = a.Member(key)
	}
	if m == nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: no member %q", path, key))
	}
	js, err := m.HeaderJSON()
	if err != nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: %s: %v", path, m.Name(), err))
	}
	if _, err := stdout.Write(js); err != nil {
		return fail(stderr, "inspect", err)
	}
	return exitOK
}
