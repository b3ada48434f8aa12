package npz

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
func (n *Node) File() *File {
	switch n.kind {
	case kindFile:
		return n.member().File()
	case kindView:
		m := n.member()
		if viewKinds[n.view].beside && n.a.infos.get(m.e.Index) == nil {
			n.a.readAhead(m)
		}
		return m.viewFile(int(n.view))
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
func (a *Archive) readAhead(m *Member) {
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
	Listing{a: a, kids: kids}.Prepare(k*slotsPerKid, (k+aheadLen)*slotsPerKid)
}

// Lookup returns the child of a folder by name, or nil. Which names a
// folder holds is decided from the central directory alone, so that
// listings and lookups always agree and nothing depends on what was read
// first: the views folder KEY/ of a served KEY.npy exists whenever its
// name is free, and so does KEY.ra (see Member.Reason for an array whose
// header gives it none). Looking into KEY/ reads the header: its views
// (header.json, raw.bin) are there when the header gives the array them.
func (n *Node) Lookup(name string) *Node {
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
		ni := m.info()
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
	views bool // a views folder: one position per view kind
}

// Listing is the listing of a folder (an empty one for a file).
func (n *Node) Listing() Listing {
	switch n.kind {
	case kindDir:
		return Listing{a: n.a, n: n, kids: n.a.folders[n.i].kids}
	case kindViews:
		return Listing{a: n.a, n: n, views: true}
	}
	return Listing{}
}

// Len is the number of positions.
func (l Listing) Len() int {
	if l.views {
		return len(viewKinds)
	}
	return len(l.kids) * slotsPerKid
}

// At is the child at position i, or nil when there is none there. In a
// views folder, it reads the npy header (once).
func (l Listing) At(i int) *Node {
	if l.views {
		v := &viewKinds[i]
		if v.beside {
			return nil
		}
		m := l.n.member()
		if ni := m.info(); ni.err != nil || !v.has(ni) {
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
func (l Listing) Prepare(from, to int) {
	if l.views || l.a == nil {
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
	l.a.readInfos(todo)
}

// Children lists a folder's children sorted by name, in a new slice
// (for tools and tests: the mount lists through Listing).
func (n *Node) Children() []*Node {
	type named struct {
		n    *Node
		name string
	}
	l := n.Listing()
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
func (a *Archive) readInfos(ms []*Member) {
	if len(ms) == 0 {
		return
	}
	a.prefetchHeaders(ms)
	if len(ms) == 1 {
		ms[0].info()
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(infoReaders, len(ms)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ms)); i = next.Add(1) - 1 {
				ms[i].info()
			}
		})
	}
	wg.Wait()
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
func (a *Archive) prefetchHeaders(ms []*Member) {
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
		p.Prefetch(context.Background(), rs)
	}
}

// maxFolders is how many folders the names of an archive of n members
// may make.
func maxFolders(n int) int { return 1<<16 + 4*n }

// buildTree builds the served tree from the members: each served member at
// its path, folders for its path's components and for directory entries,
// and for each KEY.npy its views folder KEY/ and the views beside it
// (KEY.ra) where their names are free. It records on each member why it
// is not served or has no views. Collisions, in one folder:
//   - a folder beats a file of the same name (the file is shadowed);
//   - of files of the same name the last in the central directory wins;
//   - any member file or folder beats a views folder of the same name,
//     and a views folder beats a view beside another array.
//
// It allocates the folder table and one slice of kids per folder, sized
// by a first pass that counts them (a member's folder is kept in its
// lhLen meanwhile, which means nothing until the member is located).
func (a *Archive) buildTree() {
	a.folders = []folder{{parent: 0}}
	byPath := map[string]int32{}
	var ensure func(path string) int32
	ensure = func(path string) int32 {
		if path == "" {
			return 0
		}
		if f, ok := byPath[path]; ok {
			return f
		}
		parent, base := "", path
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			parent, base = path[:i], path[i+1:]
		}
		pf := ensure(parent)
		f := int32(len(a.folders))
		a.folders = append(a.folders, folder{name: base, parent: pf})
		byPath[path] = f
		return f
	}
	// Folders made from names are bounded by the members: a name of
	// 4 KiB can ask for 2,048 of them.
	folderBudget := maxFolders(a.n)
	counts := []int32{0}
	for i := range a.n {
		m := a.member(i)
		if m.state() != memberServed {
			continue
		}
		p := m.Path()
		dir := m.IsDir()
		folderPath := p
		if !dir {
			folderPath = ""
			if j := strings.LastIndexByte(p, '/'); j >= 0 {
				folderPath = p[:j]
			}
		}
		missing := 0
		for q := folderPath; q != ""; {
			if _, ok := byPath[q]; ok {
				break
			}
			missing++
			j := strings.LastIndexByte(q, '/')
			if j < 0 {
				break
			}
			q = q[:j]
		}
		if len(a.folders)-1+missing > folderBudget {
			m.skip(fmt.Sprintf("the archive's names make more than %d folders (at most 65,536 and 4 per member)", folderBudget))
			a.notef("npz: %q: not served: %s", m.Name(), m.reason())
			continue
		}
		n0 := len(a.folders)
		f := ensure(folderPath)
		for j := n0; j < len(a.folders); j++ {
			counts = append(counts, 0)
			if j > 0 {
				counts[a.folders[j].parent]++
			}
		}
		if !dir {
			counts[f]++
			m.lhLen = uint32(f)
		}
	}
	for f := range a.folders {
		a.folders[f].kids = make([]uint32, 0, counts[f])
	}
	for f := 1; f < len(a.folders); f++ {
		p := &a.folders[a.folders[f].parent]
		p.kids = append(p.kids, uint32(f)|dirKid)
	}
	for i := range a.n {
		m := a.member(i)
		if m.state() == memberServed && !m.IsDir() {
			f := &a.folders[m.lhLen]
			f.kids = append(f.kids, uint32(i))
			m.lhLen = 0
		}
	}
	if len(a.folders) > 1 {
		a.folderByPath = byPath
	}
	for f := range a.folders {
		names := a.sortKids(&a.folders[f])
		a.placeViews(a.folders[f].kids, names)
	}
	a.memberIno = 1 + uint64(len(a.folders))
	a.maxIno = a.memberIno + uint64(a.n)*inoBlock - 1
}

// sortKids sorts a folder's kids by name and drops the losers of name
// collisions: folders first, then files from the last entry back, so the
// first of each name wins. Names as numpy writes them often come sorted
// already: that is checked first. It returns the kids' names, in a slice
// made for the tree's building.
func (a *Archive) sortKids(f *folder) (names []string) {
	names = make([]string, len(f.kids))
	for i, k := range f.kids {
		names[i] = a.kidName(k)
	}
	order := func(x, y uint32, xn, yn string) int {
		if c := strings.Compare(xn, yn); c != 0 {
			return c
		}
		if xd, yd := x&dirKid != 0, y&dirKid != 0; xd != yd {
			if xd {
				return -1
			}
			return 1
		}
		return cmp.Compare(y, x) // the later member first
	}
	sorted := true
	for i := 1; i < len(f.kids) && sorted; i++ {
		sorted = order(f.kids[i-1], f.kids[i], names[i-1], names[i]) <= 0
	}
	if !sorted {
		slices.SortFunc(f.kids, func(x, y uint32) int { return order(x, y, a.kidName(x), a.kidName(y)) })
		for i, k := range f.kids {
			names[i] = a.kidName(k)
		}
	}
	out, outNames := f.kids[:0], names[:0]
	var winner uint32
	for i, k := range f.kids {
		name := names[i]
		if len(out) > 0 && name == outNames[len(outNames)-1] {
			m := a.member(int(k))
			m.setState(memberShadowed)
			if winner&dirKid != 0 {
				a.setReason(m, fmt.Sprintf("shadowed: a folder %q holds other members", m.path()))
			} else {
				a.setReason(m, fmt.Sprintf("shadowed by a later member of the same name (entry %d)", winner))
			}
			a.notef("npz: %q: not served: %s", m.Name(), m.reason())
			continue
		}
		winner = k
		out, outNames = append(out, k), append(outNames, name)
	}
	clear(f.kids[len(out):])
	f.kids = out
	return outNames
}

// placeViews decides, from the names alone, which arrays among a
// folder's kids have a views folder and which views beside them, and
// notes why those that have none do not. A view beside KEY.npy does not
// need the views folder: only its own name must be free. The names that
// could take KEY and KEY.ra sort near KEY.npy, so they are looked for
// from it (findNear), not from the folder's ends; names are the kids'.
func (a *Archive) placeViews(kids []uint32, names []string) {
	npyKey := func(i int) (*Member, string) {
		if kids[i]&dirKid != 0 {
			return nil, ""
		}
		m := a.member(int(kids[i]))
		if !m.IsNPY() {
			return nil, ""
		}
		return m, strings.TrimSuffix(names[i], ".npy")
	}
	for i := range kids {
		m, key := npyKey(i)
		if m == nil {
			continue
		}
		if key == "" {
			a.setReason(m, "no views: the name is only \".npy\"")
			continue
		}
		if j, taken := findNear(names, i, key, "", ""); taken {
			what := "a member file"
			if kids[j]&dirKid != 0 {
				what = "a folder of members"
			}
			a.setReason(m, fmt.Sprintf("no views: %s takes the name %q", what, key))
			a.notef("npz: %q: %s", m.Name(), m.reason())
			continue
		}
		m.st.Or(flagViews)
	}
	for i := range kids {
		m, key := npyKey(i)
		if m == nil || key == "" {
			continue
		}
		for _, v := range besideKinds {
			suffix := viewKinds[v].name
			if len(key)+len(suffix) > maxComponent {
				continue
			}
			if _, taken := findNear(names, i, key, suffix, ""); taken {
				continue
			}
			// The views folder of KEY.ra.npy takes KEY.ra too.
			if j, ok := findNear(names, i, key, suffix, ".npy"); ok && kids[j]&dirKid == 0 && a.member(int(kids[j])).st.Load()&flagViews != 0 {
				continue
			}
			m.st.Or(besideFlag(viewKinds[v].besideIndex))
		}
	}
}

// findNear finds the name key+suffix+ext among names, which are sorted,
// starting from position i: it looks at a few neighbours on the side the
// name sorts to, then searches the rest of that side.
func findNear(names []string, i int, key, suffix, ext string) (int, bool) {
	const near = 4
	c := compareJoined(names[i], key, suffix, ext)
	if c == 0 {
		return i, true
	}
	step, lo, hi := 1, 0, i // the name sorts before i: search [lo, hi)
	if c < 0 {
		step, lo, hi = -1, i+1, len(names)
	}
	for n, j := 0, i-step; n < near && j >= lo && j < hi; n, j = n+1, j-step {
		switch c := compareJoined(names[j], key, suffix, ext); {
		case c == 0:
			return j, true
		case c*step < 0: // passed where it would be
			return 0, false
		}
		if step > 0 {
			hi = j
		} else {
			lo = j + 1
		}
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := compareJoined(names[mid], key, suffix, ext); {
		case c == 0:
			return mid, true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// compareJoined compares s with key+suffix+ext, without making that
// string.
func compareJoined(s, key, suffix, ext string) int {
	for _, part := range [...]string{key, suffix, ext} {
		n := min(len(s), len(part))
		if c := strings.Compare(s[:n], part[:n]); c != 0 {
			return c
		}
		if len(s) < len(part) {
			return -1
		}
		s = s[len(part):]
	}
	if len(s) > 0 {
		return 1
	}
	return 0
}
