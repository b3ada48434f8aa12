package remote

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestListing: a Listing of items given in no order, over several
// chunks and text blocks, with duplicate names, ETags, times (some that
// Unix nanoseconds cannot hold) and names that cannot be file names,
// holds each valid name once, sorted, as it was given (the folder of an
// object and folder of one name), and finds every one.
func TestListing(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	at := time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
	want := map[string]Item{}
	var b listingBuilder
	add := func(it Item) {
		t.Helper()
		if err := b.add(it); err != nil {
			t.Fatal(err)
		}
	}
	var items []Item
	for i := range 3*itemChunk + 5 {
		it := Item{Name: fmt.Sprintf("shard-%07d.npz", i), Object: Object{Size: int64(i)}}
		switch i % 4 {
		case 0:
			it.ETag = fmt.Sprintf(`"%032x"`, i)
		case 1:
			it.LastModified = at.Add(time.Duration(i) * time.Second)
		case 2:
			it.Name, it.Dir, it.Size = strings.Repeat("d", 1+i%200)+fmt.Sprint(i), true, 0
		case 3:
			// An object and a prefix of one name: the folder is kept.
			items = append(items, it)
			it.Dir, it.Size = true, 0
		}
		want[it.Name] = it
		items = append(items, it)
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	for _, it := range items {
		add(it)
	}
	add(Item{Name: "old.npz", Object: Object{Size: 1, LastModified: time.Date(1200, 1, 1, 0, 0, 0, 0, time.UTC)}})
	want["old.npz"] = Item{Name: "old.npz", Object: Object{Size: 1}}
	for _, bad := range []string{"", "..", "a/b", strings.Repeat("x", 256)} {
		add(Item{Name: bad})
	}
	l := b.done()
	if l.Len() != len(want) {
		t.Fatalf("%d items, want %d", l.Len(), len(want))
	}
	var got []string
	for it := range l.All() {
		got = append(got, it.Name)
		w := want[it.Name]
		if it.Dir != w.Dir || it.Size != w.Size || it.ETag != w.ETag || !it.LastModified.Equal(w.LastModified) {
			t.Fatalf("%s: %+v, want %+v", it.Name, it, w)
		}
		if f, ok := l.Find(it.Name); !ok || f != it {
			t.Fatalf("Find(%s): %+v, %v", it.Name, f, ok)
		}
	}
	if !slices.IsSorted(got) {
		t.Error("not sorted")
	}
	if _, ok := l.Find("shard-x.npz"); ok {
		t.Error("found a name it does not have")
	}
	if _, ok := new(listingBuilder).done().Find("a"); ok {
		t.Error("found a name in an empty listing")
	}
}

// TestListingBytes: a listing of 100,000 objects with names as shards
// have, sizes and times takes 24 bytes an item besides its names, and
// says so.
func TestListingBytes(t *testing.T) {
	const n = 100000
	var b listingBuilder
	var text int64
	for i := range n {
		name := fmt.Sprintf("shard-%07d.npz", i)
		text += int64(len(name))
		b.add(Item{Name: name, Object: Object{Size: 1 << 20, LastModified: time.Unix(int64(i), 0)}})
	}
	l := b.done()
	if want := 24*n + text; l.Bytes() < want || l.Bytes() > want+textBlock {
		t.Errorf("%d items of %d bytes of names take %d bytes, want %d", n, text, l.Bytes(), want)
	}
}
