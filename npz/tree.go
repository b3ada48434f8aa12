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
	kindView         // a file in KEY/ (see viewKinds)
)

// Node is a folder or a file of the served tree. Inode numbers are stable
// for the life of the Archive. Nodes of files and views folders are 48
// bytes; a folder's children are in a folder of its own.
type Node struct {
	name string
	ino  uint64
	m    *Member // the member of a file, views folder or view
	dir  *folder // a folder's children (kindDir)
	kind uint8
	view uint8 // kindView: the index in viewKinds
}

// folder is what a folder node has beyond a file's.
type folder struct {
	a      *Archive
	kids   []*Node // sorted by name
	nviews int32   // views folders among kids
}

// archive is the archive n belongs to.
func (n *Node) archive() *Archive {
	if n.m != nil {
		return n.m.a
	}
	return n.dir.a
}

// Name is the node's name within its folder ("" for the root).
func (n *Node) Name() string { return n.name }

// Unsettled reports a folder whose contents may change: a views folder
// whose npy header could not be read for now (its source failed in a way
// that may pass, source.ErrTransient), or a folder of an archive where
// some such header is pending (its KEY.ra names may come). Nothing about
// it should be cached.
func (n *Node) Unsettled() bool {
	switch n.kind {
	case kindViews:
		return n.m.unsettled.Load()
	case kindDir:
		return n.dir.a.unsettled.Load() > 0
	}
	return false
}

// Ino is the node's inode number: unique, non-zero, stable.
func (n *Node) Ino() uint64 { return n.ino }

// IsDir reports whether n is a folder.
func (n *Node) IsDir() bool { return n.kind == kindDir || n.kind == kindViews }

// ModTime is, for a member and everything made from it (its views
// folder, header.json, raw.bin), the member's modification time from the
// zip; for the root and the folders its name makes, the archive's.
func (n *Node) ModTime() time.Time {
	if n.m != nil {
		return n.m.ModTime()
	}
	return n.archive().modTime
}

// DiskUsage is what the node takes in the archive: a member's compressed
// size, and nothing for folders and views, which are made from members
// that are counted already. du(1) of a mount then adds up to about the
// archive's size rather than twice its arrays.
func (n *Node) DiskUsage() int64 {
	if n.kind == kindFile {
		return n.m.e.CompressedSize
	}
	return 0
}

// Member is the archive member a file or views folder comes from, or nil
// for other folders.
func (n *Node) Member() *Member { return n.m }

// File is the content of a file node, nil for a folder.
func (n *Node) File() *File {
	switch n.kind {
	case kindFile:
		return n.m.File()
	case kindView:
		return n.m.viewFile(int(n.view))
	}
	return nil
}

// Lookup returns the child of a folder by name, or nil. The views folder
// KEY/ of a served KEY.npy exists whenever its name is free, decided from
// the central directory alone, so that listings and lookups always agree
// and nothing depends on what was read first; the views in it (see
// viewKinds) are there when the npy header is valid, and it is empty
// otherwise (npzfs ls says why). Looking into it reads the header. A view
// beside KEY.npy (KEY.ra) exists when its name is free and the header
// gives the array that view, so looking it up reads the header too.
func (n *Node) Lookup(name string) *Node {
	switch n.kind {
	case kindDir:
		if c, ok := findNode(n.dir.kids, name); ok {
			return c
		}
		// A view beside KEY.npy?
		for _, suffix := range BesideSuffixes() {
			key, ok := strings.CutSuffix(name, suffix)
			if !ok {
				continue
			}
			if f, ok := findNode(n.dir.kids, key+".npy"); ok && f.kind == kindFile && f.m.IsNPY() {
				for _, c := range besideNodes(f, n.dir.kids) {
					if c.name == name {
						return c
					}
				}
			}
		}
	case kindViews:
		for _, c := range n.m.viewNodes() {
			if c.name == name {
				return c
			}
		}
	}
	return nil
}

// Children lists a folder's children sorted by name, in a new slice. A
// views folder is listed whether or not its header is valid (see Lookup);
// the views beside a KEY.npy depend on its header, so listing a folder
// reads the npy headers of the arrays in it (once each: what the views
// need of them is kept). Listing a folder first tells a
// source.Prefetcher the header bytes of all of them.
func (n *Node) Children() []*Node {
	switch n.kind {
	case kindDir:
		var arrays []*Node
		var unread []*Member
		for _, k := range n.dir.kids {
			if k.kind == kindFile && k.m.state == memberServed && k.m.IsNPY() {
				arrays = append(arrays, k)
				if k.m.ni.Load() == nil {
					unread = append(unread, k.m)
				}
			}
		}
		if len(unread) > 0 {
			// Every header is about to be read (for KEY.ra): a remote
			// source fetches them in a few merged requests.
			n.dir.a.prefetchHeaders(unread)
		}
		readInfos(arrays)
		var beside []*Node
		for _, k := range arrays {
			beside = append(beside, besideNodes(k, n.dir.kids)...)
		}
		if len(beside) == 0 {
			return slices.Clone(n.dir.kids)
		}
		return mergeNodes(n.dir.kids, beside)
	case kindViews:
		return n.m.viewNodes()
	}
	return nil
}

// infoReaders is how many goroutines read the npy headers of a folder's
// arrays when it is listed: more than the cores, as the reads wait on a
// disk or a network.
const infoReaders = 8

// readInfos reads the npy headers of the members of files (what their
// views need of them) from a few goroutines, skipping those already read.
func readInfos(files []*Node) {
	var todo []*Member
	for _, f := range files {
		if f.m.ni.Load() == nil {
			todo = append(todo, f.m)
		}
	}
	if len(todo) < 2 {
		return // read when needed, in this goroutine
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(infoReaders, len(todo)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(todo)); i = next.Add(1) - 1 {
				todo[i].info()
			}
		})
	}
	wg.Wait()
}

// findNode finds the node named name in kids, which are sorted by name.
func findNode(kids []*Node, name string) (*Node, bool) {
	i, ok := slices.BinarySearchFunc(kids, name, func(c *Node, name string) int {
		return strings.Compare(c.name, name)
	})
	if !ok {
		return nil, false
	}
	return kids[i], true
}

// prefetchGuess is how many bytes past a member's local header and name
// reading its npy header usually needs: the extra field (numpy writes a
// zip64 one) and a header of the common sizes, or its start when deflated.
const prefetchGuess = 1 << 10

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
		if m.loc.Load() != nil || m.e.HeaderOffset >= a.size {
			continue
		}
		n := zip.LocalHeaderLen + int64(len(m.e.Name)) + min(m.e.CompressedSize, prefetchGuess)
		rs = append(rs, source.Range{Off: m.e.HeaderOffset, Len: min(n, a.size-m.e.HeaderOffset)})
	}
	if len(rs) > 0 {
		p.Prefetch(context.Background(), rs)
	}
}

// nodeAlloc hands out nodes from chunks, so a tree of many nodes costs few
// allocations.
type nodeAlloc struct {
	chunk []Node
	ino   uint64
}

func (al *nodeAlloc) node(a *Archive, kind uint8, name string, m *Member) *Node {
	if len(al.chunk) == cap(al.chunk) {
		al.chunk = make([]Node, 0, 1024)
	}
	al.chunk = al.chunk[:len(al.chunk)+1]
	n := &al.chunk[len(al.chunk)-1]
	al.ino++
	*n = Node{kind: kind, name: name, m: m, ino: al.ino}
	if kind == kindDir {
		n.dir = &folder{a: a}
	}
	switch {
	case kind == kindViews:
		al.ino += uint64(len(viewKinds)) // the views in it
	case kind == kindFile && m.IsNPY():
		al.ino += uint64(nBeside) // the views beside it
	}
	return n
}

// mergeNodes merges sorted kids with views (sorted here), whose names
// are all different from the kids'.
func mergeNodes(kids, views []*Node) []*Node {
	byName := func(x, y *Node) int { return strings.Compare(x.name, y.name) }
	slices.SortFunc(views, byName)
	out := make([]*Node, 0, len(kids)+len(views))
	i, j := 0, 0
	for i < len(kids) && j < len(views) {
		if kids[i].name < views[j].name {
			out = append(out, kids[i])
			i++
		} else {
			out = append(out, views[j])
			j++
		}
	}
	out = append(out, kids[i:]...)
	return append(out, views[j:]...)
}

// maxFolders is how many folders the names of an archive of n members
// may make.
func maxFolders(n int) int { return 1<<16 + 4*n }

// cand is a name a folder may hold.
type cand struct {
	prefix uint64 // the name's first 8 bytes, big-endian: a cheap first comparison
	name   string
	kind   uint8
	m      *Member // kindFile
	dir    *Node   // kindDir
}

// namePrefix packs the first 8 bytes of s, zero-padded, so that comparing
// prefixes orders names as comparing the names does, unless they tie.
func namePrefix(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}

// dirBuild is a folder being built.
type dirBuild struct {
	node  *Node
	cands []cand
}

// buildTree builds the served tree from the members: each served member at
// its path, folders for its path's components and for directory entries,
// and a views folder KEY/ beside each KEY.npy. It records on each member
// why it is not served or has no views. Collisions, in one folder:
//   - a folder beats a file of the same name (the file is shadowed);
//   - of files of the same name the last in the central directory wins;
//   - any member file or folder beats a views folder of the same name.
func (a *Archive) buildTree() {
	var al nodeAlloc
	a.root = al.node(a, kindDir, "", nil)
	rootB := &dirBuild{node: a.root, cands: make([]cand, 0, len(a.members))}
	dirs := map[string]*dirBuild{}
	order := []*dirBuild{rootB}
	var ensure func(path string) *dirBuild
	ensure = func(path string) *dirBuild {
		if path == "" {
			return rootB
		}
		if d, ok := dirs[path]; ok {
			return d
		}
		parent, base := "", path
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			parent, base = path[:i], path[i+1:]
		}
		pd := ensure(parent)
		d := &dirBuild{node: al.node(a, kindDir, base, nil)}
		dirs[path] = d
		order = append(order, d)
		pd.cands = append(pd.cands, cand{prefix: namePrefix(base), name: base, kind: kindDir, dir: d.node})
		return d
	}
	// Folders made from names are bounded by the members: a folder costs
	// about 250 bytes, and a name of 4 KiB can ask for 2,048 of them.
	folderBudget := maxFolders(len(a.members))
	for i := range a.members {
		m := &a.members[i]
		if m.state != memberServed {
			continue
		}
		folder, parent, base := m.path, "", m.path
		if !m.dir {
			folder = ""
			if i := strings.LastIndexByte(m.path, '/'); i >= 0 {
				folder, parent, base = m.path[:i], m.path[:i], m.path[i+1:]
			}
		}
		missing := 0
		for p := folder; p != ""; {
			if _, ok := dirs[p]; ok {
				break
			}
			missing++
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if len(dirs)+missing > folderBudget {
			m.skip(fmt.Sprintf("the archive's names make more than %d folders (at most 65,536 and 4 per member)", folderBudget))
			a.notef("npz: %q: not served: %s", m.e.Name, m.reason)
			continue
		}
		if m.dir {
			ensure(m.path)
			continue
		}
		d := ensure(parent)
		d.cands = append(d.cands, cand{prefix: namePrefix(base), name: base, kind: kindFile, m: m})
	}

	for _, d := range order {
		// Folders first, then files from the last entry back: the first
		// of each name wins.
		slices.SortFunc(d.cands, func(x, y cand) int {
			if x.prefix != y.prefix {
				return cmp.Compare(x.prefix, y.prefix)
			}
			if c := strings.Compare(x.name, y.name); c != 0 {
				return c
			}
			if c := cmp.Compare(x.kind, y.kind); c != 0 {
				return c
			}
			if x.kind == kindFile {
				return cmp.Compare(y.m.e.Index, x.m.e.Index)
			}
			return 0
		})
		kids := make([]*Node, 0, len(d.cands))
		var winner cand
		for i, c := range d.cands {
			if i > 0 && c.name == winner.name {
				m := c.m
				m.state = memberShadowed
				if winner.kind == kindDir {
					m.reason = fmt.Sprintf("shadowed: a folder %q holds other members", m.path)
				} else {
					m.reason = fmt.Sprintf("shadowed by a later member of the same name (entry %d)", winner.m.e.Index)
				}
				a.notef("npz: %q: not served: %s", m.e.Name, m.reason)
				continue
			}
			winner = c
			if c.kind == kindDir {
				kids = append(kids, c.dir)
			} else {
				kids = append(kids, al.node(a, kindFile, c.name, c.m))
			}
		}
		// Views folders, where the name is free.
		var views []*Node
		for i, k := range kids {
			if k.kind != kindFile || !k.m.IsNPY() {
				continue
			}
			key := strings.TrimSuffix(k.name, ".npy")
			m := k.m
			if key == "" {
				m.reason = "no views: the name is only \".npy\""
				continue
			}
			// Every name sorting between KEY and KEY.npy starts with KEY,
			// so KEY, if taken, is found a few steps back.
			j := i - 1
			for j >= 0 && kids[j].name > key && strings.HasPrefix(kids[j].name, key) {
				j--
			}
			if j >= 0 && kids[j].name == key {
				what := "a member file"
				if kids[j].kind == kindDir {
					what = "a folder of members"
				}
				m.reason = fmt.Sprintf("no views: %s takes the name %q", what, key)
				a.notef("npz: %q: %s", m.e.Name, m.reason)
				continue
			}
			m.views = al.node(a, kindViews, key, m)
			views = append(views, m.views)
		}
		if len(views) > 0 {
			kids = mergeNodes(kids, views)
			d.node.dir.nviews = int32(min(len(views), 1<<30))
		}
		d.node.dir.kids = kids
		d.cands = nil
	}
	a.maxIno = al.ino
}
