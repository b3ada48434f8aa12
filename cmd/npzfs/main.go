// Command npzfs mounts NumPy .npz archives as read-only folders and
// inspects them.
//
// Exit codes, for every command:
//
//	0  success
//	1  the operation failed (unreadable file, mount refused, ...)
//	2  the command line is wrong (unknown command or flag, missing argument)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/npzfs/npzfs/npz"
	"github.com/spf13/pflag"
)

// Exit codes, documented in the package comment and the README.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// version, when set at build time with -ldflags "-X main.version=...",
// overrides the version Go records in the binary (see versionString).
var version = ""

// command is one subcommand: its one-line summary, usage line, longer
// help, and body.
type command struct {
	summary string
	usage   string // after "npzfs NAME "
	help    string // paragraphs shown by --help after the summary; may be empty
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]*command{}

var aliases = map[string]string{"umount": "unmount"}

// linuxOnly says, for each command that is not one on this system, why
// (see nomount.go).
var linuxOnly = map[string]string{}

func register(name string, c *command) { commands[name] = c }

func init() {
	register("version", &command{
		summary: "print the version",
		usage:   "",
		run: func(args []string, stdout, stderr io.Writer) int {
			fl := newFlags("version", stdout, stderr)
			if code, done := parseFlags(fl, args); done {
				return code
			}
			if fl.NArg() != 0 {
				return usageError(stderr, "version", "takes no arguments")
			}
			fmt.Fprintf(stdout, "npzfs %s\n", versionString())
			return exitOK
		},
	})
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		switch {
		case len(args) > 2:
			return usageError(stderr, "help", fmt.Sprintf("takes at most one command, not also %q", args[2]))
		case len(args) == 2 && (args[1] == "help" || args[1] == "-h" || args[1] == "--help"):
			fmt.Fprint(stdout, helpHelp)
			return exitOK
		case len(args) == 2 && args[1] == "--man":
			writeMan(stdout, versionString())
			return exitOK
		case len(args) == 2:
			if c, ok := lookup(args[1]); ok {
				return c.run([]string{"--help"}, stdout, stderr)
			}
			if why, ok := linuxOnly[args[1]]; ok {
				return fail(stderr, args[1], errors.New(why))
			}
			return usageError(stderr, "", unknownCommand(args[1]))
		}
		printHelp(stdout)
		return exitOK
	case "--version":
		name = "version"
	}
	if isHelperCall(args) {
		return runHelper(args, stdout, stderr)
	}
	c, ok := lookup(name)
	if why, elsewhere := linuxOnly[name]; !ok && elsewhere {
		return fail(stderr, name, errors.New(why))
	}
	if !ok {
		return usageError(stderr, "", unknownCommand(name))
	}
	return c.run(args[1:], stdout, stderr)
}

// helpHelp is what "npzfs help help" prints.
const helpHelp = `Usage: npzfs help [COMMAND | --man]

show the list of commands, or the help of one (the same as
npzfs COMMAND --help); with --man, print the manual page npzfs(1), of
which --help shows the short form (read it with: npzfs help --man | man -l -)

Exit codes: 0 success, 1 the operation failed, 2 bad command line.
`

func lookup(name string) (*command, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	c, ok := commands[name]
	return c, ok
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "npzfs: mount NumPy .npz archives as read-only folders")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: npzfs COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	width := len("help")
	for _, n := range commandNames() {
		width = max(width, len(n))
	}
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "show help for a command: npzfs help COMMAND")
	fmt.Fprintln(w)
	fmt.Fprintln(w, exitCodesLine)
	fmt.Fprintln(w, moreHelp)
}

// newFlags returns a flag set for a subcommand: --help prints the
// command's full help to stdout; flag errors are one line on stderr.
func newFlags(name string, stdout, stderr io.Writer) *pflag.FlagSet {
	fl := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.SortFlags = false
	fl.Usage = func() { printUsage(stdout, name, fl) }
	return fl
}

// parseFlags parses args; done is true when the command should return code
// at once (after --help, or a flag error, which it reports).
func parseFlags(fl *pflag.FlagSet, args []string) (code int, done bool) {
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, true
		}
		fmt.Fprintf(fl.Output(), "npzfs %s: %v%s (see 'npzfs %s --help')\n", fl.Name(), flagValueError(err), suggestFlag(fl, err), fl.Name())
		return exitUsage, true
	}
	return 0, false
}

// flagValueError says what a flag's value must be, in place of pflag's
// message for a value that does not parse, which quotes the strconv or
// time function that refused it.
func flagValueError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	var want string
	switch ive.GetFlag().Value.Type() {
	case "int", "int32", "int64":
		want = "a whole number"
	case "uint", "uint32", "uint64":
		want = "a whole number, 0 or more"
	case "duration":
		want = "a duration such as 90s, 5m or 1h30m"
	case "bool":
		want = "true or false, or no value"
	case "verify":
		want = "auto, strict or lazy"
	default:
		return err
	}
	name, value := ive.GetFlag().Name, ive.GetValue()
	if errors.Is(err, strconv.ErrRange) {
		if most, _, ok := sizeBound(name); ok && !strings.HasPrefix(value, "-") {
			return fmt.Errorf("--%s %s: too large: give at most %d", name, value, most)
		}
		return fmt.Errorf("--%s %s: too large", name, value)
	}
	return fmt.Errorf("--%s takes %s, not %q", name, want, value)
}

// usageError prints one line about a bad command line and returns
// exitUsage; cmd is "" for npzfs itself.
func usageError(stderr io.Writer, cmd, msg string) int {
	name := strings.TrimSpace("npzfs " + cmd)
	see := strings.TrimSpace("npzfs help " + cmd)
	fmt.Fprintf(stderr, "%s: %s (see '%s')\n", name, msg, see)
	return exitUsage
}

// argsError is the usage error for a wrong number of arguments: it names
// what is missing, or the first argument too many.
func argsError(stderr io.Writer, cmd string, args []string, want int, what string) int {
	if len(args) > want {
		return usageError(stderr, cmd, fmt.Sprintf("unexpected argument %q: takes %s", args[want], what))
	}
	return usageError(stderr, cmd, "needs "+what)
}

// fail prints one line about a failed operation and returns exitFail.
// An operation given up at a signal (its context cancelled: see
// interruptible) says so.
func fail(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, context.Canceled) {
		err = errors.New("interrupted")
	}
	fmt.Fprintf(stderr, "npzfs %s: %v\n", cmd, err)
	return exitFail
}

// interruptible is the context of a command that may wait on a server:
// done at the first SIGINT (Ctrl-C) or SIGTERM, so that what it waits
// for is given up and the command ends, saying why, at once. A second
// signal is the default action again: the process ends.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// verifyFlag is --verify: when members are verified, an npz.VerifyMode
// given by name.
type verifyFlag struct{ mode npz.VerifyMode }

func (v *verifyFlag) String() string { return v.mode.String() }
func (v *verifyFlag) Type() string   { return "verify" }
func (v *verifyFlag) Set(s string) error {
	m, err := npz.ParseVerifyMode(s)
	v.mode = m
	return err
}

// verifyUsage is --verify's help (its --help line is shortUsage's).
const verifyUsage = "verify members (check their CRC-32 over all of their bytes) before serving their first byte, as `MODE` says: " +
	"auto (those of a local archive up to 256 MiB, once: a later mount that finds their saved index does not again; larger and remote ones are served unverified, with a log line), " +
	"strict (every member, and every read of a stored member checked block by block), lazy (none: a deflated member's CRC-32 is checked where a read reaches its end)"
