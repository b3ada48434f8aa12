// Package shellcomp completes command lines in bash, zsh and fish with a
// completion script loaded, as a user pressing tab would: the tests of
// the scripts package completion writes, of those `npzfs completion`
// writes (cmd/npzfs) and of what they offer on a live mount (integration)
// share it.
package shellcomp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// The shells Complete knows. Zsh loads the script as an installed
// #compdef file on $fpath; ZshSourced sources it.
const (
	Bash       = "bash"
	Fish       = "fish"
	Zsh        = "zsh"
	ZshSourced = "zsh-sourced"
)

// ErrNoShell is returned, wrapped, when the shell is not installed.
var ErrNoShell = errors.New("shell not installed")

// Complete loads script, the completion script for the command named by
// each line's first word, into shell and completes the last word of each
// line in the folder dir (a line ending in a space completes a new word).
// It returns each line's offer: the words as the shell will read them
// back (unquoted: each shell quotes what it inserts), sorted, without
// repeats, with a folder's trailing slash and fish's descriptions removed.
func Complete(shell, script, dir string, lines []string) ([][]string, error) {
	exe, err := exec.LookPath(strings.TrimSuffix(shell, "-sourced"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shell, ErrNoShell)
	}
	tmp, err := os.MkdirTemp("", "shellcomp")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var args []string
	switch shell {
	case Bash:
		args = []string{"--norc", "-c", bashDriver, "bash", script}
	case Fish:
		args = []string{"--no-config", "-c", fishDriver, script}
	case Zsh, ZshSourced:
		mode := "fpath"
		if shell == ZshSourced {
			mode = "source"
		}
		args = []string{"-f", "-c", zshDriver, "zsh", mode, script, tmp}
	default:
		return nil, fmt.Errorf("shellcomp: unknown shell %q", shell)
	}
	cmd := exec.Command(exe, append(args, lines...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+tmp, "XDG_DATA_HOME="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		return nil, fmt.Errorf("%s: %v: %s", shell, err, strings.TrimSpace(stderr.String()))
	}
	blocks := strings.Split(string(out), "\x00\n")
	if len(blocks) != len(lines)+1 || blocks[len(lines)] != "" {
		return nil, fmt.Errorf("%s: %d answers for %d lines:\n%s", shell, len(blocks)-1, len(lines), out)
	}
	offers := make([][]string, len(lines))
	for i, b := range blocks[:len(lines)] {
		offers[i] = words(b)
	}
	return offers, nil
}

// words is one line's offer, one word a line.
func words(block string) []string {
	var ws []string
	for _, w := range strings.Split(block, "\n") {
		w, _, _ = strings.Cut(w, "\t") // fish's description
		if w = strings.TrimSuffix(w, "/"); w != "" {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

// Each driver takes the script and the lines as arguments and prints
// each line's offer, one word a line, ended by a line holding one NUL.

// bashDriver sets COMP_WORDS and COMP_CWORD as bash's programmable
// completion does (words split at blanks outside quotes, quotes and
// backslashes kept; not at COMP_WORDBREAKS' other characters) and calls
// the function complete -p names for the command.
const bashDriver = `source "$1" || exit 9
shift
for line; do
  COMP_WORDS=() w= q=
  for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    if [[ $q == '"' && $c == '\\' ]]; then
      w+=$c${line:i+1:1}
      ((i++))
    elif [[ -n $q ]]; then
      w+=$c
      [[ $c == "$q" ]] && q=
    elif [[ $c == '\' ]]; then
      w+=$c${line:i+1:1}
      ((i++))
    elif [[ $c == "'" || $c == '"' ]]; then
      q=$c
      w+=$c
    elif [[ $c == ' ' ]]; then
      [[ -n $w ]] && COMP_WORDS+=("$w")
      w=
    else
      w+=$c
    fi
  done
  COMP_WORDS+=("$w")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line COMP_POINT=${#line}
  spec=$(complete -p "${COMP_WORDS[0]}") || exit 9
  [[ $spec =~ -F\ ([^ ]+) ]] || exit 9
  COMPREPLY=()
  "${BASH_REMATCH[1]}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  (( ${#COMPREPLY[@]} )) && printf '%s\n' "${COMPREPLY[@]}"
  printf '\0\n'
done
`

// fishDriver asks fish's own completer, complete -C.
const fishDriver = `source $argv[1]; or exit 9
for line in $argv[2..-1]
  complete -C $line
  printf '\0\n'
end
`

// zshDriver completes in an interactive zsh on a pseudo-terminal (zsh's
// zpty module), since zsh completes only inside its line editor: it
// types each line and a tab, and compadd, wrapped, writes down every
// match it is given, with the prefix zsh set aside in IPREFIX (the "a,"
// of "-o a,b"), unquoted where compadd is told they are quoted (-Q, as
// _files gives them). Arguments: how the script is loaded (fpath: as an
// installed #compdef file; source: sourced), the script, a scratch
// folder, then the lines. It fails if the shell has not answered within a
// minute.
const zshDriver = `mode=$1 script=$2 tmp=$3
shift 3
zmodload zsh/zpty || exit 9
out=$tmp/matches
: >$out
if [[ $mode == fpath ]]; then
  mkdir -p $tmp/fn && cp $script $tmp/fn/_${${(z)1}[1]} || exit 9
  setup="fpath=(${(q)tmp}/fn \$fpath); autoload -U compinit; compinit -u -d ${(q)tmp}/dump"
else
  setup="autoload -U compinit; compinit -u -d ${(q)tmp}/dump; source ${(q)script}"
fi
zpty z zsh -f -i
zpty -w z "PS1=; unsetopt beep; $setup"
zpty -w z 'compadd() {
  if [[ " $* " == *" -"[OAD]* ]]; then builtin compadd "$@"; return; fi
  local -a hits
  local a
  builtin compadd -O hits "$@"
  for a; do
    [[ $a == (-|--) ]] && break
    [[ $a == -[^-]* && $a == *Q* ]] && { hits=(${(Q)hits}); break }
  done
  (( $#hits )) && print -rl -- $IPREFIX${^hits} >>'${(q)out}'
  builtin compadd "$@"
}'
for line; do
  zpty -w -n z "$line"$'\t'
  zpty -w -n z $'\C-a\C-k'
  zpty -w z "print -r -- __done__ >>${(q)out}"
done
for i in {1..600}; do
  while zpty -r -t z junk; do :; done
  done=(${(M)${(f)"$(<$out)"}:#__done__})
  (( $#done == $# )) && break
  sleep 0.1
done
zpty -d z
(( $#done == $# )) || { print -u2 "zsh did not finish completing"; exit 8 }
for l in ${(f)"$(<$out)"}; do
  if [[ $l == __done__ ]]; then printf '\0\n'; else print -r -- $l; fi
done
`
