//go:build linux

package fs

import (
	"maps"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestRequestsAreCounted: each request the server answers is counted
// under its kind, as its header names it, whatever the answer (a lookup
// of a missing name, a refused write); forgotten nodes are counted as
// such, and kinds never sent are left out.
func TestRequestsAreCounted(t *testing.T) {
	s, _ := newFinderServer(t)
	h := func(op uint32, node uint64) fuse.InHeader { return fuse.InHeader{Opcode: op, NodeId: node} }
	var eo fuse.EntryOut
	for _, name := range []string{"sub", "missing"} {
		lh := h(1, rootID)
		if st := s.Lookup(nil, &lh, name, &eo); !st.Ok() {
			t.Fatalf("lookup %s: %v", name, st)
		}
	}
	var ao fuse.AttrOut
	if st := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: h(3, rootID)}, &ao); !st.Ok() {
		t.Fatal(st)
	}
	s.Ioctl(nil, &fuse.IoctlIn{InHeader: h(39, rootID)}, nil, &fuse.IoctlOut{}, nil)
	s.Mkdir(nil, &fuse.MkdirIn{InHeader: h(9, rootID)}, "x", &eo)
	s.Forget(eo.NodeId, 1)
	s.Forget(eo.NodeId, 1)
	got := s.st.requests.snapshot()
	want := map[string]int64{"lookup": 2, "getattr": 1, "ioctl": 1, "mkdir": 1, "forget": 2}
	if !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	// An opcode past those known is answered, and not counted.
	s.st.requests.count(&fuse.InHeader{Opcode: 4096})
	if got := s.st.requests.snapshot(); !maps.Equal(got, want) {
		t.Errorf("after an unknown opcode: %v", got)
	}
}
