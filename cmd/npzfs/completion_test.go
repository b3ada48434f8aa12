package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completionDir writes the completion script for shell, and a folder to
// complete in: two archives, a text file and a sub-folder.
func completionDir(t *testing.T, shell string) (script, dir string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{"a.npz", "b.npy", "c.txt", "d.npz.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
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
	{"npzfs mount ", []string{"a.npz", "b.npy", "sub"}},
	{"npzfs mount a.npz ", []string{"sub"}},
	{"npzfs mount --cache-mb 16 a.npz ", []string{"sub"}},
	{"npzfs mount --log ", []string{"a.npz", "b.npy", "c.txt", "d.npz.txt", "sub"}},
	{"npzfs ls ", []string{"a.npz", "b.npy", "sub"}},
	{"npzfs index --index-dir ", []string{"sub"}},
	{"npzfs completion ", []string{"bash", "fish", "zsh"}},
	{"npzfs help in", []string{"index", "inspect"}},
	{"npzfs umount --l", []string{"--lazy"}},
}

// TestCompletionBash loads the bash script and completes each case as
// bash would, with COMP_WORDS and COMP_CWORD set.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	script, dir := completionDir(t, "bash")
	for _, tc := range completionCases {
		cmd := exec.Command(bash, "--norc", "-c", `source "$1" || exit 9
read -ra COMP_WORDS <<<"$2"
[[ $2 == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_npzfs
printf '%s\n' "${COMPREPLY[@]}"`, "bash", script, tc.line)
		cmd.Dir = dir
		checkCompletion(t, "bash", tc.line, cmd, tc.want, func(s string) string { return strings.TrimSuffix(s, "/") })
	}
	out, err := exec.Command(bash, "--norc", "-c", `source "$1"; complete -p npzfs`, "bash", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "complete -F _npzfs npzfs" {
		t.Errorf("complete -p npzfs: %v %s", err, out)
	}
}

// TestCompletionFish completes each case with fish's complete -C.
func TestCompletionFish(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not found (Debian: apt-get install fish)")
	}
	script, dir := completionDir(t, "fish")
	for _, tc := range completionCases {
		cmd := exec.Command(fish, "--no-config", "-c", `source $argv[1]; or exit 9; complete -C $argv[2]`, script, tc.line)
		cmd.Dir = dir
		checkCompletion(t, "fish", tc.line, cmd, tc.want, func(s string) string {
			s, _, _ = strings.Cut(s, "\t") // the description
			return strings.TrimSuffix(s, "/")
		})
	}
}

// TestCompletionZsh checks the zsh script's syntax, and that it loads
// into compinit's table for npzfs.
func TestCompletionZsh(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not found (Debian: apt-get install zsh)")
	}
	script, _ := completionDir(t, "zsh")
	if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v %s", err, out)
	}
	out, err := exec.Command(zsh, "-f", "-c", `autoload -U compinit && compinit -u -d "$2" && source "$1" && print -r -- $_comps[npzfs]`,
		"zsh", script, filepath.Join(t.TempDir(), "zcompdump")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_npzfs" {
		t.Errorf("loading: %v %s", err, out)
	}
}

func checkCompletion(t *testing.T, shell, line string, cmd *exec.Cmd, want []string, clean func(string) string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("%s %q: %v %s", shell, line, err, stderr.String())
		return
	}
	var got []string
	for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if s != "" {
			got = append(got, clean(s))
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s %q offers %q, want %q", shell, line, got, want)
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
