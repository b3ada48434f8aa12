//go:build linux

package fs

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// finderRoot serves a memEntry tree as one that never changes: it finds
// entries by inode number (Finder).
type finderRoot struct {
	*memEntry
	byIno map[uint64][2]any // entry, parent inode number
}

func newFinderRoot(root *memEntry) *finderRoot {
	r := &finderRoot{memEntry: root, byIno: map[uint64][2]any{}}
	var walk func(e *memEntry)
	walk = func(e *memEntry) {
		for _, k := range e.kids {
			r.byIno[k.ino] = [2]any{k, e.ino}
			walk(k)
		}
	}
	walk(root)
	return r
}

func (r *finderRoot) Find(ino uint64) (Entry, uint64) {
	if v, ok := r.byIno[ino]; ok {
		return v[0].(*memEntry), v[1].(uint64)
	}
	return nil, 0
}

func newFinderServer(t *testing.T) (*server, *finderRoot) {
	t.Helper()
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := newFinderRoot(root)
	return newServer(&mountState{root: r, timeout: time.Hour}), r
}

// TestFinderTreeKeepsNoNodes: a tree that finds its own entries by inode
// number is served with no table of the nodes the kernel holds, folders
// open without a request (OPENDIR answers ENOSYS: the kernel's no-opendir
// mode) and are listed by node, and so do files (OPEN answers ENOSYS:
// no-open), whose reads name the node and fail when the file is bad.
func TestFinderTreeKeepsNoNodes(t *testing.T) {
	s, _ := newFinderServer(t)
	sub := lookup(t, s, rootID, "sub")
	deep := lookup(t, s, sub.NodeId, "deep.bin")
	many := lookup(t, s, rootID, "many")
	if n := s.nodes.len(); n != 0 {
		t.Errorf("%d nodes in the table", n)
	}
	s.Forget(deep.NodeId, 5)
	var a fuse.AttrOut
	if st := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: deep.NodeId}}, &a); !st.Ok() || a.Size != 70000 {
		t.Errorf("getattr deep.bin after a forget: %v size %d", st, a.Size)
	}
	if up := lookup(t, s, sub.NodeId, ".."); up.NodeId != rootID {
		t.Errorf(`lookup ".." in sub: node %d`, up.NodeId)
	}
	if st := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: 999999}}, &a); st != fuse.Status(syscall.ESTALE) {
		t.Errorf("getattr of an unknown node: %v, want ESTALE", st)
	}
	var o fuse.OpenOut
	if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: many.NodeId}}, &o); st != fuse.ENOSYS {
		t.Errorf("opendir: %v, want ENOSYS", st)
	}
	for _, plus := range []bool{false, true} {
		ents := readdirNode(t, s, many.NodeId, 0, 4096, plus)
		if len(ents) != 1002 || ents[0].Name != "." || ents[1].Ino != rootID || ents[2].Name != "f0000" || ents[1001].Name != "f0999" {
			t.Fatalf("plus=%v: %d entries", plus, len(ents))
		}
		for i, e := range ents {
			if e.Off != uint64(i+1) {
				t.Fatalf("plus=%v: entry %d has offset %d", plus, i, e.Off)
			}
		}
		if rest := readdirNode(t, s, many.NodeId, ents[500].Off, 4096, plus); len(rest) != 501 || rest[0].Name != ents[501].Name {
			t.Errorf("plus=%v: from offset %d: %d entries", plus, ents[500].Off, len(rest))
		}
	}
	if n := s.nodes.len(); n != 0 {
		t.Errorf("%d nodes in the table after readdirplus", n)
	}
	if st := s.Open(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: deep.NodeId}}, &o); st != fuse.ENOSYS {
		t.Errorf("open: %v, want ENOSYS", st)
	}
	if r, st := s.Read(nil, &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: deep.NodeId}, Size: 10}, make([]byte, 10)); !st.Ok() || r.Size() != 10 {
		t.Errorf("read without an open: %v", st)
	}
	bad := lookup(t, s, rootID, "bad.bin")
	if _, st := s.Read(nil, &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: bad.NodeId}, Size: 10}, make([]byte, 10)); st != fuse.Status(syscall.EIO) {
		t.Errorf("read of a bad file: %v, want EIO", st)
	}
}

// readdirNode lists a folder by node, with no handle (no-opendir).
func readdirNode(t *testing.T, s *server, node, off uint64, size int, plus bool) []fuse.DirEntry {
	t.Helper()
	return readdirFrom(t, s, fuse.ReadIn{InHeader: fuse.InHeader{NodeId: node}}, off, size, plus)
}

// changing is a folder of a tree that changes (Cacher).
type changing struct{ *memEntry }

func (changing) CacheTime() time.Duration { return time.Second }

// TestChangingFoldersAreNotCached: a folder of a tree that changes is
// listed at each open, and the kernel is not asked to keep its listing
// (FOPEN_CACHE_DIR) as it is for the folders of a tree that does not.
func TestChangingFoldersAreNotCached(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root  Entry
		flags uint32
	}{{root, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR}, {changing{root}, 0}} {
		s := newServer(&mountState{root: tc.root, timeout: time.Hour})
		var o fuse.OpenOut
		if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: rootID}}, &o); !st.Ok() || o.OpenFlags != tc.flags {
			t.Errorf("%T: opendir %v flags %#x, want %#x", tc.root, st, o.OpenFlags, tc.flags)
		}
		s.ReleaseDir(&fuse.ReleaseIn{Fh: o.Fh})
	}
}

// preparing is a listing of n generated files that records what was
// prepared before each entry's attributes were asked for.
type preparing struct {
	n        int
	prepared []bool
	asked    int // entries whose attributes were asked before being prepared
}

func (l *preparing) Len() int { return l.n }
func (l *preparing) At(i int) Entry {
	if i%3 == 2 {
		return nil // a position with no entry
	}
	// A file, then a folder.
	return &preparedEntry{memEntry{name: fmt.Sprintf("e%06d", i), ino: uint64(100 + i), dir: i%3 == 1, c: &memContent{}}, l, i}
}
func (l *preparing) Prepare(_ context.Context, from, to int) {
	for i := from; i < min(to, l.n); i++ {
		l.prepared[i] = true
	}
}
func (l *preparing) Prepared(i int) bool { return l.prepared[i] }

type preparedEntry struct {
	memEntry
	l *preparing
	i int
}

func (e *preparedEntry) Attr(ctx context.Context) (Attr, error) {
	if !e.l.prepared[e.i] {
		e.l.asked++
	}
	return e.memEntry.Attr(ctx)
}

type listedRoot struct {
	memEntry
	l *preparing
}

func (r *listedRoot) List(context.Context) (Listing, error) { return r.l, nil }
func (r *listedRoot) Find(uint64) (Entry, uint64)           { return nil, 0 }

// TestReadDirPlusPreparesItsEntries: a listing with attributes prepares
// the entries a reply will hold before it asks for their attributes, and
// positions without an entry are skipped.
func TestReadDirPlusPreparesItsEntries(t *testing.T) {
	l := &preparing{n: 3000, prepared: make([]bool, 3000)}
	root := &listedRoot{memEntry{ino: 1, dir: true}, l}
	s := newServer(&mountState{root: root, timeout: time.Hour})
	ents := readdirNode(t, s, rootID, 0, 4096, true)
	if len(ents) != 2+2000 {
		t.Fatalf("%d entries", len(ents))
	}
	if l.asked != 0 {
		t.Errorf("%d entries' attributes asked for before they were prepared", l.asked)
	}
	if plain := readdirNode(t, s, rootID, 0, 4096, false); len(plain) != len(ents) || plain[len(plain)-1].Name != ents[len(ents)-1].Name {
		t.Errorf("readdir: %d entries, readdirplus %d", len(plain), len(ents))
	}
}

// TestListAttrsReplies: with ListAttrs, where the kernel asks for
// attributes with every listing reply, a listing's first reply has every
// entry's (prepared first); a later reply with no lookup before it has
// those of the files prepared before alone and prepares nothing; from
// the first reply after a lookup to the listing's end, every entry's
// again.
func TestListAttrsReplies(t *testing.T) {
	l := &preparing{n: 3000, prepared: make([]bool, 3000)}
	root := &listedRoot{memEntry{ino: 1, dir: true}, l}
	s := newServer(&mountState{root: root, timeout: time.Hour, listAttrs: true})
	off := uint64(0)
	// reply lists from off, and reports each entry's listing position
	// and whether it came with attributes.
	reply := func() (pos []int, attrs []bool) {
		t.Helper()
		buf := make([]byte, 4096)
		out := fuse.NewDirEntryList(buf, off)
		in := &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: rootID, Opcode: opReaddirplus}, Offset: off, Size: uint32(len(buf))}
		if st := s.ReadDirPlus(nil, in, out); !st.Ok() {
			t.Fatalf("readdirplus at %d: %v", off, st)
		}
		ents, eos, err := dirents(out.Bytes(), true)
		if err != nil || len(ents) == 0 {
			t.Fatalf("readdirplus at %d: %d entries, %v", off, len(ents), err)
		}
		for k, de := range ents {
			if de.Name != "." && de.Name != ".." {
				pos = append(pos, int(de.Off)-3)
				attrs = append(attrs, eos[k].NodeId != 0)
			}
		}
		off = ents[len(ents)-1].Off
		return pos, attrs
	}
	all := func(what string, pos []int, attrs []bool) {
		t.Helper()
		for k, i := range pos {
			if !attrs[k] {
				t.Errorf("%s: position %d without attributes", what, i)
			}
		}
	}
	pos, attrs := reply()
	all("first reply", pos, attrs)
	// The first reply prepared a batch past its end; a file and a
	// folder further on are prepared too.
	far := pos[len(pos)-1] + 30
	l.prepared[far-far%3], l.prepared[far-far%3+1] = true, true
	was := slices.Clone(l.prepared)
	pos, attrs = reply()
	with := 0
	for k, i := range pos {
		want := i%3 == 0 && l.prepared[i]
		if attrs[k] != want {
			t.Errorf("plain reply: position %d (folder %v, prepared %v) with attributes %v", i, i%3 == 1, l.prepared[i], attrs[k])
		}
		if attrs[k] {
			with++
		}
	}
	if !slices.Equal(was, l.prepared) {
		t.Error("a plain reply prepared entries")
	}
	if with == 0 || with == len(pos) || pos[len(pos)-1] < far {
		t.Fatalf("plain reply of positions %d to %d: %d with attributes: not the mix the test needs", pos[0], pos[len(pos)-1], with)
	}
	var eo fuse.EntryOut
	s.Lookup(nil, &fuse.InHeader{NodeId: rootID, Opcode: opLookup}, "e000000", &eo)
	for r := range 3 {
		pos, attrs = reply()
		all(fmt.Sprintf("reply %d after a lookup", r+1), pos, attrs)
	}
	if l.asked != 0 {
		t.Errorf("%d entries' attributes asked for before they were prepared", l.asked)
	}
}

// BenchmarkFolder200k opens a folder of 200,000 entries of a tree that
// never changes and lists it, plainly and with attributes, in the
// replies of 128 KiB a kernel asks for.
func BenchmarkFolder200k(b *testing.B) {
	const n = 200_000
	l := &preparing{n: n * 3 / 2, prepared: make([]bool, n*3/2)}
	root := &listedRoot{memEntry{ino: 1, dir: true}, l}
	s := newServer(&mountState{root: root, timeout: time.Hour})
	b.Run("opendir", func(b *testing.B) {
		for b.Loop() {
			var o fuse.OpenOut
			if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: rootID}}, &o); st != fuse.ENOSYS {
				b.Fatal(st)
			}
		}
	})
	buf := make([]byte, 128<<10)
	for _, plus := range []bool{false, true} {
		b.Run(fmt.Sprintf("list/plus=%v", plus), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got := 0
				for off := uint64(0); ; {
					out := fuse.NewDirEntryList(buf, off)
					in := &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: rootID}, Offset: off, Size: uint32(len(buf))}
					if plus {
						s.ReadDirPlus(nil, in, out)
					} else {
						s.ReadDir(nil, in, out)
					}
					if len(out.Bytes()) == 0 {
						break
					}
					ents, _, err := dirents(out.Bytes(), plus)
					if err != nil {
						b.Fatal(err)
					}
					off = ents[len(ents)-1].Off
					got += len(ents)
				}
				if got != 2+n {
					b.Fatalf("%d entries", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
		})
	}
}

// unsettledDir is a folder whose contents may still change.
type unsettledDir struct{ *memEntry }

func (unsettledDir) Unsettled() bool { return true }

// TestUnsettledFolderShowsItChanged: the kernel keeps a folder's listing
// while its modification time stays; a folder whose contents may still
// change is cached for no time and says it changed at each answer, so it
// is listed again.
func TestUnsettledFolderShowsItChanged(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &mountState{timeout: time.Hour}
	var a fuse.Attr
	before := time.Now()
	st.fillAttr(context.Background(), unsettledDir{root}, &a)
	if got := time.Unix(int64(a.Mtime), int64(a.Mtimensec)); got.Before(before) {
		t.Errorf("unsettled folder's mtime %v, want now (after %v)", got, before)
	}
	if d := st.cacheTime(unsettledDir{root}); d != 0 {
		t.Errorf("unsettled folder cached for %v", d)
	}
	st.fillAttr(context.Background(), root, &a)
	if got := time.Unix(int64(a.Mtime), int64(a.Mtimensec)); !got.Equal(root.mt) {
		t.Errorf("settled folder's mtime %v, want its own %v", got, root.mt)
	}
}

// dropNotes records the nodes whose pages the server asks the kernel to
// drop (FUSE_NOTIFY_INVAL_INODE), and stores nothing.
type dropNotes struct{ dropped []uint64 }

func (d *dropNotes) InodeNotifyStoreCache(uint64, int64, []byte) fuse.Status { return fuse.OK }

func (d *dropNotes) InodeNotify(node uint64, off, length int64) fuse.Status {
	if off != 0 || length != 0 {
		return fuse.EINVAL // the whole listing, or nothing
	}
	d.dropped = append(d.dropped, node)
	return fuse.OK
}

// TestBareListingIsDroppedAtALookup: a folder the kernel listed to its
// end without attributes past its first reply, and without a lookup in
// it meanwhile, has its kept listing dropped at the first lookup in it,
// once, so that the next listing brings attributes. A listing that fits
// in its first reply, came with attributes, had lookups between its
// replies (as `ls -l` makes) or is not read to its end is kept.
func TestBareListingIsDroppedAtALookup(t *testing.T) {
	s, r := newFinderServer(t)
	notes := &dropNotes{}
	s.store = notes
	many := lookup(t, s, rootID, "many")
	sub := lookup(t, s, rootID, "sub")
	subEntry, _ := r.Find(sub.NodeId)
	subEntry.(*memEntry).gaps = true // its last reply lists positions, no entry
	if ents := readdirNode(t, s, sub.NodeId, 0, 4096, false); len(ents) != 2+len(subEntry.(*memEntry).kids) {
		t.Fatalf("sub: %d entries", len(ents))
	}
	readdirNode(t, s, many.NodeId, 0, 4096, true) // with attributes
	lookup(t, s, sub.NodeId, "deep.bin")          // kept
	lookup(t, s, many.NodeId, "f0001")            // kept
	// Plain replies with a lookup between them, then the end.
	ents := readdirOnce(t, s, many.NodeId, 0, 4096)
	ents = readdirOnce(t, s, many.NodeId, ents[len(ents)-1].Off, 4096)
	lookup(t, s, many.NodeId, ents[0].Name)
	readdirNode(t, s, many.NodeId, ents[len(ents)-1].Off, 4096, false)
	lookup(t, s, many.NodeId, "f0002") // kept
	// Plain replies not read to the end, then a lookup.
	ents = readdirOnce(t, s, many.NodeId, 0, 4096)
	readdirOnce(t, s, many.NodeId, ents[len(ents)-1].Off, 4096)
	lookup(t, s, many.NodeId, "f0003")
	if len(notes.dropped) != 0 {
		t.Fatalf("listings dropped: %v, want none", notes.dropped)
	}
	if n := s.kept.n.Load(); n != 1 { // many's, not read to its end
		t.Fatalf("%d folders followed, want 1", n)
	}
	// A listing from the start, plain, read to the end: the first lookup
	// drops it.
	if ents := readdirNode(t, s, many.NodeId, 0, 4096, false); len(ents) != 1002 {
		t.Fatalf("%d entries", len(ents))
	}
	lookup(t, s, rootID, "sub") // another folder
	lookup(t, s, many.NodeId, "f0004")
	lookup(t, s, many.NodeId, "f0005")
	if len(notes.dropped) != 1 || notes.dropped[0] != many.NodeId {
		t.Errorf("listings dropped: %v, want [%d] (many's, once)", notes.dropped, many.NodeId)
	}
}

// readdirOnce is one plain readdir request by node from off.
func readdirOnce(t *testing.T, s *server, node, off uint64, size int) []fuse.DirEntry {
	t.Helper()
	l := fuse.NewDirEntryList(make([]byte, size), off)
	in := fuse.ReadIn{InHeader: fuse.InHeader{NodeId: node}, Offset: off, Size: uint32(size)}
	if st := s.ReadDir(nil, &in, l); !st.Ok() {
		t.Fatalf("readdir at %d: %v", off, st)
	}
	ents := parseDirents(t, l.Bytes(), false)
	if len(ents) == 0 {
		t.Fatalf("readdir at %d: no entries", off)
	}
	return ents
}
