//go:build linux

package daemon

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/npzfs/npzfs/internal/english"
)

// silentReason says for people why st's daemon did not answer.
func silentReason(st *Status) string {
	switch st.Daemon {
	case DaemonExited:
		return fmt.Sprintf("its daemon has exited, and every access to the mount fails; npzfs unmount %s removes it", english.ShellWord(st.Mountpoint))
	case DaemonStopped:
		return fmt.Sprintf("its daemon (pid %d) is stopped, and every access to the mount waits; kill -CONT %d resumes it", st.PID, st.PID)
	case DaemonSilent:
		return fmt.Sprintf("its daemon (pid %d) does not answer (an npzfs from before npzfs status existed?)", st.PID)
	case DaemonOtherUser:
		return fmt.Sprintf("its daemon (pid %d) runs as another user (uid %d): its status is in that user's status folder (npzfs status, run as that user, shows it)", st.PID, st.UID)
	case DaemonElsewhere:
		return fmt.Sprintf("its daemon (pid %d) was started with another XDG_RUNTIME_DIR or TMPDIR: its status is in %s, which is not a private folder of yours or where it does not answer", st.PID, st.StatusFolder)
	}
	return "its daemon does not answer (it may be stopped, or have exited)"
}

// WriteText prints the status for people, as npzfs status does.
func (st *Status) WriteText(w io.Writer) {
	if !st.Answering {
		fmt.Fprintf(w, "%s: %s: %s\n", st.Mountpoint, st.Source, silentReason(st))
		return
	}
	up := time.Duration(st.Uptime * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "%s: %s (%s), pid %d, up %v\n", st.Mountpoint, st.Source, st.Kind, st.PID, up)
	if st.Owner != 0 {
		fmt.Fprintf(w, "  %-11s pid %d: unmounted once it exits\n", "owner", st.Owner)
	}
	if st.Detached {
		fmt.Fprintf(w, "  %-11s %s\n", "detached", "unmounted lazily: it serves the files still open in it, then exits")
	}
	line := func(what, format string, args ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", what, fmt.Sprintf(format, args...))
	}
	line("served", "%s in %s and %s", english.Size(st.Served.Bytes), english.Plural(st.Served.Reads, "read"), english.Plural(st.Served.Pushes, "push"))
	if len(st.Served.Requests) > 0 {
		line("requests", "%s", requestCounts(st.Served.Requests))
	}
	if st.ArchivesOpen != nil {
		line("archives", "%d open", *st.ArchivesOpen)
		if st.ArchivesIdle != nil && *st.ArchivesIdle != *st.ArchivesOpen {
			line("", "%d of them idle (no file open, no request under way)", *st.ArchivesIdle)
		}
	}
	if st.Members != nil && st.Failing != nil {
		line("members", "%d, %d failing%s", *st.Members, *st.Failing, failingText(st))
	} else if v := st.Verification; v != nil && v.FailingCount > 0 {
		line("failing", "%s%s", english.Plural(v.FailingCount, "member"), failingText(st))
	}
	if v := st.Verification; v != nil {
		line("verified", "%s", verifiedText(v))
	}
	sc := st.SpanCache
	line("span cache", "%s, %s; %s of %s", english.Plural(sc.Hits, "hit"), english.Plural(sc.Misses, "miss"), english.Size(sc.Bytes), english.Size(sc.Budget))
	if ix := st.Indexes; ix != nil {
		line("indexes", "%d loaded (%d refused), %d saved, in %s", ix.Loaded, ix.Refused, ix.Saved, ix.Folder)
	}
	if r := st.Remote; r != nil {
		line("remote", "%s (%d retried), %s fetched; blocks: %s, %s, %s in memory",
			english.Plural(r.Requests, "request"), r.Retries, english.Size(r.BytesFetched), english.Plural(r.BlockHits, "hit"), english.Plural(r.BlockMisses, "miss"), english.Size(r.MemoryBytes))
		if r.DiskCacheBytes > 0 || r.DiskHits > 0 {
			line("disk cache", "%s from it; %s in its folder", english.Plural(r.DiskHits, "block"), english.Size(r.DiskCacheBytes))
		}
	}
	if ix := st.Indexing; ix != nil {
		state := fmt.Sprintf("%s left", time.Duration(ix.SecondsLeft*float64(time.Second)).Round(time.Second))
		if ix.Done {
			state = "done"
		}
		line("indexing", "%d of %d members (%d failed), %s of %s, %s/s, %s",
			ix.MembersDone, ix.Members, ix.Failed, english.Size(ix.BytesDone), english.Size(ix.Bytes), english.Size(int64(ix.Rate)), state)
	}
	if len(st.Options) > 0 {
		line("options", "%s", strings.Join(st.Options, " "))
	}
	line("log", "%s", st.Log)
}

// maxFailingShown is how many failing members status names; the rest
// are counted (status --json lists more).
const maxFailingShown = 3

// failingText names a mount's failing members and why, after a colon:
// ": images.npy of run42.npz, CRC-32 mismatch (2 reads failed)"; or,
// where none is known by name, where to look.
func failingText(st *Status) string {
	v := st.Verification
	if v == nil || len(v.Failing) == 0 {
		if st.Failing != nil && *st.Failing > 0 {
			return " (npzfs ls says why)"
		}
		return ""
	}
	var parts []string
	for _, f := range v.Failing[:min(len(v.Failing), maxFailingShown)] {
		archive := cmp.Or(f.Archive, path.Base(st.Source))
		parts = append(parts, fmt.Sprintf("%s of %s, %s (%s failed)", f.Name, archive, f.Reason, english.Plural(f.Reads, "read")))
	}
	if more := v.FailingCount - int64(len(parts)); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more (npzfs status --json lists them)", more))
	}
	return ": " + strings.Join(parts, "; ")
}

// verifiedText says what a mount verified: "3 members (2 by a pass, 1
// by a saved index); 1 served unverified (1.0 GiB); --verify=auto".
func verifiedText(v *Verification) string {
	s := fmt.Sprintf("%s (%d by a pass, %d by a saved index)", english.Plural(v.Passes+v.Saved, "member"), v.Passes, v.Saved)
	if v.Unverified > 0 {
		s += fmt.Sprintf("; %d served unverified (%s)", v.Unverified, english.Size(v.UnverifiedBytes))
	}
	return s + "; --verify=" + v.Mode
}

// requestCounts says a mount's FUSE requests by kind, the most sent
// first: "lookup 2000, ioctl 2000, getattr 1".
func requestCounts(m map[string]int64) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if m[kinds[i]] != m[kinds[j]] {
			return m[kinds[i]] > m[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + " " + strconv.FormatInt(m[k], 10)
	}
	return strings.Join(parts, ", ")
}
