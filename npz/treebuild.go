package npz

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

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
		if len(a.folders)-1+newFolders(byPath, folderPath) > folderBudget {
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
	a.fillKids(counts)
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

// newFolders is how many folders of path, itself and those above it, are
// not in byPath yet.
func newFolders(byPath map[string]int32, path string) int {
	n := 0
	for path != "" {
		if _, ok := byPath[path]; ok {
			break
		}
		n++
		j := strings.LastIndexByte(path, '/')
		if j < 0 {
			break
		}
		path = path[:j]
	}
	return n
}

// fillKids gives each folder its kids, counts[f] of them: its folders,
// then its files, each served file member's folder taken from its lhLen
// (which is cleared).
func (a *Archive) fillKids(counts []int32) {
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
