package main

import (
	"bytes"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpGoesToStdout: --help and "npzfs help CMD" print the command's
// full help, flags and exit codes to stdout and exit 0; so does -h, but
// for ls, where -h means sizes with units (as ls -h does).
func TestHelpGoesToStdout(t *testing.T) {
	for name := range commands {
		forms := [][]string{{name, "--help"}, {"help", name}, {name, "-h"}}
		if name == "ls" {
			forms = forms[:2]
		}
		for _, args := range forms {
			code, out, errs := runCLI(args...)
			if code != exitOK || errs != "" {
				t.Errorf("%q: exit %d, stderr %q", args, code, errs)
			}
			for _, want := range []string{"Usage: npzfs " + name, commands[name].summary, "Exit codes"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q: stdout lacks %q:\n%s", args, want, out)
				}
			}
		}
	}
	if code, out, _ := runCLI("help", "umount"); code != exitOK || !strings.Contains(out, "Usage: npzfs unmount") {
		t.Errorf("help umount: exit %d:\n%s", code, out)
	}
}

// TestBadCommandLines: each mistake is one line on stderr naming it, and
// exit 2.
func TestBadCommandLines(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage: npzfs COMMAND"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"help", "bogus"}, `unknown command "bogus"`},
		{[]string{"ls", "--bogus"}, "npzfs ls: unknown flag: --bogus"},
		{[]string{"mount", "--cache-mb", "x", "a", "b"}, "npzfs mount: --cache-mb takes a whole number"},
		{[]string{"version", "extra"}, "takes no arguments"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
		if c.args != nil && strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: stderr is not one line: %q", c.args, errs)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(args...)
		if code != exitOK || out != "npzfs "+versionString()+"\n" || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
