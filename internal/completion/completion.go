// Package completion writes npzfs's shell completion scripts, for bash,
// zsh and fish, from a description of its commands (Spec): each
// command's flags and arguments, and what each flag's value and each
// argument completes to. The scripts complete archives (.npz and .npy
// files, and folders), folders, the current npzfs mount points (from
// /proc/self/mounts) and -o's mount options themselves; the command line
// describes its commands, from its flag definitions, and prints the
// script.
package completion

import (
	"fmt"
	"io"
)

// Shells are the shells Write writes scripts for.
var Shells = []string{"bash", "zsh", "fish"}

// Value is what a command's argument or a flag's value completes to.
type Value string

// The values there are.
const (
	None        Value = ""         // nothing to offer (numbers, URLs, keys)
	File        Value = "file"     // any file
	Dir         Value = "dir"      // a folder
	Archive     Value = "archive"  // .npz and .npy files, and folders
	MountPoint  Value = "mount"    // a current npzfs mount point
	MountOption Value = "options"  // -o's mount options, comma-separated
	ShellName   Value = "shell"    // one of Shells
	CommandName Value = "commands" // a command name
)

// Spec is what the scripts complete.
type Spec struct {
	Commands []Command
	// MountOptions are what -o's values complete to, sorted: options
	// passed to a mount, and flags given as options ("cache_mb=").
	MountOptions []string
}

// Command is one command as completions see it.
type Command struct {
	Name, Summary string
	Aliases       []string
	Flags         []Flag
	// Args are what each argument completes to, in order; ArgNames name
	// them as the usage line does ("ARG" where it names none). With Rest
	// the last one repeats (KEY...).
	Args     []Value
	ArgNames []string
	Rest     bool
}

// Flag is one flag as completions see it.
type Flag struct {
	Long, Short string
	Usage       string // the one-line usage
	// Value is what the flag's value completes to, when it takes one
	// (TakesValue); Repeats is set for a flag given more than once.
	Value      Value
	TakesValue bool
	Repeats    bool
}

// Write writes the completion script for shell, one of Shells.
func Write(w io.Writer, shell string, spec *Spec) error {
	switch shell {
	case "bash":
		writeBash(w, spec)
	case "zsh":
		writeZsh(w, spec)
	case "fish":
		writeFish(w, spec)
	default:
		return fmt.Errorf("unknown shell %q", shell)
	}
	return nil
}

// names are c's name and its aliases.
func (c *Command) names() []string { return append([]string{c.Name}, c.Aliases...) }

// valuedFlags are the spellings of c's flags that take a value, as one
// word each.
func (c *Command) valuedFlags() []string {
	var out []string
	for _, f := range c.Flags {
		if !f.TakesValue {
			continue
		}
		out = append(out, "--"+f.Long)
		if f.Short != "" {
			out = append(out, "-"+f.Short)
		}
	}
	return out
}

// flagWords are all of c's flags' spellings.
func (c *Command) flagWords() []string {
	var out []string
	for _, f := range c.Flags {
		out = append(out, "--"+f.Long)
		if f.Short != "" {
			out = append(out, "-"+f.Short)
		}
	}
	return append(out, "--help")
}

// commandWords are the commands' names and aliases, and help.
func (spec *Spec) commandWords() []string {
	var out []string
	for _, c := range spec.Commands {
		out = append(out, c.names()...)
	}
	return append(out, "help")
}
