package remote

import (
	"errors"
	"iter"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"
)

// A Listing is a folder's items as a Folder keeps them: sorted by name
// (a folder before an object of the same name, which is left out), each
// in 24 bytes besides its name and ETag, which lie in blocks of text
// shared by all of them; the items are in chunks, so that a listing
// grows without copying what it holds. A folder of a million objects
// named as shards are (shard-0000001.npz) takes about 41 MB so, against
// some 250 MB as Items in a slice and a map by name. It never changes
// once made, and is safe for concurrent use.
type Listing struct {
	chunks [][]listed // itemChunk items each, but for the last
	n      int
	text   []string // the names and ETags, each in one block
	bytes  int64    // what it takes, about: see Bytes
}

// listed is an Item of a Listing.
type listed struct {
	size    int64
	mtime   int64  // the modification time, in Unix nanoseconds; noTime for none
	ref     uint32 // where the name lies in the text (see textAt), the ETag after it
	nameLen uint8  // names are at most 255 bytes (ValidName)
	dir     bool
	etagLen uint16
}

const (
	// noTime is listed.mtime for an object whose listing gives no time,
	// or one that Unix nanoseconds cannot hold (before 1678 or after
	// 2262).
	noTime = math.MinInt64
	// textBlock is the size of the blocks of names and ETags, which
	// listed.ref counts in; the last block of a listing is cut to what
	// it holds.
	textBlock = 256 << 10
	// maxText is the most text a listing holds: what listed.ref counts.
	maxText = 1 << 32
	// itemChunk is how many items a chunk of a Listing holds.
	itemChunk = 8192
)

// errTooLarge is the error of a listing of more text than a Listing
// holds.
var errTooLarge = errors.New("a listing of more than 4 GiB of names")

// Len is the number of items.
func (l *Listing) Len() int { return l.n }

// Bytes is the memory the listing takes, about: its items and text.
func (l *Listing) Bytes() int64 { return l.bytes }

func (l *Listing) item(i int) *listed { return &l.chunks[i/itemChunk][i%itemChunk] }

// textAt is n bytes of the text from ref.
func (l *Listing) textAt(ref uint32, n int) string {
	t, off := l.text[ref/textBlock], int(ref%textBlock)
	return t[off : off+n]
}

func (l *Listing) name(x *listed) string { return l.textAt(x.ref, int(x.nameLen)) }

// At is the item i, 0 <= i < Len().
func (l *Listing) At(i int) Item {
	x := l.item(i)
	it := Item{Name: l.name(x), Dir: x.dir, Object: Object{Size: x.size}}
	if x.etagLen > 0 {
		it.ETag = l.textAt(x.ref+uint32(x.nameLen), int(x.etagLen))
	}
	if x.mtime != noTime {
		it.LastModified = time.Unix(0, x.mtime).UTC()
	}
	return it
}

// All yields the items in order.
func (l *Listing) All() iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for i := range l.n {
			if !yield(l.At(i)) {
				return
			}
		}
	}
}

// Find is the item named name, if the listing has it.
func (l *Listing) Find(name string) (Item, bool) {
	i := sort.Search(l.n, func(i int) bool { return l.name(l.item(i)) >= name })
	if i < l.n && l.name(l.item(i)) == name {
		return l.At(i), true
	}
	return Item{}, false
}

// byName sorts a Listing being made by name, a folder before an object
// of the same name.
type byName struct{ *Listing }

func (l byName) Less(i, j int) bool {
	x, y := l.item(i), l.item(j)
	if c := strings.Compare(l.name(x), l.name(y)); c != 0 {
		return c < 0
	}
	return x.dir && !y.dir
}

func (l byName) Swap(i, j int) {
	x, y := l.item(i), l.item(j)
	*x, *y = *y, *x
}

// listingBuilder makes a Listing an item at a time.
type listingBuilder struct {
	l   Listing
	cur []byte // the text block being filled, l.text's last once done
}

// add adds it, unless its name cannot be a file name (ValidName): an
// ETag longer than 65,535 bytes is left out (the object is then told
// apart by its size and time, as one without). It fails past maxText.
func (b *listingBuilder) add(it Item) error {
	if !ValidName(it.Name) {
		return nil
	}
	etag := it.ETag
	if len(etag) > math.MaxUint16 {
		etag = ""
	}
	n := len(it.Name) + len(etag)
	if len(b.cur)+n > cap(b.cur) {
		if int64(len(b.l.text)+2)*textBlock > maxText {
			return errTooLarge
		}
		b.endBlock()
		b.cur = make([]byte, 0, textBlock)
	}
	x := listed{
		size: it.Size, mtime: noTime, ref: uint32(len(b.l.text)*textBlock + len(b.cur)),
		nameLen: uint8(len(it.Name)), dir: it.Dir, etagLen: uint16(len(etag)),
	}
	if t := it.LastModified; !t.IsZero() && t.Year() > 1678 && t.Year() < 2262 {
		x.mtime = t.UnixNano()
	}
	b.cur = append(append(b.cur, it.Name...), etag...)
	b.push(x)
	return nil
}

// push appends x to the items: the first chunk grows as a slice does,
// up to itemChunk items, and chunks of that many follow it.
func (b *listingBuilder) push(x listed) {
	c := b.l.chunks
	if len(c) == 0 || len(c[len(c)-1]) == itemChunk {
		size := itemChunk
		if len(c) == 0 {
			size = 16
		}
		c = append(c, make([]listed, 0, size))
	}
	last := &c[len(c)-1]
	if len(*last) == cap(*last) {
		*last = slices.Grow(*last, min(cap(*last), itemChunk-cap(*last)))
	}
	*last = append(*last, x)
	b.l.chunks, b.l.n = c, b.l.n+1
}

// endBlock ends the text block being filled, if any: it joins the
// listing's text, cut to what it holds.
func (b *listingBuilder) endBlock() {
	if b.cur != nil {
		b.l.text = append(b.l.text, string(b.cur))
		b.cur = nil
	}
}

// bytes is what the listing being made takes, about (of the text block
// being filled, what it holds so far).
func (b *listingBuilder) bytes() int64 {
	var n int64
	for _, c := range b.l.chunks {
		n += int64(cap(c)) * int64(unsafe.Sizeof(listed{}))
	}
	for _, t := range b.l.text {
		n += int64(len(t))
	}
	return n + int64(len(b.cur))
}

// done sorts the items by name, a folder before an object of the same
// name, drops the later of two items of one name (an object KEY and the
// prefix KEY/: the folder is kept), and returns the listing.
func (b *listingBuilder) done() *Listing {
	b.endBlock()
	l := &b.l
	if !sort.IsSorted(byName{l}) {
		sort.Sort(byName{l})
	}
	k := 0 // items kept
	for i := range l.n {
		if i > 0 && l.name(l.item(i)) == l.name(l.item(k-1)) {
			continue
		}
		*l.item(k) = *l.item(i)
		k++
	}
	l.n = k
	// The last chunk is cut to what it holds.
	c := l.chunks[:(k+itemChunk-1)/itemChunk]
	if len(c) > 0 {
		c[len(c)-1] = slices.Clone(c[len(c)-1][:k-(len(c)-1)*itemChunk])
	}
	l.chunks = c
	l.bytes = b.bytes()
	return l
}
