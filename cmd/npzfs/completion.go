package main

import (
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/internal/completion"
)

func init() {
	register("completion", &command{
		summary: "print a shell completion script: bash, zsh or fish",
		usage:   "bash|zsh|fish",
		help: `Prints a script that completes npzfs's commands, their flags (and the
values of -o), archives (.npz and .npy files, and folders) for mount, ls,
inspect and index, folders for a mount point, and the current npzfs mount
points for unmount. Load it in the running shell, or install it where the
shell looks (the .deb and .rpm packages do):
  bash: source <(npzfs completion bash)
        or npzfs completion bash > ~/.local/share/bash-completion/completions/npzfs
  zsh:  npzfs completion zsh > "${fpath[1]}/_npzfs" (a folder on $fpath)
  fish: npzfs completion fish > ~/.config/fish/completions/npzfs.fish`,
		run: runCompletion,
	})
}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("completion", stdout, stderr)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 1 {
		return argsError(stderr, "completion", fl.Args(), 1, "a shell: bash, zsh or fish")
	}
	if err := completion.Write(stdout, fl.Arg(0), completionSpec()); err != nil {
		return usageError(stderr, "completion", err.Error()+": give bash, zsh or fish")
	}
	return exitOK
}

// completionArgs are what each command's arguments complete to, in
// order, and their names in its usage line.
var completionArgs = map[string]struct {
	values []completion.Value
	names  []string
	rest   bool // the last one repeats
}{
	"mount":      {[]completion.Value{completion.Archive, completion.Dir}, []string{"ARCHIVE", "MOUNTPOINT"}, false},
	"ls":         {[]completion.Value{completion.Archive}, []string{"ARCHIVE"}, true},
	"status":     {[]completion.Value{completion.MountPoint}, nil, false},
	"inspect":    {[]completion.Value{completion.Archive, completion.None}, []string{"ARCHIVE", "KEY"}, true},
	"index":      {[]completion.Value{completion.Archive, completion.None}, []string{"ARCHIVE", "KEY"}, true},
	"pack":       {[]completion.Value{completion.Archive, completion.File}, []string{"IN", "OUT"}, false},
	"unmount":    {[]completion.Value{completion.MountPoint}, []string{"MOUNTPOINT"}, false},
	"serve":      {[]completion.Value{completion.Archive}, nil, false},
	"completion": {[]completion.Value{completion.ShellName}, []string{"SHELL"}, false},
}

// completionSpec describes every command, its flags and its arguments,
// for the completion scripts.
func completionSpec() *completion.Spec {
	spec := &completion.Spec{MountOptions: mountOptionNames()}
	for _, n := range commandNames() {
		args := completionArgs[n]
		spec.Commands = append(spec.Commands, completion.Command{
			Name: n, Summary: commands[n].summary, Aliases: aliasesOf(n), Flags: completionFlags(n),
			Args: args.values, ArgNames: args.names, Rest: args.rest,
		})
	}
	return spec
}

// completionFlags are command name's visible flags as completions see
// them.
func completionFlags(name string) []completion.Flag {
	var out []completion.Flag
	fl := flagsOf(name)
	rows := flagRows(name, fl, true)
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		cf := completion.Flag{Long: f.Name, Short: f.Shorthand, Usage: rows[len(out)].usage}
		cf.TakesValue = f.Value.Type() != "bool"
		cf.Repeats = strings.HasSuffix(f.Value.Type(), "Array") || strings.HasSuffix(f.Value.Type(), "Slice")
		if cf.TakesValue {
			switch varname, _ := pflag.UnquoteUsage(f); {
			case f.Name == "options":
				cf.Value = completion.MountOption
			case varname == "FILE":
				cf.Value = completion.File
			case varname == "DIR":
				cf.Value = completion.Dir
			}
		}
		out = append(out, cf)
	})
	return out
}

// aliasesOf are the other names of command name.
func aliasesOf(name string) []string {
	var out []string
	for a, n := range aliases {
		if n == name {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}
