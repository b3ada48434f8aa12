package npz

import (
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/npzfs/npzfs/npy"
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
	// They are methods of the member, given the caller's context.
	headLen func(m *Member, ctx context.Context, info *npyInfo) (int64, error)
	head    func(m *Member, ctx context.Context) ([]byte, error)
	// data reports whether the array's data bytes follow the head.
	data bool
	// besideIndex numbers the views beside KEY.npy (see besideFlag).
	besideIndex int
}

var viewKinds = []viewKind{
	{
		name:    "header.json",
		has:     func(*npyInfo) bool { return true },
		headLen: (*Member).jsonLen,
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
		headLen: func(_ *Member, _ context.Context, info *npyInfo) (int64, error) { return int64(info.raLen), nil },
		head:    (*Member).RawArray,
		data:    true,
	},
}

// nBeside is how many kinds of view lie beside KEY.npy, and besideKinds
// their indexes in viewKinds; each has a bit of a member's state saying
// whether the member has it (besideFlag).
var nBeside, besideKinds = func() (int, []int) {
	var ks []int
	for i := range viewKinds {
		if viewKinds[i].beside {
			viewKinds[i].besideIndex = len(ks)
			ks = append(ks, i)
		}
	}
	if len(ks) > maxBeside {
		panic("npz: too many kinds of view beside KEY.npy for the member's state bits")
	}
	return len(ks), ks
}()

// besideKind is the index in viewKinds of the view beside KEY.npy whose
// name is KEY+suffix.
func besideKind(suffix string) int {
	for _, i := range besideKinds {
		if viewKinds[i].name == suffix {
			return i
		}
	}
	return -1
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

// npyInfo is what a member's views need of its npy header, kept small:
// the parsed header is read again when asked for (Header, header.json).
// Which views exist never depends on it (see Node.Lookup), only what
// the views folder holds and the views' sizes, so it is kept in a
// bounded cache (infoCache) and read again after it falls out.
type npyInfo struct {
	err     error // why the member has no views
	dataOff int64 // where the array data starts in the member
	dataLen int64
	jsonLen atomic.Int64 // length of header.json, once rendered; -1 before
	raLen   int32        // length of KEY.ra's header; 0 when it has none
	object  bool         // an object array (no raw bytes)
}

// info reads the member's npy header for its views, or finds what was
// read in the archive's cache of them.
func (m *Member) info(ctx context.Context) *npyInfo {
	a := m.a
	if ni := a.infos.get(m.e.Index); ni != nil {
		return ni
	}
	// Before taking the lock, which locate takes too: a location that
	// could not be read for now is not kept, so it must not be looked
	// for again under the lock. A stored member is located by the read
	// that fetches the start of its data too.
	// The bytes read are not kept past this call (what is kept of the
	// header is copied), so their buffer is used again.
	var head []byte
	if m.e.Method == zip.Stored && m.readable() == nil && m.IsNPY() {
		bp := headBufs.Get().(*[]byte)
		defer headBufs.Put(bp)
		if !m.located() {
			head = m.locateWithHead(ctx, *bp)
		} else {
			head = m.readHead(ctx, *bp)
		}
	}
	if _, err := m.dataOffset(ctx); passing(err) {
		m.unsettle()
		return &npyInfo{err: err}
	}
	ni := &npyInfo{}
	ni.jsonLen.Store(-1)
	f, known := a.facts.get(head, m.e.Size)
	var h *npy.Header
	var err error
	if !known {
		// Read holding no lock, as locate reads: the member's lock is
		// shared with others, and a read may wait on a network.
		if h, err = m.readNPYFrom(ctx, head); passing(err) {
			// Not kept: the next look reads the header again.
			m.unsettle()
			ni.err = err
			return ni
		}
	}
	mu := a.lock(m)
	mu.Lock()
	defer mu.Unlock()
	if ni := a.infos.get(m.e.Index); ni != nil {
		return ni
	}
	if known {
		ni.dataOff, ni.dataLen, ni.raLen, ni.object = f.dataOff, f.dataLen, f.raLen, f.object
		m.settle()
		a.infos.put(m.e.Index, ni)
		return ni
	}
	if err != nil {
		ni.err = err
		if m.st.Load()&flagViews != 0 && m.state() == memberServed && m.st.Or(flagNoted)&flagNoted == 0 {
			a.notef("npz: %q: no views: %v", m.Name(), err)
		}
	} else {
		ni.dataOff, ni.dataLen = h.DataOffset, h.DataLength(m.e.Size)
		ni.object = h.DType.HasObject
		if ra, err := h.RawArrayHeader(); err == nil {
			ni.raLen = int32(len(ra))
		}
		a.facts.put(head, npyFacts{size: m.e.Size, dataOff: ni.dataOff, dataLen: ni.dataLen, raLen: ni.raLen, object: ni.object})
	}
	m.settle()
	a.infos.put(m.e.Index, ni)
	return ni
}

// npyFacts is what views need of an npy header, which depends on its
// bytes and its member's size alone.
type npyFacts struct {
	size, dataOff, dataLen int64
	raLen                  int32
	object                 bool
}

// factsCacheLen bounds the headers whose facts an archive keeps by their
// bytes, and factsHeaderLen the length of those kept.
const (
	factsCacheLen  = 64
	factsHeaderLen = 4 << 10
)

// factsCache keeps the facts of recently parsed npy headers by their
// bytes: the arrays of an archive of many often share a dtype and shape,
// hence a header, and one parse then serves them all.
type factsCache struct {
	mu sync.Mutex
	m  map[string]npyFacts
}

// npyHeaderBytes is the npy header (magic to the end of its padding) at
// the start of head, when head holds it whole.
func npyHeaderBytes(head []byte) ([]byte, bool) {
	if len(head) < 10 || string(head[:len(npy.Magic)]) != npy.Magic {
		return nil, false
	}
	var n int
	switch head[6] {
	case 1:
		n = 10 + int(binary.LittleEndian.Uint16(head[8:]))
	case 2, 3:
		if len(head) < 12 {
			return nil, false
		}
		n = 12 + int(binary.LittleEndian.Uint32(head[8:]))
	default:
		return nil, false
	}
	if n > len(head) || n > factsHeaderLen {
		return nil, false
	}
	return head[:n], true
}

func (c *factsCache) get(head []byte, size int64) (npyFacts, bool) {
	hdr, ok := npyHeaderBytes(head)
	if !ok {
		return npyFacts{}, false
	}
	c.mu.Lock()
	f, ok := c.m[string(hdr)]
	c.mu.Unlock()
	return f, ok && f.size == size
}

func (c *factsCache) put(head []byte, f npyFacts) {
	hdr, ok := npyHeaderBytes(head)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]npyFacts{}
	}
	if _, ok := c.m[string(hdr)]; !ok && len(c.m) >= factsCacheLen {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[string(hdr)] = f
}

// infoCacheLen bounds the npy header facts an archive keeps: about 100
// bytes each. A listing with attributes of a folder of a million arrays
// reads every header once, a batch at a time (Listing.Prepare), and
// keeps the last ones.
const infoCacheLen = 1 << 14

// infoCache keeps members' npyInfo, at most infoCacheLen of them, in
// shards so that concurrent header reads rarely wait for each other; a
// full shard drops an entry it holds (the map's iteration order picks
// which) for each it takes.
type infoCache struct {
	shards [16]infoShard
}

type infoShard struct {
	mu sync.Mutex
	m  map[int32]*npyInfo
}

func (c *infoCache) shard(i int32) *infoShard { return &c.shards[uint32(i)%uint32(len(c.shards))] }

func (c *infoCache) get(i int32) *npyInfo {
	sh := c.shard(i)
	sh.mu.Lock()
	ni := sh.m[i]
	sh.mu.Unlock()
	return ni
}

func (c *infoCache) put(i int32, ni *npyInfo) {
	sh := c.shard(i)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[int32]*npyInfo)
	}
	if len(sh.m) >= infoCacheLen/len(c.shards) {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[i] = ni
}

// Header reads and returns the member's npy header, or why it is not a
// valid .npy member. It reads the header every time it is called.
func (m *Member) Header(ctx context.Context) (*npy.Header, error) {
	if err := m.info(ctx).err; err != nil {
		return nil, err
	}
	return m.readNPY(ctx)
}

// HeaderJSON is the header.json view of the member.
func (m *Member) HeaderJSON(ctx context.Context) ([]byte, error) {
	ni := m.info(ctx)
	if ni.err != nil {
		return nil, ni.err
	}
	if js := m.a.jsonCache.get(m.e.Index); js != nil {
		return js, nil
	}
	h, err := m.readNPY(ctx)
	if err != nil {
		return nil, err
	}
	js, err := m.renderJSON(ctx, h)
	if err != nil {
		return nil, err
	}
	if n := int64(len(js)); !ni.jsonLen.CompareAndSwap(-1, n) && ni.jsonLen.Load() != n {
		// Rendering is deterministic: the member's bytes changed.
		return nil, fmt.Errorf("npz: %q: header.json renders to %d bytes now, %d before", m.Name(), n, ni.jsonLen.Load())
	}
	m.a.jsonCache.put(m.e.Index, js)
	return js, nil
}

// renderJSON renders the member's header.json from its header: with
// archive_offset when the array's bytes lie as they are in the archive's
// file (see archiveOffset), and, for a deflated member of an archive
// read from a file, what its SOZip index says, if it has one (read now,
// the first time: from a file, the answer is the same each time, and so
// is the document's length).
func (m *Member) renderJSON(ctx context.Context, h *npy.Header) ([]byte, error) {
	in := npy.InArchive{Offset: -1}
	if off, ok := m.archiveOffset(); ok {
		in.Offset = off + h.DataOffset
	}
	if m.a.hasFD && m.e.Method == zip.Deflated {
		x, err := m.SOZip(ctx)
		if err != nil {
			return nil, err
		}
		if x != nil {
			in.ChunkSize, in.Chunks = x.ChunkSize, int64(x.Chunks)
		}
	}
	return h.JSONIn(m.e.Size, in)
}

// archiveOffset is where the member's bytes start in the archive's file,
// for a stored member of an archive read from a file (source.FileBacked);
// ok is false otherwise (deflated, remote, or not located). It reads
// nothing: the member is located first.
func (m *Member) archiveOffset() (int64, bool) {
	if !m.a.hasFD || m.e.Method != zip.Stored || m.st.Load()&flagLocated == 0 {
		return 0, false // flagLocated: a stored member's local header was read and is sound
	}
	return m.a.fdBase + m.e.HeaderOffset + int64(m.lhLen), true
}

// HasViews reports whether the member's KEY/ folder holds views; it reads
// the npy header if needed. (The folder itself is served for every served
// .npy member whose key is free, views or not: see Node.Lookup.)
func (m *Member) HasViews(ctx context.Context) bool {
	return m.state() == memberServed && m.st.Load()&flagViews != 0 && m.info(ctx).err == nil
}

// jsonLen is the length of the member's header.json, rendered the first
// time it is asked for (a listing needs the sizes of views beside an
// array, not this).
func (m *Member) jsonLen(ctx context.Context, ni *npyInfo) (int64, error) {
	if n := ni.jsonLen.Load(); n >= 0 {
		return n, nil
	}
	js, err := m.HeaderJSON(ctx)
	return int64(len(js)), err
}

// RawArray is the RawArray header of the member's array (the head of
// KEY.ra), or why it has none.
func (m *Member) RawArray(ctx context.Context) ([]byte, error) {
	if err := m.info(ctx).err; err != nil {
		return nil, err
	}
	h, err := m.readNPY(ctx)
	if err != nil {
		return nil, err
	}
	return h.RawArrayHeader()
}

// viewFile is the content of view i of the member. A view the array does
// not have (KEY.ra of an array without a RawArray form, any view of a
// broken header) is a file of 1 byte whose reads fail with why: 1 byte,
// not 0, so that a read reaches npzfs and fails (EIO) rather than reads
// as an empty file, where the kernel opens files without asking (see
// fs.Finder).
func (m *Member) viewFile(ctx context.Context, i int) *File {
	ni := m.info(ctx)
	v := &viewKinds[i]
	f := &File{m: m, kind: fileView, view: uint8(i), size: 1}
	if ni.err != nil {
		f.err = ni.err
		return f
	}
	if !v.has(ni) {
		if v.head != nil {
			_, f.err = v.head(m, ctx) // why it has none
		}
		if f.err == nil {
			f.err = fmt.Errorf("npz: %q has no %s", m.Name(), v.name)
		}
		return f
	}
	if v.headLen != nil {
		if f.head, f.err = v.headLen(m, ctx, ni); f.err != nil {
			f.head = 0
			return f
		}
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
// of keepJSON bytes or more, least recently used out first, by member
// index. It changes no answer, only how fast long ones are given.
type jsonCache struct {
	mu    sync.Mutex
	bytes int64
	order list.List // of *jsonEntry, most recent first
	byM   map[int32]*list.Element
}

type jsonEntry struct {
	m  int32
	js []byte
}

// keepJSON is the length from which a rendered header.json is cached.
const keepJSON = 16 << 10

func (c *jsonCache) get(m int32) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byM[m]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*jsonEntry).js
	}
	return nil
}

func (c *jsonCache) put(m int32, js []byte) {
	if len(js) < keepJSON || len(js) > jsonCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byM == nil {
		c.byM = map[int32]*list.Element{}
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
