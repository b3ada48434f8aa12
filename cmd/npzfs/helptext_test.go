package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/internal/roff"
	"github.com/npzfs/npzfs/memplan"
)

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code makes (go test ./cmd/npzfs -update after a change on purpose):\n%s", path, got)
	}
}

// TestHelpFitsAScreen: every command's --help is at most helpLines lines
// of helpWidth columns, gives each visible flag one line, and says where
// the long text is.
func TestHelpFitsAScreen(t *testing.T) {
	for _, name := range commandNames() {
		_, out, _ := runCmd(name, "--help")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) > helpLines {
			t.Errorf("%s --help: %d lines, more than %d", name, len(lines), helpLines)
		}
		for _, l := range lines {
			if len(l) > helpWidth {
				t.Errorf("%s --help: line of %d columns: %q", name, len(l), l)
			}
		}
		if !strings.Contains(out, "man npzfs") {
			t.Errorf("%s --help does not say where the rest is:\n%s", name, out)
		}
		if len(examples[name]) == 0 {
			t.Errorf("%s has no example", name)
		}
		flagsOf(name).VisitAll(func(f *pflag.Flag) {
			n := 0
			for _, l := range lines {
				l = strings.TrimSpace(l)
				if f.Shorthand != "" {
					l = strings.TrimPrefix(l, "-"+f.Shorthand+", ")
				}
				if l == "--"+f.Name || strings.HasPrefix(l, "--"+f.Name+" ") {
					n++
				}
			}
			if f.Hidden != (n == 0) || n > 1 {
				t.Errorf("%s --help: --%s (hidden %v) is on %d lines", name, f.Name, f.Hidden, n)
			}
		})
	}
}

// TestManGolden keeps the man page in testdata/npzfs.1.golden, so that a
// change to any help text shows in review as a change of the man page too.
func TestManGolden(t *testing.T) {
	var b bytes.Buffer
	writeMan(&b, "VERSION")
	golden(t, filepath.Join("testdata", "npzfs.1.golden"), b.Bytes())
	code, out, errs := runCmd("help", "--man")
	if code != exitOK || errs != "" || !strings.HasPrefix(out, ".\\\" Made by npzfs help --man") {
		t.Errorf("npzfs help --man: exit %d, stderr %q, output starting %.60q", code, errs, out)
	}
}

// TestManCarriesTheLongText: the man page holds each command's
// description and each flag's whole usage, which --help leaves out.
func TestManCarriesTheLongText(t *testing.T) {
	var b bytes.Buffer
	writeMan(&b, "VERSION")
	man := b.String()
	for _, name := range commandNames() {
		c := commands[name]
		for _, p := range strings.Split(c.help, "\n\n") {
			first := strings.TrimSpace(strings.SplitN(p, "\n", 2)[0])
			if !strings.Contains(man, roff.Text(first)) {
				t.Errorf("%s: the man page lacks %q", name, first)
			}
		}
		for _, r := range flagRows(name, flagsOf(name), false) {
			if !strings.Contains(man, roff.Text(capitalize(r.usage))) {
				t.Errorf("%s --%s: the man page lacks its usage %q", name, r.name, r.usage)
			}
		}
	}
}

// TestManRenders: groff formats the page without a warning.
func TestManRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff not found (Debian: groff-base, which man-db needs)")
	}
	var b bytes.Buffer
	writeMan(&b, "VERSION")
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = &b
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}

// TestDidYouMean: a mistyped command or flag gets the nearest one
// suggested, in the same one line; a word near nothing gets none.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mout", "a", "b"}, `npzfs: unknown command "mout"; did you mean "mount"? (see 'npzfs help')` + "\n"},
		{[]string{"unmuont"}, `npzfs: unknown command "unmuont"; did you mean "unmount"? (see 'npzfs help')` + "\n"},
		{[]string{"help", "inpsect"}, `npzfs: unknown command "inpsect"; did you mean "inspect"? (see 'npzfs help')` + "\n"},
		{[]string{"xyzzy"}, `npzfs: unknown command "xyzzy" (see 'npzfs help')` + "\n"},
		{[]string{"mount", "--cache-mib", "5", "a", "b"}, "npzfs mount: unknown flag: --cache-mib; did you mean --cache-mb? (see 'npzfs mount --help')\n"},
		{[]string{"ls", "--jsno", "a"}, "npzfs ls: unknown flag: --jsno; did you mean --json? (see 'npzfs ls --help')\n"},
		{[]string{"index", "--sidcar", "a"}, "npzfs index: unknown flag: --sidcar; did you mean --sidecar? (see 'npzfs index --help')\n"},
		{[]string{"ls", "--frobnicate", "a"}, "npzfs ls: unknown flag: --frobnicate (see 'npzfs ls --help')\n"},
	} {
		code, stdout, stderr := runCmd(tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("npzfs %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestFlagValueErrors: a value a flag cannot take is named with what the
// flag wants, not with the parser's message.
func TestFlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", "--cache-mb", "x", "a", "b"}, `npzfs mount: --cache-mb takes a whole number, not "x" (see 'npzfs mount --help')` + "\n"},
		{[]string{"mount", "--memory-mb=", "a", "b"}, `npzfs mount: --memory-mb takes a whole number, not "" (see 'npzfs mount --help')` + "\n"},
		{[]string{"mount", "--cache-mb", "99999999999999999999", "a", "b"}, fmt.Sprintf("npzfs mount: --cache-mb 99999999999999999999: too large: give at most %d (see 'npzfs mount --help')\n", memplan.MaxBudget()>>20)},
		{[]string{"mount", "--max-open", "99999999999999999999", "a", "b"}, "npzfs mount: --max-open 99999999999999999999: too large (see 'npzfs mount --help')\n"},
		{[]string{"mount", "--list-ttl", "5", "a", "b"}, `npzfs mount: --list-ttl takes a duration such as 90s, 5m or 1h30m, not "5" (see 'npzfs mount --help')` + "\n"},
		{[]string{"ls", "--json=maybe", "a"}, `npzfs ls: --json takes true or false, or no value, not "maybe" (see 'npzfs ls --help')` + "\n"},
	} {
		code, stdout, stderr := runCmd(tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("npzfs %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestPythonFlags keeps python/npzfs/_flags.py, the table of flags the
// Python package checks keyword arguments against, in step with the
// flags the commands define.
func TestPythonFlags(t *testing.T) {
	var b bytes.Buffer
	writePythonFlags(&b)
	golden(t, filepath.Join("..", "..", "python", "npzfs", "_flags.py"), b.Bytes())
}

// pythonCommands are the commands the Python package runs with keyword
// arguments for flags.
var pythonCommands = []string{"index", "ls", "mount", "pack", "serve", "unmount"}

// writePythonFlags writes python/npzfs/_flags.py: for each of
// pythonCommands, each visible flag's name as a keyword argument, its kind
// ("bool": given bare when True; "value": one value; "list": repeated for
// each item) and its one-line usage.
func writePythonFlags(w io.Writer) {
	fmt.Fprint(w, `"""The flags of the npzfs commands the Python API runs, keyed by keyword
argument name: (kind, usage). kind is "bool" (the bare flag, for True),
"int" (--flag=N), "duration" (--flag=DURATION), "value" (--flag=TEXT) or
"list" (--flag=TEXT for each item).

Made from the command line's flag definitions by
go test ./cmd/npzfs -run TestPythonFlags -update: do not edit.
"""

FLAGS = {
`)
	for _, n := range pythonCommands {
		fmt.Fprintf(w, "    %q: {\n", n)
		fl := flagsOf(n)
		for _, r := range flagRows(n, fl, true) {
			f := fl.Lookup(r.name)
			kind := "value"
			switch t := f.Value.Type(); {
			case t == "bool", t == "duration":
				kind = t
			case t == "int", t == "int64", t == "uint":
				kind = "int"
			case strings.HasSuffix(t, "Array"), strings.HasSuffix(t, "Slice"):
				kind = "list"
			}
			fmt.Fprintf(w, "        %q: (%q, %q),\n", strings.ReplaceAll(r.name, "-", "_"), kind, r.usage)
		}
		fmt.Fprintf(w, "    },\n")
	}
	fmt.Fprint(w, "}\n")
}
