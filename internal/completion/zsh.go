package completion

import (
	"fmt"
	"io"
	"strings"
)

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

// zshQuote quotes s in single quotes.
func zshQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// zshAction is the _arguments action for a value kind.
func zshAction(v Value) string {
	switch v {
	case File:
		return "_files"
	case Dir:
		return "_files -/"
	case Archive:
		return `_files -g "*.(npz|npy)(-.)"`
	case MountPoint:
		return "_npzfs_mounts"
	case MountOption:
		return "_npzfs_options"
	case ShellName:
		return "(" + strings.Join(Shells, " ") + ")"
	}
	return " "
}

// writeZsh writes the zsh completion script (a #compdef file for $fpath,
// which also works when sourced).
func writeZsh(w io.Writer, spec *Spec) {
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
`, strings.Join(spec.MountOptions, " "))
	for _, c := range spec.Commands {
		for _, n := range c.names() {
			fmt.Fprintf(w, "    %s\n", zshQuote(n+":"+c.Summary))
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
	for _, c := range spec.Commands {
		fmt.Fprintf(w, "    %s)\n      _arguments -s -S \\\n", bashCase(&c))
		for _, f := range c.Flags {
			fmt.Fprintf(w, "        %s \\\n", zshFlagSpec(f))
		}
		fmt.Fprintf(w, "        '(- *)--help[show help]'")
		for i, v := range c.Args {
			pos := fmt.Sprint(i + 1)
			if i == len(c.Args)-1 && c.Rest {
				pos = "*"
			}
			fmt.Fprintf(w, " \\\n        '%s:%s:%s'", pos, strings.ToLower(c.argName(i)), zshAction(v))
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
func zshFlagSpec(f Flag) string {
	desc := "[" + zshEscape(f.Usage) + "]"
	arg := ""
	if f.TakesValue {
		arg = ":" + strings.ToLower(f.Long) + ":" + zshAction(f.Value)
	}
	rep := ""
	if f.Repeats {
		rep = "*"
	}
	long := "--" + f.Long
	if f.TakesValue {
		long += "="
	}
	if f.Short == "" {
		return "'" + rep + long + desc + arg + "'"
	}
	short := "-" + f.Short
	if f.TakesValue {
		short += "+"
	}
	excl := ""
	if !f.Repeats {
		excl = "(-" + f.Short + " --" + f.Long + ")"
	}
	// The star goes inside the quotes: unquoted, zsh would take it for a
	// glob and drop the spec.
	return "'" + excl + rep + "'{" + short + "," + long + "}'" + desc + arg + "'"
}

// argName names argument i of c, as its usage line does.
func (c *Command) argName(i int) string {
	if i < len(c.ArgNames) {
		return c.ArgNames[i]
	}
	return "ARG"
}
