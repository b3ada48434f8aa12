//go:build linux

package fs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestRequestContext: a request's context is done when the kernel
// interrupts it, at its deadline, or once it is answered; its Err agrees
// with Done whether or not anything asked for Done first.
func TestRequestContext(t *testing.T) {
	cancel := make(chan struct{})
	r := newRequest(cancel, time.Hour)
	if r.Err() != nil {
		t.Fatalf("a fresh request: %v", r.Err())
	}
	if d, ok := r.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("deadline %v, %v", d, ok)
	}
	close(cancel)
	if !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("interrupted, before Done: %v", r.Err())
	}
	<-r.Done()
	if !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("interrupted, after Done: %v", r.Err())
	}

	r = newRequest(make(chan struct{}), time.Nanosecond)
	<-r.Done()
	if !errors.Is(r.Err(), context.DeadlineExceeded) {
		t.Errorf("past its deadline: %v", r.Err())
	}

	// Armed, then answered: whatever still holds it sees it done, and
	// a child context made from it ends with it.
	r = newRequest(make(chan struct{}), time.Hour)
	child, stop := context.WithCancel(r)
	defer stop()
	done := r.Done()
	r.end()
	<-done
	<-child.Done()
	if r.Err() == nil {
		t.Error("answered: no error")
	}

	// Answered before anything armed it: Done is closed at once.
	r = newRequest(nil, time.Hour)
	r.end()
	<-r.Done()
}

// failingDir is a folder whose lookups and listing fail for now, as a
// remote folder's do while its server answers 503.
type failingDir struct{ memEntry }

var errNotNow = errors.New("the server answered 503")

func (d *failingDir) Lookup(_ context.Context, name string) (Entry, error) {
	if name == "gone" {
		return nil, fs.ErrNotExist
	}
	return nil, errNotNow
}
func (d *failingDir) List(context.Context) (Listing, error) { return nil, errNotNow }

// badAttr is a file whose attributes cannot be had now.
type badAttr struct{ memEntry }

func (e *badAttr) Attr(context.Context) (Attr, error) { return Attr{}, errNotNow }

// TestFailuresAreNotAbsence: a lookup that fails for another reason than
// absence answers EIO, with nothing for the kernel to cache, while a name
// that is not there is a negative entry; a listing that fails answers
// EIO; an entry whose attributes fail is listed by READDIRPLUS without
// them, for its lookup to say what is wrong.
func TestFailuresAreNotAbsence(t *testing.T) {
	dir := &failingDir{memEntry{name: "d", ino: 2, dir: true}}
	bad := &badAttr{memEntry{name: "bad", ino: 3, c: &memContent{data: []byte("x")}}}
	root := &memEntry{ino: 1, dir: true}
	s := newServer(&mountState{root: &rootOf{root, []Entry{dir, bad}}, timeout: time.Hour})
	d := lookup(t, s, rootID, "d")
	var out fuse.EntryOut
	if st := s.Lookup(nil, &fuse.InHeader{NodeId: d.NodeId}, "shard.npz", &out); st != fuse.Status(syscall.EIO) {
		t.Errorf("lookup in a folder that cannot be read: %v, want EIO", st)
	}
	if st := s.Lookup(nil, &fuse.InHeader{NodeId: d.NodeId}, "gone", &out); !st.Ok() || out.NodeId != 0 || out.EntryTimeout() == 0 {
		t.Errorf("lookup of an absent name: %v, node %d, timeout %v", st, out.NodeId, out.EntryTimeout())
	}
	var o fuse.OpenOut
	if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: d.NodeId}}, &o); st != fuse.Status(syscall.EIO) {
		t.Errorf("opendir of a folder that cannot be listed: %v, want EIO", st)
	}
	if st := s.Lookup(nil, &fuse.InHeader{NodeId: rootID}, "bad", &out); st != fuse.Status(syscall.EIO) {
		t.Errorf("lookup of an entry without attributes: %v, want EIO", st)
	}
	if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: rootID}}, &o); !st.Ok() {
		t.Fatal(st)
	}
	ents := readdir(t, s, o.Fh, 0, 4096, true)
	if len(ents) != 4 || ents[3].Name != "bad" || ents[3].Ino != bad.Ino() {
		t.Fatalf("readdirplus: %+v", ents)
	}
	// Listed with attributes, d is looked up once more; bad, without
	// them, is not looked up at all.
	if k, ok := s.nodes.get(d.NodeId); !ok || k.refs != 2 {
		t.Errorf("d after readdirplus: %+v, %v", k, ok)
	}
	if _, ok := s.nodes.get(bad.Ino()); ok {
		t.Error("an entry listed without attributes was recorded as looked up")
	}
}

// rootOf is a root folder of the given entries, a tree that changes.
type rootOf struct {
	*memEntry
	kids []Entry
}

func (r *rootOf) Lookup(_ context.Context, name string) (Entry, error) {
	for _, k := range r.kids {
		if k.Name() == name {
			return k, nil
		}
	}
	return nil, fs.ErrNotExist
}
func (r *rootOf) List(context.Context) (Listing, error) { return Entries(r.kids), nil }
func (r *rootOf) CacheTime() time.Duration              { return time.Second }
