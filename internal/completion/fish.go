package completion

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// fishArgs is what complete's -a (and -F, -f) gives for a value kind.
func fishArgs(v Value) string {
	switch v {
	case File:
		return "-F"
	case Dir:
		return "-f -a '(__fish_complete_directories)'"
	case Archive:
		return "-f -a '(__npzfs_archives)'"
	case MountPoint:
		return "-f -a '(__npzfs_mounts)'"
	case MountOption:
		return "-f -a '(__npzfs_options)'"
	case ShellName:
		return "-f -a " + fishQuote(strings.Join(Shells, " "))
	}
	return "-f"
}

// writeFish writes the fish completion script.
func writeFish(w io.Writer, spec *Spec) {
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
`, strings.Join(spec.MountOptions, " "), fishValuedCases(spec))
	for _, c := range spec.Commands {
		names := c.names()
		cond := "__fish_seen_subcommand_from " + strings.Join(names, " ")
		fmt.Fprintf(w, "\n# %s\n", c.Name)
		for _, n := range names {
			fmt.Fprintf(w, "complete -c npzfs -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(c.Summary))
		}
		for _, f := range c.Flags {
			line := "complete -c npzfs -n " + fishQuote(cond) + " -l " + f.Long
			if f.Short != "" {
				line += " -s " + f.Short
			}
			if f.TakesValue {
				line += " -r " + fishArgs(f.Value)
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishQuote(f.Usage))
		}
		for i, v := range c.Args {
			if v == None {
				continue
			}
			argCond := cond
			if i < len(c.Args)-1 || i > 0 {
				argCond += "; and __npzfs_arg " + fmt.Sprint(i)
			}
			fmt.Fprintf(w, "complete -c npzfs -n %s %s\n", fishQuote(argCond), fishArgs(v))
		}
	}
	fmt.Fprintf(w, "\ncomplete -c npzfs -n '__fish_seen_subcommand_from help' -f -a %s\n", fishQuote(strings.Join(spec.commandWords(), " ")))
}

// fishValuedCases is a switch case matching every flag that takes a value
// as the next word, of any command.
func fishValuedCases(spec *Spec) string {
	var all []string
	for _, c := range spec.Commands {
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
