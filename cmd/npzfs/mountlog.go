//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/npzfs/npzfs/internal/daemon"
)

// mountStatus is what a mount tells its user once it is live: how it
// went (daemon.Ready), and the state log file, when the daemon created
// it.
type mountStatus struct {
	daemon.Ready
	logCreated string
	// indexDir is the mount's --index-dir when not the default, for the
	// note's npzfs index command (set by npzfs mount, not sent by the
	// daemon).
	indexDir string
}

// unreadableLine is the one line npzfs mount prints when some members
// cannot be served or read, or "".
func (st mountStatus) unreadableLine() string {
	if st.Unreadable == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d members cannot be served or read: see npzfs ls %s", st.Unreadable, st.Members, st.Source)
}

// warnings are the lines npzfs mount prints on stderr about a mount that
// succeeded.
func (st mountStatus) warnings() []string {
	var out []string
	if st.Hidden > 0 {
		entries := "1 entry"
		if st.Hidden > 1 {
			entries = fmt.Sprintf("%d entries", st.Hidden)
		}
		out = append(out, fmt.Sprintf("warning: %s is not empty: what it holds (%s) is hidden while it is mounted", st.Mountpoint, entries))
	}
	if line := st.unreadableLine(); line != "" {
		out = append(out, line)
	}
	if st.Unindexed > 0 {
		what := "a deflated member"
		if st.Unindexed > 1 {
			what = fmt.Sprintf("%d deflated members", st.Unindexed)
		}
		index := "npzfs index "
		if st.indexDir != "" {
			index += "--index-dir " + shellWord(st.indexDir) + " "
		}
		out = append(out, fmt.Sprintf("note: %s of %.1f GiB has no saved index: the first read deep into it inflates it from its start (about a second a GiB); to avoid that, run once: %s%s (or mount with --index)",
			what, float64(st.UnindexedBytes)/(1<<30), index, shellWord(st.Source)))
	}
	return out
}

// readyLine is what the daemon writes on the readiness pipe once the mount
// is live: "ok", then tab-separated counts and the log it created.
func (st mountStatus) readyLine() string {
	return fmt.Sprintf("ok\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s", st.Members, st.Unreadable, st.Hidden, st.Unindexed, st.UnindexedBytes, st.Source, st.Mountpoint, st.logCreated)
}

// parseReady reads a readyLine; ok is false for anything else (the
// daemon's one-line reason for failing).
func parseReady(line string) (st mountStatus, ok bool) {
	f := strings.Split(line, "\t")
	if len(f) != 9 || f[0] != "ok" {
		return st, false
	}
	var errs [5]error
	st.Members, errs[0] = strconv.Atoi(f[1])
	st.Unreadable, errs[1] = strconv.Atoi(f[2])
	st.Hidden, errs[2] = strconv.Atoi(f[3])
	st.Unindexed, errs[3] = strconv.Atoi(f[4])
	st.UnindexedBytes, errs[4] = strconv.ParseInt(f[5], 10, 64)
	st.Source, st.Mountpoint, st.logCreated = f[6], f[7], f[8]
	return st, errors.Join(errs[:]...) == nil
}

// stateDir is where a daemon logs when it has neither --log nor syslog:
// $XDG_STATE_HOME/npzfs, by default ~/.local/state/npzfs.
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "npzfs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "npzfs"), nil
}

// openStateLog opens (appending) npzfs.log in stateDir, and reports
// whether it made the file.
func openStateLog() (f *os.File, created bool, err error) {
	dir, err := stateDir()
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, "npzfs.log")
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		return f, true, nil
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	return f, false, err
}

// redirectStderr makes f the process's standard error (file descriptor
// 2), where the Go runtime writes a panic and the goroutine dump of
// SIGQUIT.
func redirectStderr(f *os.File) {
	syscall.Dup3(int(f.Fd()), 2, 0)
}

// shellWord is s as one word of a shell command line: as it is when it
// holds nothing a shell would read otherwise, else in single quotes.
func shellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:@%=,", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	if s == "" {
		return "''"
	}
	return s
}
