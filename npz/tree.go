package npz

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// Node kinds.
const (
	kindDir   = iota // a folder: the root, from "/" in names, or a directory entry
	kindFile         // a member's bytes
	kindViews        // KEY/, the views folder of KEY.npy
	kindView         // a view (see viewKinds): in KEY/, or beside KEY.npy
)

// Node is a folder or a file of the served tree. Nodes are not stored:
// the tree is its archive's folder table and member table, and a Node is
// made when asked for (Lookup, Listing.At, Archive.Node), so that a
// tree of a million members costs no object per name. Two Nodes of the
// same inode number are the same node.
type Node struct {
	a    *Archive
	i    int32 // the member's index; the folder's, for kindDir
	kind uint8
	view uint8 // kindView: the index in viewKinds
}

// folder is a folder of the tree: the root, a folder made from "/" in
// member names, or a directory entry.
type folder struct {
	name   string
	parent int32 // the folder holding it (the root's is itself)
	// kids are its members and folders, sorted by name: a member's index,
	// or a folder's index with dirKid set. The views beside a member
	// (KEY/, KEY.ra) are not kids: they follow from the member's flags.
	kids []uint32
}

// dirKid marks a folder among a folder's kids.
const dirKid = 1 << 31

// inoBlock is how many inode numbers each member has: its file, its
// views folder, and one per view kind.
var inoBlock = uint64(2 + len(viewKinds))

// slotsPerKid is how many positions of a folder's listing each kid has:
// itself, its views folder, and one per view beside it (see Listing).
var slotsPerKid = 2 + nBeside

// Ino is the node's inode number: unique, non-zero, stable. The root is
// 1 and the folders follow it; then each member has a block of inoBlock
// numbers: its file, its views folder, each view kind in the table's
// order. Numbers are computed, not stored.
func (n *Node) Ino() uint64 {
	if n.kind == kindDir {
		return 1 + uint64(n.i)
	}
	base := n.a.memberIno + uint64(n.i)*inoBlock
	switch n.kind {
	case kindFile:
		return base
	case kindViews:
		return base + 1
	}
	return base + 2 + uint64(n.view)
}

// Node is the node of inode number ino, and the inode number of the
// folder holding it (the root's is 1), or nil when there is none.
func (a *Archive) Node(ino uint64) (n *Node, parent uint64) {
	if ino == 0 || ino > a.maxIno {
		return nil, 0
	}
	if ino < a.memberIno {
		f := int32(ino - 1)
		return &Node{a: a, i: f, kind: kindDir}, 1 + uint64(a.folders[f].parent)
	}
	off := ino - a.memberIno
	i, r := int32(off/inoBlock), off%inoBlock
	m := a.member(int(i))
	st := m.st.Load()
	if st&stateMask != memberServed || st&flagDir != 0 {
		return nil, 0
	}
	dir := 1 + uint64(a.memberFolder(m))
	switch {
	case r == 0:
		return &Node{a: a, i: i, kind: kindFile}, dir
	case st&flagViews == 0 && (r == 1 || !viewKinds[r-2].beside):
		return nil, 0
	case r == 1:
		return &Node{a: a, i: i, kind: kindViews}, dir
	}
	v := &viewKinds[r-2]
	if v.beside {
		if st&besideFlag(v.besideIndex) == 0 {
			return nil, 0
		}
		return &Node{a: a, i: i, kind: kindView, view: uint8(r - 2)}, dir
	}
	return &Node{a: a, i: i, kind: kindView, view: uint8(r - 2)}, ino - r + 1
}

// memberFolder is the index of the folder holding a served member.
func (a *Archive) memberFolder(m *Member) int32 {
	if len(a.folders) == 1 {
		return 0
	}
	p := m.Path()
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return 0
	}
	return a.folderByPath[p[:i]]
}

// member is the member of a file, views folder or view node.
func (n *Node) member() *Member { return n.a.member(int(n.i)) }

// Name is the node's name within its folder ("" for the root).
func (n *Node) Name() string {
	switch n.kind {
	case kindDir:
		return n.a.folders[n.i].name
	case kindFile:
		return n.member().base()
	case kindViews:
		return n.member().key()
	}
	v := &viewKinds[n.view]
	if v.beside {
		return n.member().key() + v.name
	}
	return v.name
}

// Unsettled reports a node whose contents may change: a views folder or
// view whose npy header could not be read for now (its source failed in
// a way that may pass, source.ErrTransient). Nothing about it should be
// cached. Folders' names never depend on headers.
func (n *Node) Unsettled() bool {
	switch n.kind {
	case kindViews, kindView:
		return n.member().st.Load()&flagUnsettled != 0
	}
	return false
}

// IsDir reports whether n is a folder.
func (n *Node) IsDir() bool { return n.kind == kindDir || n.kind == kindViews }

// ModTime is, for a member and everything made from it (its views
// folder, header.json, raw.bin), the member's modification time from the
// zip; for the root and the folders its name makes, the archive's.
func (n *Node) ModTime() time.Time {
	if n.kind == kindDir {
		return n.a.modTime
	}
	return n.member().ModTime()
}

// DiskUsage is what the node takes in the archive: a member's compressed
// size, and nothing for folders and views, which are made from members
// that are counted already. du(1) of a mount then adds up to about the
// archive's size rather than twice its arrays.
func (n *Node) DiskUsage() int64 {
	if n.kind == kindFile {
		return n.member().e.CompressedSize
	}
	return 0
}

// Member is the archive member a file, views folder or view comes from,
// or nil for other folders.
func (n *Node) Member() *Member {
	if n.kind == kindDir {
		return nil
	}
	return n.member()
}

// File is the content of a file node, nil for a folder.
func (n *Node) File(ctx context.Context) *File {
	switch n.kind {
	case kindFile:
		return n.member().File()
	case kindView:
		m := n.member()
		if viewKinds[n.view].beside && n.a.infos.get(m.e.Index) == nil {
			n.a.readAhead(ctx, m)
		}
		return m.viewFile(ctx, int(n.view))
	}
	return nil
}

// aheadLen is how many arrays' headers readAhead reads at once.
const aheadLen = 64

// readAhead reads the npy headers of the arrays that follow m in its
// folder, many at once (Listing.Prepare), when the views beside arrays
// are being asked for one after the other: that is `ls -l` of a folder
// whose listing the kernel has kept, which then looks up every name in
// turn. A view asked for out of turn reads only its own header.
func (a *Archive) readAhead(ctx context.Context, m *Member) {
	f := a.memberFolder(m)
	kids := a.folders[f].kids
	k, ok := slices.BinarySearchFunc(kids, m.base(), func(k uint32, name string) int {
		return strings.Compare(a.kidName(k), name)
	})
	if !ok {
		return
	}
	pos := uint64(f)<<32 | uint64(k)
	if a.ahead.Swap(pos) != pos-1 || k == 0 {
		return // not the array after the last one asked for
	}
	a.ahead.Store(pos + aheadLen - 1)
	Listing{a: a, kids: kids}.Prepare(ctx, k*slotsPerKid, (k+aheadLen)*slotsPerKid)
}

// Lookup returns the child of a folder by name, or nil. Which names a
// folder holds is decided from the central directory alone, so that
// listings and lookups always agree and nothing depends on what was read
// first: the views folder KEY/ of a served KEY.npy exists whenever its
// name is free, and so does KEY.ra (see Member.Reason for an array whose
// header gives it none). Looking into KEY/ reads the header: its views
// (header.json, raw.bin) are there when the header gives the array them.
func (n *Node) Lookup(ctx context.Context, name string) *Node {
	switch n.kind {
	case kindDir:
		a := n.a
		kids := a.folders[n.i].kids
		if k, ok := a.findKid(kids, name); ok {
			return a.kidNode(k)
		}
		// A views folder, or a view beside KEY.npy?
		if m := a.npyKid(kids, name); m != nil && m.st.Load()&flagViews != 0 {
			return &Node{a: a, i: m.e.Index, kind: kindViews}
		}
		for _, suffix := range BesideSuffixes() {
			key, ok := strings.CutSuffix(name, suffix)
			if !ok {
				continue
			}
			if m := a.npyKid(kids, key); m != nil {
				v := besideKind(suffix)
				if m.st.Load()&besideFlag(viewKinds[v].besideIndex) != 0 {
					return &Node{a: a, i: m.e.Index, kind: kindView, view: uint8(v)}
				}
			}
		}
	case kindViews:
		m := n.member()
		ni := m.info(ctx)
		for i := range viewKinds {
			if v := &viewKinds[i]; !v.beside && v.name == name && ni.err == nil && v.has(ni) {
				return &Node{a: n.a, i: n.i, kind: kindView, view: uint8(i)}
			}
		}
	}
	return nil
}

// npyKid is the served member KEY.npy among kids, or nil.
func (a *Archive) npyKid(kids []uint32, key string) *Member {
	if key == "" {
		return nil
	}
	k, ok := a.findKid(kids, key+".npy")
	if !ok || k&dirKid != 0 {
		return nil
	}
	return a.member(int(k))
}

// kidNode is the node of a folder's kid.
func (a *Archive) kidNode(k uint32) *Node {
	if k&dirKid != 0 {
		return &Node{a: a, i: int32(k &^ dirKid), kind: kindDir}
	}
	return &Node{a: a, i: int32(k), kind: kindFile}
}

// kidName is the name of a folder's kid.
func (a *Archive) kidName(k uint32) string {
	if k&dirKid != 0 {
		return a.folders[k&^dirKid].name
	}
	return a.member(int(k)).base()
}

// findKid finds the kid named name in kids, which are sorted by name.
func (a *Archive) findKid(kids []uint32, name string) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(kids, name, func(k uint32, name string) int {
		return strings.Compare(a.kidName(k), name)
	})
	if !ok {
		return 0, false
	}
	return kids[i], true
}

// Listing is the children of a folder at fixed positions: Len positions,
// At(i) the child at position i or nil where there is none. In a folder
// of the archive, each kid (a member or a folder, sorted by name) has
// slotsPerKid positions: itself, then its views folder and the views
// beside it, where it has them. A listing is made from the tree without
// reading or allocating anything, so opening a folder costs the same
// whatever its size, and listing it costs what the positions listed
// cost.
type Listing struct {
	a     *Archive
	n     *Node
	kids  []uint32
	views *npyInfo // a views folder's header: one position per view kind
}

// Listing is the listing of a folder (an empty one for a file). A views
// folder's reads the npy header (once), under ctx.
func (n *Node) Listing(ctx context.Context) Listing {
	switch n.kind {
	case kindDir:
		return Listing{a: n.a, n: n, kids: n.a.folders[n.i].kids}
	case kindViews:
		return Listing{a: n.a, n: n, views: n.member().info(ctx)}
	}
	return Listing{}
}

// Len is the number of positions.
func (l Listing) Len() int {
	if l.views != nil {
		return len(viewKinds)
	}
	return len(l.kids) * slotsPerKid
}

// At is the child at position i, or nil when there is none there. It
// reads nothing.
func (l Listing) At(i int) *Node {
	if ni := l.views; ni != nil {
		v := &viewKinds[i]
		if v.beside || ni.err != nil || !v.has(ni) {
			return nil
		}
		return &Node{a: l.a, i: l.n.i, kind: kindView, view: uint8(i)}
	}
	k := l.kids[i/slotsPerKid]
	slot := i % slotsPerKid
	if slot == 0 {
		return l.a.kidNode(k)
	}
	if k&dirKid != 0 {
		return nil
	}
	m := l.a.member(int(k))
	st := m.st.Load()
	if slot == 1 {
		if st&flagViews == 0 {
			return nil
		}
		return &Node{a: l.a, i: int32(k), kind: kindViews}
	}
	v := besideKinds[slot-2]
	if st&besideFlag(viewKinds[v].besideIndex) == 0 {
		return nil
	}
	return &Node{a: l.a, i: int32(k), kind: kindView, view: uint8(v)}
}

// Prepare reads, many at once, what the attributes of the children at
// positions [from, to) need: the npy headers of the arrays whose views
// beside them (KEY.ra) are there, whose sizes depend on them. A
// listing with attributes (READDIRPLUS, ls -l) calls it before asking
// for them; a source.Prefetcher is first told the header bytes.
func (l Listing) Prepare(ctx context.Context, from, to int) {
	if l.views != nil || l.a == nil {
		return
	}
	from, to = max(from, 0), min(to, l.Len())
	var todo []*Member
	for k := from / slotsPerKid; k*slotsPerKid < to; k++ {
		kid := l.kids[k]
		if kid&dirKid != 0 {
			continue
		}
		m := l.a.member(int(kid))
		if m.st.Load()&besideMask == 0 || l.a.infos.get(m.e.Index) != nil {
			continue
		}
		// Only when a beside view's position is among those asked for.
		if hi := k*slotsPerKid + slotsPerKid; hi <= from || k*slotsPerKid+2 >= to {
			continue
		}
		todo = append(todo, m)
	}
	l.a.readInfos(ctx, todo)
}

// Prepared reports whether the attributes of the child at position i
// are known without reading anything: all are but a view beside an
// array (KEY.ra) whose npy header has not been read (or was let go).
func (l Listing) Prepared(i int) bool {
	if l.views != nil || l.a == nil || i%slotsPerKid < 2 {
		return true
	}
	k := l.kids[i/slotsPerKid]
	if k&dirKid != 0 {
		return true
	}
	m := l.a.member(int(k))
	return m.st.Load()&besideMask == 0 || l.a.infos.get(m.e.Index) != nil
}

// Children lists a folder's children sorted by name, in a new slice
// (for tools and tests: the mount lists through Listing).
func (n *Node) Children(ctx context.Context) []*Node {
	type named struct {
		n    *Node
		name string
	}
	l := n.Listing(ctx)
	var kids []named
	for i := range l.Len() {
		if c := l.At(i); c != nil {
			kids = append(kids, named{c, c.Name()})
		}
	}
	slices.SortFunc(kids, func(x, y named) int { return strings.Compare(x.name, y.name) })
	out := make([]*Node, len(kids))
	for i, k := range kids {
		out[i] = k.n
	}
	return out
}

// infoReaders is how many goroutines read the npy headers of a listing's
// arrays (Listing.Prepare): more than the cores, as the reads wait on a
// disk or a network.
const infoReaders = 8

// readInfos reads the npy headers of ms (what their views need of them)
// from a few goroutines, after telling a source that merges requests
// which bytes they need.
func (a *Archive) readInfos(ctx context.Context, ms []*Member) {
	if len(ms) == 0 {
		return
	}
	a.prefetchHeaders(ctx, ms)
	if len(ms) == 1 {
		ms[0].info(ctx)
		return
	}
	workers.Run(ctx, len(ms), infoReaders, func(_, i int) { ms[i].info(ctx) })
}

// prefetchGuess is how many bytes of a member's data reading its npy
// header usually needs: a header of the common sizes (numpy pads them to
// 64 or 128 bytes; wide records take more), or its start when deflated.
// extraGuess is the extra field of a local header allowed for past its
// name (numpy writes a zip64 one of 20 bytes).
const (
	prefetchGuess = 1 << 10
	extraGuess    = 64
)

// headerRead is how many bytes from a member's local header reading its
// npy header is expected to need.
func headerRead(m *Member) int64 {
	return zip.LocalHeaderLen + int64(len(m.Name())) + extraGuess + min(m.e.CompressedSize, prefetchGuess)
}

// prefetchHeaders tells a source that merges requests (source.Prefetcher)
// which bytes reading the npy headers of ms will need, so that a remote
// archive fetches many headers in a few requests, not one each.
func (a *Archive) prefetchHeaders(ctx context.Context, ms []*Member) {
	p, ok := a.r.src.(source.Prefetcher)
	if !ok {
		return
	}
	rs := make([]source.Range, 0, len(ms))
	for _, m := range ms {
		if m.located() || m.e.HeaderOffset >= a.size {
			continue
		}
		rs = append(rs, source.Range{Off: m.e.HeaderOffset, Len: min(headerRead(m), a.size-m.e.HeaderOffset)})
	}
	if len(rs) > 0 {
		p.Prefetch(ctx, rs)
	}
}
