package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// completionShells are the shells npzfs completion writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

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
	spec := completionSpec()
	switch fl.Arg(0) {
	case "bash":
		writeBash(stdout, spec)
	case "zsh":
		writeZsh(stdout, spec)
	case "fish":
		writeFish(stdout, spec)
	default:
		return usageError(stderr, "completion", fmt.Sprintf("unknown shell %q: give bash, zsh or fish", fl.Arg(0)))
	}
	return exitOK
}

// What a command's argument or a flag's value completes to.
const (
	valNone    = ""         // nothing to offer (numbers, URLs, keys)
	valFile    = "file"     // any file
	valDir     = "dir"      // a folder
	valArchive = "archive"  // .npz and .npy files, and folders
	valMount   = "mount"    // a current npzfs mount point
	valOptions = "options"  // -o's mount options, comma-separated
	valShell   = "shell"    // completionShells
	valCommand = "commands" // a command name
)

// argValues are the values of each command's arguments, in order.
var argValues = map[string][]string{
	"mount":      {valArchive, valDir},
	"ls":         {valArchive},
	"status":     {valMount},
	"inspect":    {valArchive, valNone},
	"index":      {valArchive, valNone},
	"pack":       {valArchive, valFile},
	"unmount":    {valMount},
	"serve":      {valArchive},
	"completion": {valShell},
	"version":    {},
}

// compFlag is one flag as completions see it.
type compFlag struct {
	long, short string
	usage       string // the one-line usage
	value       string // what its value completes to; takesValue says if it has one
	takesValue  bool
	repeats     bool
}

// compCommand is one command as completions see it.
type compCommand struct {
	name, summary string
	flags         []compFlag
	args          []string
}

// completionSpec gathers every command's flags and arguments.
func completionSpec() []compCommand {
	var out []compCommand
	for _, n := range commandNames() {
		c := compCommand{name: n, summary: commands[n].summary, args: argValues[n]}
		fl := flagsOf(n)
		rows := flagRows(n, fl, true)
		i := 0
		fl.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			cf := compFlag{long: f.Name, short: f.Shorthand, usage: rows[i].usage}
			i++
			cf.takesValue = f.Value.Type() != "bool"
			cf.repeats = strings.HasSuffix(f.Value.Type(), "Array") || strings.HasSuffix(f.Value.Type(), "Slice")
			if cf.takesValue {
				switch varname, _ := pflag.UnquoteUsage(f); {
				case f.Name == "options":
					cf.value = valOptions
				case varname == "FILE":
					cf.value = valFile
				case varname == "DIR":
					cf.value = valDir
				}
			}
			c.flags = append(c.flags, cf)
		})
		out = append(out, c)
	}
	return out
}

// mountOptionNames are the values -o completes to: the options passed to
// the mount and the flags that are options too, sorted.
func mountOptionNames() []string {
	var out []string
	for o := range allowedOptions {
		out = append(out, o)
	}
	fl := flagsOf("mount")
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || notOptions[f.Name] {
			return
		}
		name := strings.ReplaceAll(f.Name, "-", "_")
		if f.Value.Type() != "bool" {
			name += "="
		}
		out = append(out, name)
	})
	sort.Strings(out)
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

// valuedFlags are the spellings of c's flags that take a value, as one
// word each.
func (c *compCommand) valuedFlags() []string {
	var out []string
	for _, f := range c.flags {
		if !f.takesValue {
			continue
		}
		out = append(out, "--"+f.long)
		if f.short != "" {
			out = append(out, "-"+f.short)
		}
	}
	return out
}

// flagWords are all of c's flags' spellings.
func (c *compCommand) flagWords() []string {
	var out []string
	for _, f := range c.flags {
		out = append(out, "--"+f.long)
		if f.short != "" {
			out = append(out, "-"+f.short)
		}
	}
	return append(out, "--help")
}

func commandWords(spec []compCommand) []string {
	var out []string
	for _, c := range spec {
		out = append(out, c.name)
		out = append(out, aliasesOf(c.name)...)
	}
	return append(out, "help")
}

// writeBash writes the bash completion script.
func writeBash(w io.Writer, spec []compCommand) {
	fmt.Fprintf(w, `# bash completion for npzfs. Made by: npzfs completion bash

# _npzfs_mounts lists the npzfs mount points (the mount table escapes
# blanks as \040, which printf %%b turns back). Its fields are split at
# blanks whatever IFS the caller set.
_npzfs_mounts() {
  local src dir type rest
  while IFS=$' \t' read -r src dir type rest; do
    [[ $type == fuse.npzfs ]] && printf '%%b\n' "$dir"
  done </proc/self/mounts
}

_npzfs_reply() { # WORDS...: the words that start with $cur
  local IFS=$'\n'
  COMPREPLY+=($(compgen -W "$*" -- "$cur"))
}

# _npzfs_dequote WORD: sets dcur to WORD as the shell will read it, its
# quotes and backslashes removed (a quote still open is closed), for
# compgen, which takes a word as it is. Readline quotes the paths offered
# back (compopt -o filenames).
_npzfs_dequote() {
  local w=$1 c q= i
  dcur=
  for ((i = 0; i < ${#w}; i++)); do
    c=${w:i:1}
    if [[ $q == "'" ]]; then
      [[ $c == "'" ]] && q= || dcur+=$c
    elif [[ $c == '\' ]] && ((i + 1 < ${#w})) && [[ -z $q || ${w:i+1:1} == [\"\\\$] || ${w:i+1:1} == $'\x60' ]]; then
      ((i++))
      dcur+=${w:i:1}
    elif [[ -z $q && ( $c == "'" || $c == '"' ) ]]; then
      q=$c
    elif [[ $q == '"' && $c == '"' ]]; then
      q=
    else
      dcur+=$c
    fi
  done
}

_npzfs_files() { # [dirs|archives|mounts]
  local IFS=$'\n' dcur
  _npzfs_dequote "$cur"
  compopt -o filenames 2>/dev/null
  case $1 in
    dirs) COMPREPLY+=($(compgen -d -- "$dcur")) ;;
    archives)
      COMPREPLY+=($(compgen -d -- "$dcur"))
      COMPREPLY+=($(compgen -f -X '!*.npz' -- "$dcur"))
      COMPREPLY+=($(compgen -f -X '!*.npy' -- "$dcur")) ;;
    mounts)
      local m
      while IFS= read -r m; do
        [[ $m == "$dcur"* ]] && COMPREPLY+=("$m")
      done < <(_npzfs_mounts) ;;
    *) COMPREPLY+=($(compgen -f -- "$dcur")) ;;
  esac
}

_npzfs_value() { # KIND: complete $cur as a value of that kind
  case $1 in
    %[1]s) _npzfs_files ;;
    %[2]s) _npzfs_files dirs ;;
    %[3]s) _npzfs_files archives ;;
    %[4]s) _npzfs_files mounts ;;
    %[5]s)
      local done=
      [[ $cur == *,* ]] && done=${cur%%,*},
      local o
      for o in %[6]s; do
        [[ $done$o == "$cur"* ]] && COMPREPLY+=("$done$o")
      done
      compopt -o nospace 2>/dev/null ;;
    %[7]s) _npzfs_reply %[8]s ;;
    %[9]s) _npzfs_reply %[10]s ;;
  esac
}

_npzfs() {
  local cur prev words cword
  if declare -F _get_comp_words_by_ref &>/dev/null; then
    _get_comp_words_by_ref -n =: cur prev words cword
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword-1]}
  fi
  COMPREPLY=()
  # The command, and how many arguments come before the word completed.
  local cmd= n=0 i w skip=
  for ((i = 1; i < cword; i++)); do
    w=${words[i]}
    if [[ -n $skip ]]; then
      skip=
      [[ $w == = ]] && skip=1 # --flag = value, split by COMP_WORDBREAKS
      continue
    fi
    if [[ -z $cmd ]]; then
      [[ $w == -* ]] || cmd=$w
      continue
    fi
    case $w in
      --*=*) ;;
      -*) [[ " $(_npzfs_valued "$cmd") " == *" $w "* ]] && skip=1 ;;
      *) ((n++)) ;;
    esac
  done
  if [[ -z $cmd ]]; then
    _npzfs_reply %[11]s
    return
  fi
  # A flag's value: --flag VALUE, --flag=VALUE.
  local flag=
  if [[ $cur == --*=* ]]; then
    flag=${cur%%%%=*}
    cur=${cur#*=}
  elif [[ $prev == = && ${words[cword-2]} == --* ]]; then
    flag=${words[cword-2]}
  elif [[ $prev == -* && " $(_npzfs_valued "$cmd") " == *" $prev "* ]]; then
    flag=$prev
  fi
  if [[ -n $flag ]]; then
    _npzfs_value "$(_npzfs_flag_value "$cmd" "$flag")"
    return
  fi
  if [[ $cur == -* ]]; then
    _npzfs_reply $(_npzfs_flags "$cmd")
    return
  fi
  _npzfs_value "$(_npzfs_arg "$cmd" "$n")"
}

`, valFile, valDir, valArchive, valMount, valOptions, strings.Join(mountOptionNames(), " "),
		valShell, strings.Join(completionShells, " "), valCommand, strings.Join(commandWords(spec), " "),
		strings.Join(commandWords(spec), " "))

	// The tables: per command, its flags, those that take a value, what
	// each value and argument completes to.
	fmt.Fprintf(w, "_npzfs_flags() {\n  case $1 in\n")
	for _, c := range spec {
		fmt.Fprintf(w, "    %s) echo %s ;;\n", bashCase(c.name), strings.Join(c.flagWords(), " "))
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_valued() {\n  case $1 in\n")
	for _, c := range spec {
		if v := c.valuedFlags(); len(v) > 0 {
			fmt.Fprintf(w, "    %s) echo %s ;;\n", bashCase(c.name), strings.Join(v, " "))
		}
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_flag_value() {\n  case $1:$2 in\n")
	for _, c := range spec {
		for _, f := range c.flags {
			if f.value == valNone {
				continue
			}
			pats := []string{c.name + ":--" + f.long}
			if f.short != "" {
				pats = append(pats, c.name+":-"+f.short)
			}
			for _, a := range aliasesOf(c.name) {
				pats = append(pats, a+":--"+f.long)
			}
			fmt.Fprintf(w, "    %s) echo %s ;;\n", strings.Join(pats, "|"), f.value)
		}
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_arg() { # COMMAND N: what its argument N (from 0) is\n  case $1 in\n")
	for _, c := range spec {
		if len(c.args) == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s)\n      case $2 in\n", bashCase(c.name))
		for i, v := range c.args {
			fmt.Fprintf(w, "        %d) echo %s ;;\n", i, bashWord(v))
		}
		fmt.Fprintf(w, "      esac ;;\n")
	}
	fmt.Fprintf(w, "    help) [[ $2 == 0 ]] && echo %s ;;\n  esac\n}\n\ncomplete -F _npzfs npzfs\n", valCommand)
}

// bashCase is a case pattern for command name and its aliases.
func bashCase(name string) string {
	return strings.Join(append([]string{name}, aliasesOf(name)...), "|")
}

// bashWord is a value kind as an echo argument ("" for none).
func bashWord(v string) string {
	if v == valNone {
		return "none"
	}
	return v
}

// zshEscape makes s safe inside a single-quoted _arguments spec's
// [description].
func zshEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "'", `'\''`)
	s = strings.ReplaceAll(s, "[", `\[`)
	s = strings.ReplaceAll(s, "]", `\]`)
	s = strings.ReplaceAll(s, ":", `\:`)
	return s
}

// shellQuote quotes s in single quotes, for bash or zsh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// zshAction is the _arguments action for a value kind.
func zshAction(v string) string {
	switch v {
	case valFile:
		return "_files"
	case valDir:
		return "_files -/"
	case valArchive:
		return `_files -g "*.(npz|npy)(-.)"`
	case valMount:
		return "_npzfs_mounts"
	case valOptions:
		return "_npzfs_options"
	case valShell:
		return "(" + strings.Join(completionShells, " ") + ")"
	}
	return " "
}

// writeZsh writes the zsh completion script (a #compdef file for $fpath,
// which also works when sourced).
func writeZsh(w io.Writer, spec []compCommand) {
	fmt.Fprintf(w, `#compdef npzfs
# zsh completion for npzfs. Made by: npzfs completion zsh

_npzfs_mounts() {
  local -a mps
  local src dir type rest
  while read -r src dir type rest; do
    [[ $type == fuse.npzfs ]] && mps+=("$(printf '%%b' "$dir")")
  done </proc/self/mounts
  _describe -t mounts 'npzfs mount point' mps
}

_npzfs_options() {
  _sequence compadd -S '' - %s
}

_npzfs() {
  local -a cmds
  cmds=(
`, strings.Join(mountOptionNames(), " "))
	for _, c := range spec {
		for _, n := range append([]string{c.name}, aliasesOf(c.name)...) {
			fmt.Fprintf(w, "    %s\n", shellQuote(n+":"+c.summary))
		}
	}
	fmt.Fprintf(w, "    'help:show help for a command'\n  )\n")
	fmt.Fprintf(w, `  if (( CURRENT == 2 )); then
    _describe -t commands 'npzfs command' cmds
    return
  fi
  local cmd=$words[2]
  shift words
  (( CURRENT-- ))
  case $cmd in
`)
	for _, c := range spec {
		fmt.Fprintf(w, "    %s)\n      _arguments -s -S \\\n", bashCase(c.name))
		for _, f := range c.flags {
			fmt.Fprintf(w, "        %s \\\n", zshFlagSpec(f))
		}
		fmt.Fprintf(w, "        '(- *)--help[show help]'")
		for i, v := range c.args {
			pos := fmt.Sprint(i + 1)
			if i == len(c.args)-1 && (c.name == "index" || c.name == "inspect") {
				pos = "*"
			}
			fmt.Fprintf(w, " \\\n        '%s:%s:%s'", pos, strings.ToLower(argName(c.name, i)), zshAction(v))
		}
		fmt.Fprintf(w, " ;;\n")
	}
	fmt.Fprintf(w, `    help)
      _describe -t commands 'npzfs command' cmds ;;
  esac
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _npzfs "$@"
else
  compdef _npzfs npzfs
fi
`)
}

// zshFlagSpec is one flag as an _arguments spec.
func zshFlagSpec(f compFlag) string {
	desc := "[" + zshEscape(f.usage) + "]"
	arg := ""
	if f.takesValue {
		arg = ":" + strings.ToLower(f.long) + ":" + zshAction(f.value)
	}
	rep := ""
	if f.repeats {
		rep = "*"
	}
	long := "--" + f.long
	if f.takesValue {
		long += "="
	}
	if f.short == "" {
		return "'" + rep + long + desc + arg + "'"
	}
	short := "-" + f.short
	if f.takesValue {
		short += "+"
	}
	excl := ""
	if !f.repeats {
		excl = "(-" + f.short + " --" + f.long + ")"
	}
	// The star goes inside the quotes: unquoted, zsh would take it for a
	// glob and drop the spec.
	return "'" + excl + rep + "'{" + short + "," + long + "}'" + desc + arg + "'"
}

// argName names argument i of a command, from its usage line.
func argName(cmd string, i int) string {
	names := map[string][]string{
		"mount":      {"ARCHIVE", "MOUNTPOINT"},
		"ls":         {"ARCHIVE"},
		"inspect":    {"ARCHIVE", "KEY"},
		"index":      {"ARCHIVE", "KEY"},
		"pack":       {"IN", "OUT"},
		"unmount":    {"MOUNTPOINT"},
		"completion": {"SHELL"},
	}
	if n := names[cmd]; i < len(n) {
		return n[i]
	}
	return "ARG"
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// fishArgs is what complete's -a (and -F, -f) gives for a value kind.
func fishArgs(v string) string {
	switch v {
	case valFile:
		return "-F"
	case valDir:
		return "-f -a '(__fish_complete_directories)'"
	case valArchive:
		return "-f -a '(__npzfs_archives)'"
	case valMount:
		return "-f -a '(__npzfs_mounts)'"
	case valOptions:
		return "-f -a '(__npzfs_options)'"
	case valShell:
		return "-f -a " + fishQuote(strings.Join(completionShells, " "))
	}
	return "-f"
}

// writeFish writes the fish completion script.
func writeFish(w io.Writer, spec []compCommand) {
	fmt.Fprintf(w, `# fish completion for npzfs. Made by: npzfs completion fish

function __npzfs_mounts
    while read -l src dir type rest
        test "$type" = fuse.npzfs; and printf '%%b\n' $dir
    end </proc/self/mounts
end

# __npzfs_archives: archives and folders. The token is taken as fish will
# read it (quotes and backslashes removed); fish quotes what it inserts.
function __npzfs_archives
    for f in (__fish_complete_path (string unescape -- (commandline -ct)))
        string match -qr '(\.np[zy]|/)(\t.*)?$' -- $f; and echo $f
    end
end

function __npzfs_options
    set -l tok (commandline -ct)
    set -l done (string replace -r '[^,]*$' '' -- $tok)
    for o in %s
        echo $done$o
    end
end

# __npzfs_arg N: the word completed is argument N (from 0) of the command.
function __npzfs_arg
    set -l words (commandline -opc)
    set -l n 0
    set -l skip 0
    for w in $words[3..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '--*=*'
            case %s
                set skip 1
            case '-*'
            case '*'
                set n (math $n + 1)
        end
    end
    test $n = $argv[1]
end

complete -c npzfs -f
complete -c npzfs -n __fish_use_subcommand -a help -d 'show help for a command'
`, strings.Join(mountOptionNames(), " "), fishValuedCases(spec))
	for _, c := range spec {
		names := append([]string{c.name}, aliasesOf(c.name)...)
		cond := "__fish_seen_subcommand_from " + strings.Join(names, " ")
		fmt.Fprintf(w, "\n# %s\n", c.name)
		for _, n := range names {
			fmt.Fprintf(w, "complete -c npzfs -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(c.summary))
		}
		for _, f := range c.flags {
			line := "complete -c npzfs -n " + fishQuote(cond) + " -l " + f.long
			if f.short != "" {
				line += " -s " + f.short
			}
			if f.takesValue {
				line += " -r " + fishArgs(f.value)
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishQuote(f.usage))
		}
		for i, v := range c.args {
			if v == valNone {
				continue
			}
			argCond := cond
			if i < len(c.args)-1 || i > 0 {
				argCond += "; and __npzfs_arg " + fmt.Sprint(i)
			}
			fmt.Fprintf(w, "complete -c npzfs -n %s %s\n", fishQuote(argCond), fishArgs(v))
		}
	}
	fmt.Fprintf(w, "\ncomplete -c npzfs -n '__fish_seen_subcommand_from help' -f -a %s\n", fishQuote(strings.Join(commandWords(spec), " ")))
}

// fishValuedCases is a switch case matching every flag that takes a value
// as the next word, of any command.
func fishValuedCases(spec []compCommand) string {
	var all []string
	for _, c := range spec {
		for _, v := range c.valuedFlags() {
			if !slices.Contains(all, v) {
				all = append(all, v)
			}
		}
	}
	sort.Strings(all)
	for i, v := range all {
		all[i] = fishQuote(v)
	}
	return strings.Join(all, " ")
}
