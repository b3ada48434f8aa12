package npz

import (
	"container/list"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// A viewKind is one kind of view of a .npy member: a file in its views
// folder KEY/ (header.json, raw.bin) or beside it (KEY.ra). Adding a kind
// is adding an entry to viewKinds (and its tests): inode numbers,
// listings, lookups and the mount's node count all follow the table.
//
// A view's bytes are a head made from the npy header (all of header.json;
// none of raw.bin; KEY.ra's RawArray header) followed by the array's data
// bytes, taken from the member unchanged (so a stored member's data is
// still spliced after the head).
type viewKind struct {
	// name is the view's name in the views folder KEY/, or for a view
	// beside KEY.npy, the suffix of its name KEY+name.
	name   string
	beside bool
	// has reports whether an array with this header has the view.
	has func(info *npyInfo) bool
	// headLen is the length of the head; head renders it.
	headLen func(info *npyInfo) int64
	head    func(m *Member) ([]byte, error)
	// data reports whether the array's data bytes follow the head.
	data bool
}

var viewKinds = []viewKind{
	{
		name:    "header.json",
		has:     func(*npyInfo) bool { return true },
		headLen: func(info *npyInfo) int64 { return info.jsonLen },
		head:    (*Member).HeaderJSON,
	},
	{
		// Object arrays have no raw bytes: their data is a pickle.
		name: "raw.bin",
		has:  func(info *npyInfo) bool { return !info.object },
		data: true,
	},
	{
		// KEY.ra: the array in the RawArray format (see
		// npy.RawArrayHeader), for arrays that have a faithful one.
		name:    ".ra",
		beside:  true,
		has:     func(info *npyInfo) bool { return info.raLen > 0 },
		headLen: func(info *npyInfo) int64 { return int64(info.raLen) },
		head:    (*Member).RawArray,
		data:    true,
	},
}

// nBeside is how many kinds of view lie beside KEY.npy; each .npy file
// node is followed by as many inode numbers for them.
var nBeside = func() (n int) {
	for _, v := range viewKinds {
		if v.beside {
			n++
		}
	}
	return n
}()

// ViewNames are the names a views folder may hold, in the order of the
// table (which is the order of their inode numbers after the folder's).
func ViewNames() []string {
	var out []string
	for _, v := range viewKinds {
		if !v.beside {
			out = append(out, v.name)
		}
	}
	return out
}

// BesideSuffixes are the suffixes of the views beside KEY.npy: KEY.ra is
// KEY + ".ra".
func BesideSuffixes() []string {
	var out []string
	for _, v := range viewKinds {
		if v.beside {
			out = append(out, v.name)
		}
	}
	return out
}

// NodesPerArray is how many nodes a served .npy member makes: its file,
// its views folder, the views in it and those beside it.
func NodesPerArray() int { return 2 + len(viewKinds) }

// npyInfo is what a member's views need of its npy header, read once and
// kept small: the parsed header is read again when asked for (Header,
// header.json), so views cost about 48 bytes a member, need no budget, and
// which members have them never depends on what was read before.
type npyInfo struct {
	err     error // why the member has no views
	dataOff int64 // where the array data starts in the member
	dataLen int64
	jsonLen int64 // length of header.json
	raLen   int32 // length of KEY.ra's header; 0 when it has none
	object  bool  // an object array (no raw bytes)
}

// info reads (once) the member's npy header for its views.
func (m *Member) info() *npyInfo {
	if ni := m.ni.Load(); ni != nil {
		return ni
	}
	// Before taking the lock, which locate takes too: a location that
	// could not be read for now is not kept, so it must not be looked
	// for again under the lock.
	if l := m.locate(); errors.Is(l.err, source.ErrTransient) {
		m.a.unsettle(m)
		return &npyInfo{err: l.err}
	}
	mu := m.a.lock(m)
	mu.Lock()
	defer mu.Unlock()
	if ni := m.ni.Load(); ni != nil {
		return ni
	}
	ni := &npyInfo{}
	h, err := m.readNPY()
	var js []byte
	if err == nil {
		js, err = m.renderJSON(h)
	}
	if err != nil {
		ni.err = err
		if m.views != nil && m.state == memberServed {
			m.a.notef("npz: %q: no views: %v", m.e.Name, err)
		}
		if errors.Is(err, source.ErrTransient) {
			// Not kept: the next look reads the header again.
			m.a.unsettle(m)
			return ni
		}
	} else {
		ni.dataOff, ni.dataLen = h.DataOffset, h.DataLength(m.e.Size)
		ni.jsonLen, ni.object = int64(len(js)), h.DType.HasObject
		if ra, err := h.RawArrayHeader(); err == nil {
			ni.raLen = int32(len(ra))
		}
		m.a.jsonCache.put(m, js)
	}
	m.a.settle(m)
	m.ni.Store(ni)
	return ni
}

// Header reads and returns the member's npy header, or why it is not a
// valid .npy member. It reads the header every time it is called.
func (m *Member) Header() (*npy.Header, error) {
	if err := m.info().err; err != nil {
		return nil, err
	}
	return m.readNPY()
}

// HeaderJSON is the header.json view of the member.
func (m *Member) HeaderJSON() ([]byte, error) {
	ni := m.info()
	if ni.err != nil {
		return nil, ni.err
	}
	if js := m.a.jsonCache.get(m); js != nil {
		return js, nil
	}
	h, err := m.readNPY()
	if err != nil {
		return nil, err
	}
	js, err := m.renderJSON(h)
	if err != nil {
		return nil, err
	}
	if int64(len(js)) != ni.jsonLen {
		// Rendering is deterministic: the member's bytes changed.
		return nil, fmt.Errorf("npz: %q: header.json renders to %d bytes now, %d before", m.e.Name, len(js), ni.jsonLen)
	}
	m.a.jsonCache.put(m, js)
	return js, nil
}

// renderJSON renders the member's header.json from its header: with
// archive_offset when the array's bytes lie as they are in the archive's
// file (see archiveOffset).
func (m *Member) renderJSON(h *npy.Header) ([]byte, error) {
	if off, ok := m.archiveOffset(); ok {
		return h.JSONInArchive(m.e.Size, off+h.DataOffset)
	}
	return h.JSON(m.e.Size)
}

// archiveOffset is where the member's bytes start in the archive's file,
// for a stored member of an archive read from a file (source.FileBacked);
// ok is false otherwise (deflated, remote, or not located). It reads
// nothing: the member is located first.
func (m *Member) archiveOffset() (int64, bool) {
	l := m.loc.Load()
	if !m.a.hasFD || m.e.Method != zip.Stored || l == nil || l.err != nil {
		return 0, false
	}
	return m.a.fdBase + l.dataOff, true
}

// HasViews reports whether the member's KEY/ folder holds views; it reads
// the npy header if needed. (The folder itself is served for every served
// .npy member whose key is free, views or not: see Node.Lookup.)
func (m *Member) HasViews() bool {
	return m.state == memberServed && m.views != nil && m.info().err == nil
}

// viewNodes makes the nodes of the member's views folder, sorted by name.
// They are made on demand: only the kernel's table of known nodes keeps
// them.
func (m *Member) viewNodes() []*Node {
	ni := m.info()
	v := m.views
	if ni.err != nil || v == nil {
		return nil
	}
	var out []*Node
	for i := range viewKinds {
		if !viewKinds[i].beside && viewKinds[i].has(ni) {
			out = append(out, &Node{name: viewKinds[i].name, ino: v.ino + 1 + uint64(i), kind: kindView, view: uint8(i), m: m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// besideNodes makes the nodes of the views beside file, the node of a
// served .npy member, whose names are free in the folder whose children
// are kids. The views are made on demand, as viewNodes are; whether they
// exist depends on the npy header, which this reads.
func besideNodes(file *Node, kids []*Node) []*Node {
	m := file.m
	key, ok := strings.CutSuffix(file.name, ".npy")
	if !ok || key == "" || m.state != memberServed {
		return nil
	}
	var out []*Node
	j := uint64(0)
	for i := range viewKinds {
		v := &viewKinds[i]
		if !v.beside {
			continue
		}
		j++
		name := key + v.name
		if _, taken := findNode(kids, name); taken || len(name) > maxComponent {
			continue
		}
		if ni := m.info(); ni.err == nil && v.has(ni) {
			out = append(out, &Node{name: name, ino: file.ino + j, kind: kindView, view: uint8(i), m: m})
		}
	}
	return out
}

// RawArray is the RawArray header of the member's array (the head of
// KEY.ra), or why it has none.
func (m *Member) RawArray() ([]byte, error) {
	if err := m.info().err; err != nil {
		return nil, err
	}
	h, err := m.readNPY()
	if err != nil {
		return nil, err
	}
	return h.RawArrayHeader()
}

// viewFile is the content of view i of the member.
func (m *Member) viewFile(i int) *File {
	ni := m.info()
	v := &viewKinds[i]
	f := &File{m: m, kind: fileView, view: uint8(i)}
	if v.headLen != nil {
		f.head = v.headLen(ni)
	}
	f.size = f.head
	if v.data {
		f.base = ni.dataOff
		f.size += ni.dataLen
	}
	return f
}

// jsonCacheBytes bounds the rendered header.json documents an archive
// keeps: short ones render in microseconds, but reading a long one page by
// page would render it whole for every page.
const jsonCacheBytes = 16 << 20

// jsonCache keeps the longest-lived of the rendered header.json documents
// of keepJSON bytes or more, least recently used out first. It changes no
// answer, only how fast long ones are given.
type jsonCache struct {
	mu    sync.Mutex
	bytes int64
	order list.List // of *jsonEntry, most recent first
	byM   map[*Member]*list.Element
}

type jsonEntry struct {
	m  *Member
	js []byte
}

// keepJSON is the length from which a rendered header.json is cached.
const keepJSON = 16 << 10

func (c *jsonCache) get(m *Member) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byM[m]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*jsonEntry).js
	}
	return nil
}

func (c *jsonCache) put(m *Member, js []byte) {
	if len(js) < keepJSON || len(js) > jsonCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byM == nil {
		c.byM = map[*Member]*list.Element{}
	}
	if _, ok := c.byM[m]; ok {
		return
	}
	c.byM[m] = c.order.PushFront(&jsonEntry{m, js})
	c.bytes += int64(len(js))
	for c.bytes > jsonCacheBytes {
		e := c.order.Back()
		je := e.Value.(*jsonEntry)
		c.order.Remove(e)
		delete(c.byM, je.m)
		c.bytes -= int64(len(je.js))
	}
}
