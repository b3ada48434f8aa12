package inflate

import "testing"

// putSpan caches data under k in a new buffer of cost bytes.
func putSpan(c *Cache, k cacheKey, data string, cost int) *span {
	buf := make([]byte, cost)
	s := newSpan(buf, buf[:copy(buf, data)])
	c.put(k, s)
	c.release(s)
	return s
}

func cached(c *Cache, k cacheKey) bool {
	s := c.get(k)
	if s != nil {
		c.release(s)
	}
	return s != nil
}

func TestCacheLRU(t *testing.T) {
	c := NewCache(300)
	k := func(i int) cacheKey { return cacheKey{1, int64(i)} }
	putSpan(c, k(1), "a", 100)
	putSpan(c, k(2), "b", 100)
	putSpan(c, k(3), "c", 100)
	if !cached(c, k(1)) { // 1 is now most recent
		t.Fatal("entry 1 missing")
	}
	putSpan(c, k(4), "d", 100) // evicts 2, the least recently used
	if cached(c, k(2)) {
		t.Fatal("entry 2 should have been evicted")
	}
	for _, i := range []int{1, 3, 4} {
		if !cached(c, k(i)) {
			t.Fatalf("entry %d missing", i)
		}
	}
	if c.Used() != 300 {
		t.Fatalf("used %d, want 300", c.Used())
	}
	putSpan(c, k(5), "too big", 301) // larger than the budget: not kept
	if cached(c, k(5)) || c.Used() != 300 {
		t.Fatal("an entry over budget was kept")
	}
	if cached(c, cacheKey{2, 1}) {
		t.Fatal("keys of different readers collide")
	}
	// A longer span replaces a prefix of it; a shorter one does not.
	putSpan(c, k(3), "cc", 100)
	putSpan(c, k(3), "c", 100)
	if s := c.get(k(3)); s == nil || string(s.data) != "cc" {
		t.Fatal("the longer span for a key was not kept")
	} else {
		c.release(s)
	}
	// Lookups: 1, 2 (gone), 1, 3, 4, 5 (never kept), another reader's,
	// then 3: five found, three not.
	if hits, misses := c.Lookups(); hits != 5 || misses != 3 {
		t.Errorf("Lookups = %d hits, %d misses; want 5, 3", hits, misses)
	}
}

// TestCacheRecycles: a span's buffer is handed out again only once the
// span is out of the cache and every holder has released it, and spare
// buffers count against the budget.
func TestCacheRecycles(t *testing.T) {
	c := NewCache(300)
	k := func(i int) cacheKey { return cacheKey{1, int64(i)} }
	same := func(a, b []byte) bool { return &a[:1][0] == &b[:1][0] }

	putSpan(c, k(1), "a", 100)
	held := c.get(k(1))
	two := putSpan(c, k(2), "b", 100)
	putSpan(c, k(3), "c", 100)
	putSpan(c, k(4), "d", 100) // evicts 1, which is still held
	if cached(c, k(1)) {
		t.Fatal("entry 1 should have been evicted")
	}
	// No spare yet: making room evicts 2 and reuses its buffer.
	b := c.alloc(100)
	if !same(b, two.buf) || cached(c, k(2)) {
		t.Fatal("alloc did not reuse the evicted span's buffer")
	}
	if string(held.data) != "a" {
		t.Fatal("a held span changed")
	}
	c.release(held) // now spare
	if c.Used() != 300 {
		t.Fatalf("used %d with one spare, want 300", c.Used())
	}
	if b := c.alloc(60); !same(b, held.buf) || len(b) != 60 {
		t.Fatal("alloc did not reuse the released span's buffer")
	}
	c.recycle(b)
	// Over budget, a spare is dropped rather than kept.
	c.recycle(make([]byte, 100))
	if c.Used() != 300 {
		t.Fatalf("used %d, want 300", c.Used())
	}
	// A buffer larger than the budget evicts nothing.
	c.alloc(301)
	if !cached(c, k(3)) || !cached(c, k(4)) {
		t.Fatal("alloc over budget evicted spans")
	}
	// A span cached over budget drops the spare before any span.
	putSpan(c, k(5), "e", 100)
	if c.Used() != 300 || !cached(c, k(3)) || !cached(c, k(4)) || !cached(c, k(5)) {
		t.Fatalf("used %d, or a span was evicted before the spare", c.Used())
	}
}

// TestCacheSetBudget: a lower budget drops spare buffers and the least
// recently used spans at once, never a span a read still holds (it is
// freed when let go); a higher one keeps more again.
func TestCacheSetBudget(t *testing.T) {
	c := NewCache(400)
	k := func(i int) cacheKey { return cacheKey{1, int64(i)} }
	putSpan(c, k(1), "a", 100)
	putSpan(c, k(2), "b", 100)
	held := c.get(k(2))
	putSpan(c, k(3), "c", 100)
	c.recycle(make([]byte, 100)) // a spare buffer
	if c.Used() != 400 {
		t.Fatalf("used %d, want 400", c.Used())
	}
	c.SetBudget(150)
	if c.Used() > 150 || c.Budget() != 150 || cached(c, k(1)) || cached(c, k(2)) || !cached(c, k(3)) {
		t.Errorf("after SetBudget(150): used %d, 1 %v, 2 %v, 3 %v", c.Used(), cached(c, k(1)), cached(c, k(2)), cached(c, k(3)))
	}
	if string(held.data) != "b" {
		t.Error("a span held by a read changed")
	}
	c.release(held) // no room for it as a spare buffer
	if c.Used() > 150 {
		t.Errorf("used %d after the read let go, budget 150", c.Used())
	}
	c.SetBudget(0)
	if c.Used() != 0 || cached(c, k(3)) {
		t.Errorf("after SetBudget(0): used %d", c.Used())
	}
	if b := c.alloc(100); len(b) != 100 {
		t.Errorf("alloc(100) in an empty cache of no budget: %d bytes", len(b))
	}
	c.SetBudget(300)
	putSpan(c, k(4), "d", 100)
	putSpan(c, k(5), "e", 100)
	if c.Used() != 200 || !cached(c, k(4)) || !cached(c, k(5)) {
		t.Errorf("after SetBudget(300): used %d", c.Used())
	}
}
