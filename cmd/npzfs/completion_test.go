package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/shellcomp"
)

// completionDir writes the completion script for shell, and a folder to
// complete in: archives (one with a space in its name), text files and
// sub-folders (one with a space).
func completionDir(t *testing.T, shell string) (script, dir string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{"a.npz", "b.npy", "c.txt", "d.npz.txt", "my data.npz"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sub", "my dir"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCmd("completion", shell)
	if code != exitOK || errs != "" {
		t.Fatalf("completion %s: exit %d, %s", shell, code, errs)
	}
	script = filepath.Join(t.TempDir(), "npzfs."+shell)
	if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return script, dir
}

// completionCases are command lines and what completing their last word
// offers, sorted; "" ends a line that completes a new word.
var completionCases = []struct {
	line string
	want []string
}{
	{"npzfs mo", []string{"mount"}},
	{"npzfs u", []string{"umount", "unmount"}},
	{"npzfs mount --ca", []string{"--cache-mb"}},
	{"npzfs mount -o allow_other,noe", []string{"allow_other,noexec"}},
	{"npzfs mount ", []string{"a.npz", "b.npy", "my data.npz", "my dir", "sub"}},
	{"npzfs mount a.npz ", []string{"my dir", "sub"}},
	{"npzfs mount --cache-mb 16 a.npz ", []string{"my dir", "sub"}},
	{"npzfs mount --log ", []string{"a.npz", "b.npy", "c.txt", "d.npz.txt", "my data.npz", "my dir", "sub"}},
	{"npzfs ls ", []string{"a.npz", "b.npy", "my data.npz", "my dir", "sub"}},
	{"npzfs index --index-dir ", []string{"my dir", "sub"}},
	{`npzfs mount my\ d`, []string{"my data.npz", "my dir"}},
	{"npzfs ls 'my d", []string{"my data.npz", "my dir"}},
	{`npzfs mount a.npz "my`, []string{"my dir"}},
	{"npzfs completion ", []string{"bash", "fish", "zsh"}},
	{"npzfs help in", []string{"index", "inspect"}},
	{"npzfs umount --l", []string{"--lazy"}},
	{"npzfs serve --std", []string{"--stdio"}},
	{"npzfs serve --stdio ", []string{"a.npz", "b.npy", "my data.npz", "my dir", "sub"}},
}

// TestCompletion completes each case in bash, fish and zsh (with the
// script installed on $fpath, and sourced).
func TestCompletion(t *testing.T) {
	lines := make([]string, len(completionCases))
	for i, tc := range completionCases {
		lines[i] = tc.line
	}
	for _, shell := range []string{shellcomp.Bash, shellcomp.Fish, shellcomp.Zsh, shellcomp.ZshSourced} {
		t.Run(shell, func(t *testing.T) {
			script, dir := completionDir(t, strings.TrimSuffix(shell, "-sourced"))
			offers, err := shellcomp.Complete(shell, script, dir, lines)
			if errors.Is(err, shellcomp.ErrNoShell) {
				t.Skipf("%v (Debian: apt-get install bash zsh fish)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, tc := range completionCases {
				if !slices.Equal(offers[i], tc.want) {
					t.Errorf("%q offers %q, want %q", tc.line, offers[i], tc.want)
				}
			}
		})
	}
}

// TestCompletionLoads checks that bash registers the function for npzfs
// and that zsh parses the script (zsh -n).
func TestCompletionLoads(t *testing.T) {
	bash, errBash := exec.LookPath("bash")
	zsh, errZsh := exec.LookPath("zsh")
	if errBash != nil && errZsh != nil {
		t.Skip("neither bash nor zsh found")
	}
	if errBash == nil {
		script, _ := completionDir(t, "bash")
		out, err := exec.Command(bash, "--norc", "-c", `source "$1"; complete -p npzfs`, "bash", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "complete -F _npzfs npzfs" {
			t.Errorf("complete -p npzfs: %v %s", err, out)
		}
	}
	if errZsh == nil {
		script, _ := completionDir(t, "zsh")
		if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v %s", err, out)
		}
	}
}

func TestCompletionUsage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		code, out, errs := runCmd(args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
