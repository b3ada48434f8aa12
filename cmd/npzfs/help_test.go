package main

import (
	"flag"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden help texts in testdata/help")

// TestHelpGolden compares every help text with its golden copy in
// testdata/help, so that a change to any of them is seen in review. Run
// `go test ./cmd/npzfs -run TestHelpGolden -update` after changing one on
// purpose.
func TestHelpGolden(t *testing.T) {
	cases := map[string][]string{
		"npzfs":      {"help"},
		"help-help":  {"help", "help"},
		"help-flag":  {"help", "--help"},
		"no-command": {},
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cases[n] = []string{n, "--help"}
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, stdout, stderr := runCmd(args...)
			golden(t, filepath.Join("testdata", "help", name+".golden"), []byte(stdout+stderr))
		})
	}
}

// TestUsageErrorsNameTheCommand: no usage error points at "npzfs help "
// with the command missing, and one with too many arguments names the
// first extra one.
func TestUsageErrorsNameTheCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `npzfs: unknown command "bogus" (see 'npzfs help')` + "\n"},
		{[]string{"help", "bogus"}, `npzfs: unknown command "bogus" (see 'npzfs help')` + "\n"},
		{[]string{"help", "ls", "extra"}, `npzfs help: takes at most one command, not also "extra" (see 'npzfs help help')` + "\n"},
		{[]string{"mount", "a", "b", "extra"}, `npzfs mount: unexpected argument "extra": takes ARCHIVE and MOUNTPOINT (see 'npzfs help mount')` + "\n"},
		{[]string{"mount", "a"}, `npzfs mount: needs ARCHIVE and MOUNTPOINT (see 'npzfs help mount')` + "\n"},
		{[]string{"ls"}, `npzfs ls: needs ARCHIVE or FOLDER (see 'npzfs help ls')` + "\n"},
		{[]string{"unmount", "a", "b"}, `npzfs unmount: unexpected argument "b": takes MOUNTPOINT (see 'npzfs help unmount')` + "\n"},
	} {
		code, stdout, stderr := runCmd(tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("npzfs %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestVersionFromBuildInfo: the version comes from what Go records in the
// binary: the module version, the commit (marked when the tree was
// modified) and its time.
func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-11-24T01:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	if got, want := describeBuild(bi, ""), "(devel) (commit 0123456789ab+dirty, 2026-11-24T01:00:00Z, go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A version set at build time keeps the commit.
	if got, want := describeBuild(bi, "0.0.0.post12+g0123456789ab"), "0.0.0.post12+g0123456789ab (commit 0123456789ab+dirty, 2026-11-24T01:00:00Z, go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi = &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}
	if got, want := describeBuild(bi, ""), "v1.2.3 (go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	version = "v9-custom"
	defer func() { version = "" }()
	if got := versionString(); !strings.HasPrefix(got, "v9-custom (") {
		t.Errorf("-ldflags override: got %q", got)
	}
	// A commit set at build time stands in for the one Go did not record.
	commit = "fedcba9876543210"
	defer func() { commit = "" }()
	if got := versionString(); !strings.Contains(got, "(commit fedcba987654") {
		t.Errorf("-ldflags commit: got %q", got)
	}
}
