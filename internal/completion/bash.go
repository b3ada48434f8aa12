package completion

import (
	"fmt"
	"io"
	"strings"
)

// writeBash writes the bash completion script: the functions that
// complete (bashFuncs), then the tables they read.
func writeBash(w io.Writer, spec *Spec) {
	words := strings.Join(spec.commandWords(), " ")
	fmt.Fprintf(w, bashFuncs, File, Dir, Archive, MountPoint, MountOption, strings.Join(spec.MountOptions, " "),
		ShellName, strings.Join(Shells, " "), CommandName, words, words)
	writeBashTables(w, spec)
}

// writeBashTables writes the tables of the bash script: per command, its
// flags, those that take a value, what each value and argument completes
// to.
func writeBashTables(w io.Writer, spec *Spec) {
	fmt.Fprintf(w, "_npzfs_flags() {\n  case $1 in\n")
	for _, c := range spec.Commands {
		fmt.Fprintf(w, "    %s) echo %s ;;\n", bashCase(&c), strings.Join(c.flagWords(), " "))
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_valued() {\n  case $1 in\n")
	for _, c := range spec.Commands {
		if v := c.valuedFlags(); len(v) > 0 {
			fmt.Fprintf(w, "    %s) echo %s ;;\n", bashCase(&c), strings.Join(v, " "))
		}
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_flag_value() {\n  case $1:$2 in\n")
	for _, c := range spec.Commands {
		for _, f := range c.Flags {
			if f.Value == None {
				continue
			}
			pats := []string{c.Name + ":--" + f.Long}
			if f.Short != "" {
				pats = append(pats, c.Name+":-"+f.Short)
			}
			for _, a := range c.Aliases {
				pats = append(pats, a+":--"+f.Long)
			}
			fmt.Fprintf(w, "    %s) echo %s ;;\n", strings.Join(pats, "|"), f.Value)
		}
	}
	fmt.Fprintf(w, "  esac\n}\n\n_npzfs_arg() { # COMMAND N: what its argument N (from 0) is\n  case $1 in\n")
	for _, c := range spec.Commands {
		if len(c.Args) == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s)\n      case $2 in\n", bashCase(&c))
		for i, v := range c.Args {
			fmt.Fprintf(w, "        %d) echo %s ;;\n", i, bashWord(v))
		}
		fmt.Fprintf(w, "      esac ;;\n")
	}
	fmt.Fprintf(w, "    help) [[ $2 == 0 ]] && echo %s ;;\n  esac\n}\n\ncomplete -F _npzfs npzfs\n", CommandName)
}

// bashCase is a case pattern for command name and its aliases.
func bashCase(c *Command) string {
	return strings.Join(c.names(), "|")
}

// bashWord is a value kind as an echo argument ("" for none).
func bashWord(v Value) Value {
	if v == None {
		return "none"
	}
	return v
}

// bashFuncs are the bash script's functions, a format for Fprintf: the
// value kinds, -o's options, the shells, and the command words.
const bashFuncs = `# bash completion for npzfs. Made by: npzfs completion bash

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

`
