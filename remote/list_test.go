package remote

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/source"
)

// fakeLister is a folder tree in memory: paths of objects, each with its
// size; a test may make listings fail or wait.
type fakeLister struct {
	mu    sync.Mutex
	objs  map[string]int64
	lists atomic.Int64
	fail  func(dir string) error
	gate  chan struct{}
}

func (l *fakeLister) String() string             { return "fake://folder/" }
func (l *fakeLister) Object(name string) Backend { return nil }

func (l *fakeLister) List(ctx context.Context, dir string, add func(Item) error) error {
	l.lists.Add(1)
	if l.gate != nil {
		<-l.gate
	}
	if l.fail != nil {
		if err := l.fail(dir); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []Item
	seen := map[string]bool{}
	for p, size := range l.objs {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if sub, _, isDir := strings.Cut(rest, "/"); isDir {
			if !seen[sub] {
				seen[sub] = true
				out = append(out, Item{Name: sub, Dir: true})
			}
			continue
		}
		out = append(out, Item{Name: rest, Object: Object{Size: size}})
	}
	for _, it := range out {
		if err := add(it); err != nil {
			return err
		}
	}
	return nil
}

func (l *fakeLister) set(path string, size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if size < 0 {
		delete(l.objs, path)
	} else {
		l.objs[path] = size
	}
}

func names(l *Listing) string {
	var s []string
	for it := range l.All() {
		if it.Dir {
			s = append(s, it.Name+"/")
		} else {
			s = append(s, it.Name)
		}
	}
	return strings.Join(s, " ")
}

// TestFolderKeepsListingsForTheTTL: a folder is listed once on first
// use, sorted; within the TTL every use answers from that listing, after
// it the next use lists again and sees objects added and removed; Stat
// answers from the parent's listing; Forget lists again at once.
func TestFolderKeepsListingsForTheTTL(t *testing.T) {
	l := &fakeLister{objs: map[string]int64{"b.npz": 2, "a.npz": 1, "sub/c.npz": 3}}
	f := NewFolder(l, time.Minute, nil)
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	ctx := context.Background()
	list := func(dir string) string {
		t.Helper()
		items, err := f.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return names(items)
	}
	if got := list(""); got != "a.npz b.npz sub/" {
		t.Errorf("root: %q", got)
	}
	if got := l.lists.Load(); got != 1 {
		t.Errorf("%d listings, want 1", got)
	}
	l.set("new.npz", 4)
	l.set("a.npz", -1)
	now = now.Add(59 * time.Second)
	if it, err := f.Stat(ctx, "a.npz"); err != nil || it.Size != 1 {
		t.Errorf("Stat within the TTL: %+v, %v", it, err)
	}
	if got := list(""); got != "a.npz b.npz sub/" || l.lists.Load() != 1 {
		t.Errorf("within the TTL: %q after %d listings", got, l.lists.Load())
	}
	now = now.Add(time.Second)
	if got := list(""); got != "b.npz new.npz sub/" || l.lists.Load() != 2 {
		t.Errorf("after the TTL: %q after %d listings", got, l.lists.Load())
	}
	if _, err := f.Stat(ctx, "a.npz"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("Stat of a removed object: %v", err)
	}
	if it, err := f.Stat(ctx, "sub/c.npz"); err != nil || it.Size != 3 || l.lists.Load() != 3 {
		t.Errorf("Stat in a sub-folder: %+v, %v, %d listings", it, err, l.lists.Load())
	}
	l.set("b.npz", 20)
	f.Forget("")
	if it, _ := f.Stat(ctx, "b.npz"); it.Size != 20 {
		t.Errorf("after Forget: %+v", it)
	}
	var walked []string
	Walk(ctx, f, "", func(name string, it Item) error {
		walked = append(walked, name)
		return nil
	})
	if got := strings.Join(walked, " "); got != "b.npz new.npz sub/c.npz" {
		t.Errorf("Walk: %q", got)
	}
}

// TestFolderSharesOneListing: 16 concurrent users of a folder being
// listed wait for the one listing.
func TestFolderSharesOneListing(t *testing.T) {
	l := &fakeLister{objs: map[string]int64{"a.npz": 1}, gate: make(chan struct{})}
	f := NewFolder(l, time.Minute, nil)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if items, err := f.List(context.Background(), ""); err != nil || items.Len() != 1 {
				t.Errorf("%v, %v", items, err)
			}
		})
	}
	for l.lists.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(l.gate)
	wg.Wait()
	if got := l.lists.Load(); got != 1 {
		t.Errorf("%d listings for 16 users", got)
	}
}

// TestFolderRetriesAndDoesNotKeepFailures: a listing that fails is
// retried; one that fails for good is not kept, and is transient unless
// permanent.
func TestFolderRetriesAndDoesNotKeepFailures(t *testing.T) {
	var n atomic.Int64
	l := &fakeLister{objs: map[string]int64{"a.npz": 1}}
	l.fail = func(string) error {
		if n.Add(1) <= 2 {
			return errors.New("503")
		}
		return nil
	}
	f := NewFolder(l, time.Minute, &Options{Backoff: time.Millisecond})
	if items, err := f.List(context.Background(), ""); err != nil || items.Len() != 1 || l.lists.Load() != 3 {
		t.Errorf("after two failures: %v, %v, %d requests", items, err, l.lists.Load())
	}
	f = NewFolder(l, time.Minute, &Options{Backoff: time.Millisecond, Retries: -1})
	l.fail = func(string) error { return errors.New("down") }
	if _, err := f.List(context.Background(), ""); !errors.Is(err, source.ErrTransient) {
		t.Errorf("a failure: %v, want it transient", err)
	}
	l.fail = func(string) error { return Permanent(errors.New("access denied")) }
	if _, err := f.List(context.Background(), ""); err == nil || errors.Is(err, source.ErrTransient) {
		t.Errorf("a permanent failure: %v", err)
	}
	l.fail = nil
	if items, err := f.List(context.Background(), ""); err != nil || items.Len() != 1 {
		t.Errorf("once mended: %v, %v", items, err)
	}
}

// TestFolderListingsCountAgainstTheCache: a folder's listing pushes
// blocks out of the cache it is given to make room for itself; one that
// would take more than 3/4 of the cache fails for good, saying so, as
// soon as it passes that, and the listing of another folder that needs
// room drops the least recently used of those kept, which the next use
// lists again.
func TestFolderListingsCountAgainstTheCache(t *testing.T) {
	c := NewCache(1 << 20)
	_, src := cachedSource(t, c, 900<<10)
	l := &fakeLister{objs: map[string]int64{}}
	for i := range 40000 {
		l.set(fmt.Sprintf("big/o%05d.npz", i), 1)
		if i < 20000 {
			l.set(fmt.Sprintf("a/o%05d.npz", i), 1)
			l.set(fmt.Sprintf("b/o%05d.npz", i), 1)
		}
	}
	f := NewFolder(l, time.Minute, &Options{Cache: c})
	ctx := context.Background()
	a, err := f.List(ctx, "a")
	if err != nil || a.Len() != 20000 {
		t.Fatalf("a: %v", err)
	}
	if used := c.Used(); used+a.Bytes() > c.Max() || c.kept != a.Bytes() {
		t.Errorf("blocks of %d bytes and a listing of %d counted as %d, in a cache of %d", used, a.Bytes(), c.kept, c.Max())
	}
	if got := src.Stats().CachedBytes; got != c.Used() {
		t.Errorf("the source holds %d bytes, the cache %d", got, c.Used())
	}
	_, err = f.List(ctx, "big")
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the folder's listing takes more than the 768 KiB") {
		t.Errorf("a listing too large: %v", err)
	}
	if _, err := f.List(ctx, "b"); err != nil {
		t.Fatalf("b: %v", err)
	}
	n := l.lists.Load()
	if _, err := f.List(ctx, "a"); err != nil || l.lists.Load() != n+1 {
		t.Errorf("a, dropped for b, is listed again: %v, %d listings, want %d", err, l.lists.Load(), n+1)
	}
}

// TestSortItemsKeepsTheFolder: an object KEY and a prefix KEY/ make one
// item, the folder.
func TestSortItemsKeepsTheFolder(t *testing.T) {
	var b listingBuilder
	for _, it := range []Item{{Name: "x.npz", Object: Object{Size: 3}}, {Name: "b"}, {Name: "x.npz", Dir: true}, {Name: "a"}} {
		if err := b.add(it); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(b.done()); got != "a b x.npz/" {
		t.Errorf("%q", got)
	}
}

func TestObjectSame(t *testing.T) {
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		o, listed Object
		want      bool
	}{
		{Object{Size: 1, ETag: `"a"`}, Object{Size: 1, ETag: `"a"`}, true},
		{Object{Size: 1, ETag: `"a"`}, Object{Size: 1, ETag: `"b"`}, false},
		{Object{Size: 1}, Object{Size: 2}, false},
		{Object{Size: 1, LastModified: at}, Object{Size: 1, LastModified: at.Add(300 * time.Millisecond)}, true},
		{Object{Size: 1, LastModified: at}, Object{Size: 1, LastModified: at.Add(time.Second)}, false},
		{Object{Size: 1, ETag: `"a"`}, Object{Size: 1, LastModified: at}, true},
	} {
		if got := tc.o.Same(tc.listed); got != tc.want {
			t.Errorf("%+v.Same(%+v) = %v", tc.o, tc.listed, got)
		}
	}
	if !slices.Equal([]bool{ValidName("a"), ValidName(""), ValidName(".."), ValidName("a/b"), ValidName(strings.Repeat("x", 256))}, []bool{true, false, false, false, false}) {
		t.Error("ValidName")
	}
}
