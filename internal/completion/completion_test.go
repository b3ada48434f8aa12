package completion

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/npzfs/npzfs/internal/shellcomp"
)

// testSpec is a small command line: a command with an alias, flags with
// and without values, and arguments of every kind but the mount points.
var testSpec = &Spec{
	MountOptions: []string{"cache_mb=", "noatime", "ro"},
	Commands: []Command{
		{Name: "get", Summary: "get a key's array", Aliases: []string{"fetch"},
			Flags: []Flag{
				{Long: "out", Short: "O", Usage: "write to FILE", Value: File, TakesValue: true},
				{Long: "into", Usage: "write into DIR", Value: Dir, TakesValue: true},
				{Long: "quiet", Short: "q", Usage: "say nothing"},
				{Long: "options", Short: "o", Usage: "options", Value: MountOption, TakesValue: true, Repeats: true},
			},
			Args: []Value{Archive, None}, ArgNames: []string{"ARCHIVE", "KEY"}, Rest: true},
		{Name: "completion", Summary: "print a script", Args: []Value{ShellName}, ArgNames: []string{"SHELL"}},
	},
}

// TestWrite completes command lines of testSpec in each shell that is
// installed, with the script Write writes for it.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.npz", "b.npy", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		line string
		want []string
	}{
		{"npzfs g", []string{"get"}},
		{"npzfs f", []string{"fetch"}},
		{"npzfs get --q", []string{"--quiet"}},
		{"npzfs get ", []string{"a.npz", "b.npy", "sub"}},
		{"npzfs fetch --out ", []string{"a.npz", "b.npy", "c.txt", "sub"}},
		{"npzfs get --into ", []string{"sub"}},
		{"npzfs get -o noatime,c", []string{"noatime,cache_mb="}},
		{"npzfs get -q a.npz ", nil},
		{"npzfs completion ", []string{"bash", "fish", "zsh"}},
		{"npzfs help c", []string{"completion"}},
	}
	lines := make([]string, len(cases))
	for i, tc := range cases {
		lines[i] = tc.line
	}
	for _, shell := range []string{shellcomp.Bash, shellcomp.Fish, shellcomp.Zsh} {
		t.Run(shell, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, shell, testSpec); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(t.TempDir(), "npzfs."+shell)
			if err := os.WriteFile(script, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			offers, err := shellcomp.Complete(shell, script, dir, lines)
			if errors.Is(err, shellcomp.ErrNoShell) {
				t.Skipf("%v (Debian: apt-get install bash zsh fish)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, tc := range cases {
				if !slices.Equal(offers[i], tc.want) {
					t.Errorf("%q offers %q, want %q", tc.line, offers[i], tc.want)
				}
			}
		})
	}
}

// TestWriteUnknownShell: a shell Write does not know is an error, and
// nothing is written.
func TestWriteUnknownShell(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "tcsh", testSpec); err == nil || b.Len() > 0 {
		t.Errorf("tcsh: %v, %d bytes written", err, b.Len())
	}
}
