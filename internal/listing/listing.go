// Package listing is what npzfs ls says of an archive, as values: each
// member's state (served, unreadable, failed verification, not served, a
// folder), its npy header, why it is not served, and what reading it
// whole found; the counts by state; and the JSON documents of
// ls --json (documented in the README). The command line prints the
// table.
package listing

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

// Member states in a listing.
const (
	Served     = "served"     // in the tree, and read whole if verified
	Unreadable = "unreadable" // in the tree, but no byte can be read
	Failed     = "failed"     // in the tree, but reading it whole failed
	NotServed  = "not served" // not in the tree
	Folder     = "folder"     // a directory entry
)

// Listing is what ls says of an archive.
type Listing struct {
	Archive *npz.Archive
	Rows    []Row
	Counts  Counts
	// Checked is set when every member was read whole (Of's verify).
	Checked bool
}

// Row is what ls says of one member.
type Row struct {
	Member *npz.Member
	State  string
	// Header is a served .npy member's header, when it could be read.
	Header *npy.Header
	// Reason says why the member is not served, or what is odd about
	// it (npz.Member.Reason); ReadError why no byte of it can be read;
	// Verify why reading it whole failed, when verified.
	Reason, ReadError, Verify string
	// SOZip is what a deflated member's SOZip index says, if it has
	// one that matches it.
	SOZip *npz.SOZip
}

// Counts count members by state; folders are counted as served.
// Verified counts the served members that were read whole without a
// fault.
type Counts struct{ Served, Unreadable, Failed, NotServed, Folders, Verified int }

// Add adds d's counts to c's.
func (c *Counts) Add(d Counts) {
	c.Served += d.Served
	c.Unreadable += d.Unreadable
	c.Failed += d.Failed
	c.NotServed += d.NotServed
	c.Folders += d.Folders
	c.Verified += d.Verified
}

// Of lists a's members; with verify, it reads every served member whole
// first, checking the CRC-32 of stored ones (the inflater checks
// deflated ones).
func Of(ctx context.Context, a *npz.Archive, verify bool) *Listing {
	var failures map[*npz.Member]string
	if verify {
		failures = verifyMembers(ctx, a.Members())
	}
	l := &Listing{Archive: a, Checked: verify}
	members := a.Members()
	resolveHeaders(ctx, members)
	for _, m := range members {
		r := Row{Member: m, Reason: m.Reason(ctx), Verify: failures[m]}
		r.SOZip, _ = m.SOZip(ctx)
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(ctx); err == nil {
				r.Header = h
			}
		}
		if err := m.ReadError(); err != nil {
			r.ReadError = Message(err)
		}
		switch {
		case !m.Served():
			r.State = NotServed
			l.Counts.NotServed++
		case m.IsDir():
			r.State = Folder
			l.Counts.Folders++
		case r.ReadError != "":
			r.State = Unreadable
			l.Counts.Unreadable++
		case r.Verify != "":
			r.State = Failed
			l.Counts.Failed++
		default:
			r.State = Served
			l.Counts.Served++
		}
		if verify && (r.State == Served || r.State == Folder) {
			l.Counts.Verified++ // read whole, or a folder: nothing in it to fail
		}
		l.Rows = append(l.Rows, r)
	}
	return l
}

// Verified reports a listing with no member unreadable or failing.
func (l *Listing) Verified() bool { return l.Counts.Unreadable == 0 && l.Counts.Failed == 0 }

// Message is an error's message without the package prefix ("npz: ",
// "zip: ") that a line about one member does not need.
func Message(err error) string {
	s := err.Error()
	for _, p := range []string{"npz: ", "zip: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// verifyMembers reads every served member whole, a few at a time, and
// checks the CRC-32 of stored ones (the inflater checks deflated ones). It
// returns why each member that fails does, unless its reason already says
// it cannot be read.
func verifyMembers(ctx context.Context, members []*npz.Member) map[*npz.Member]string {
	out := map[*npz.Member]string{}
	var mu sync.Mutex
	forEach(members, func(m *npz.Member) {
		if !m.Served() || m.IsDir() {
			return
		}
		var me *npz.MethodError
		err := m.Verify(ctx, nil)
		if err == nil || errors.As(err, &me) {
			return
		}
		mu.Lock()
		out[m] = "reading fails: " + Message(err)
		mu.Unlock()
	})
	return out
}

// resolveHeaders reads the npy headers of the members, and deflated
// members' SOZip indexes, with a few goroutines (each is read once, and
// the reads are independent), so that listing a large archive does not
// wait on them one by one.
func resolveHeaders(ctx context.Context, members []*npz.Member) {
	forEach(members, func(m *npz.Member) {
		if m.IsNPY() && m.Served() {
			m.Header(ctx)
		}
		m.SOZip(ctx)
	})
}

// forEach calls fn on every member from a few goroutines.
func forEach(members []*npz.Member, fn func(m *npz.Member)) {
	workers.Run(context.Background(), len(members), 8, func(_, i int) { fn(members[i]) })
}
