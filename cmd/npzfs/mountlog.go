//go:build linux

package main

import (
	"fmt"

	"github.com/npzfs/npzfs/internal/daemon"
	"github.com/npzfs/npzfs/internal/english"
)

// mountStatus is what a mount tells its user once it is live: how it
// went (daemon.Ready).
type mountStatus struct {
	daemon.Ready
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
			index += "--index-dir " + english.ShellWord(st.indexDir) + " "
		}
		out = append(out, fmt.Sprintf("note: %s of %.1f GiB has no saved index: the first read deep into it inflates it from its start (about a second a GiB); to avoid that, run once: %s%s (or mount with --index)",
			what, float64(st.UnindexedBytes)/(1<<30), index, english.ShellWord(st.Source)))
	}
	return out
}
