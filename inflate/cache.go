package inflate

import (
	"sync"
	"sync/atomic"
)

// Cache is an LRU of inflated spans with a byte budget, safe for concurrent
// use, shareable between readers. Its budget may be changed while it is
// used (SetBudget).
//
// It also recycles the buffers spans are inflated into. Reading a deflated
// member inflates its size again in spans; were each span a new buffer, the
// garbage would let the Go heap grow to twice the live heap (the default
// GOGC) before each collection. Instead a span leaves the cache as a spare
// buffer, once no read is copying from it, and the next span is inflated
// into that. The budget bounds cached spans and spare buffers together.
type Cache struct {
	budget atomic.Int64

	mu         sync.Mutex
	used       int64 // bytes pinned by cached spans
	items      map[cacheKey]*span
	lru        span     // sentinel: lru.next is the most recently used
	spare      [][]byte // buffers no span holds any more
	spareBytes int64
	hits       int64 // lookups that found their span
	misses     int64 // lookups that did not
}

type cacheKey struct {
	reader uint64
	start  int64 // the span's start in the output: spans are found by it, since thinning renumbers them
}

// span is inflated output, a whole span or a prefix of one, in a buffer
// from Cache.alloc. A span never changes once made; it is shared by the
// cache and the reads copying from it, and its buffer is recycled when the
// last of them lets go.
type span struct {
	data []byte // the inflated bytes, within buf
	buf  []byte // the whole buffer; cap(buf) is what the span costs

	// Guarded by the Cache's mu.
	refs       int // its maker, the cache while cached, each get and retain
	key        cacheKey
	prev, next *span // LRU links while cached
}

// newSpan makes a span of data, inside buf, held once by its maker.
func newSpan(buf, data []byte) *span { return &span{data: data, buf: buf, refs: 1} }

// NewCache returns a cache that holds at most budget bytes of spans and
// spare buffers.
func NewCache(budget int64) *Cache {
	c := &Cache{items: make(map[cacheKey]*span)}
	c.budget.Store(budget)
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Budget reports the cache's byte budget.
func (c *Cache) Budget() int64 { return c.budget.Load() }

// SetBudget changes the cache's byte budget: a lower one drops spare
// buffers and spans, the least recently used first, at once (spans that
// reads still copy from are freed when they are done). Readers made
// before keep the read-ahead they chose for the budget they found.
func (c *Cache) SetBudget(budget int64) {
	budget = max(budget, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget.Store(budget)
	for c.used+c.spareBytes > budget && !c.empty() {
		c.shed()
	}
}

// Used reports the bytes the cache holds now, in spans and spare buffers.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used + c.spareBytes
}

// Lookups reports how many times reads looked for a span in the cache
// and found it, and did not (and inflated it, or waited for another read
// inflating it).
func (c *Cache) Lookups() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

func (c *Cache) unlink(s *span) {
	s.prev.next = s.next
	s.next.prev = s.prev
}

func (c *Cache) pushFront(s *span) {
	s.prev = &c.lru
	s.next = c.lru.next
	c.lru.next.prev = s
	c.lru.next = s
}

// get returns the span cached under k, or nil, held for the caller, who
// must release it.
func (c *Cache) get(k cacheKey) *span {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.items[k]
	if s == nil {
		c.misses++
		return nil
	}
	return c.hit(s)
}

// hit counts a lookup that found s, makes s the most recently used, and
// holds it for the caller. c.mu is held.
func (c *Cache) hit(s *span) *span {
	c.hits++
	c.unlink(s)
	c.pushFront(s)
	s.refs++
	return s
}

// peek is get for a read that goes elsewhere when it misses (see
// ReaderAt.ReadCached): the span cached under k if it holds at least n
// bytes, counted as a hit; a miss is not counted, the read that follows
// counts it.
func (c *Cache) peek(k cacheKey, n int64) *span {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.items[k]
	if s == nil || int64(len(s.data)) < n {
		return nil
	}
	return c.hit(s)
}

// put caches s under k unless the cache holds as much of that span
// already; the caller still holds s and must release it.
func (c *Cache) put(k cacheKey, s *span) {
	cost := int64(cap(s.buf))
	if cost > c.budget.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.items[k]; old != nil {
		if len(old.data) >= len(s.data) {
			c.unlink(old)
			c.pushFront(old)
			return
		}
		c.evict(old) // a whole span replacing a prefix of it
	}
	s.key = k
	s.refs++
	c.items[k] = s
	c.used += cost
	c.pushFront(s)
	for c.used+c.spareBytes > c.budget.Load() {
		c.shed()
	}
}

// evict drops s from the cache.
func (c *Cache) evict(s *span) {
	c.unlink(s)
	delete(c.items, s.key)
	c.used -= int64(cap(s.buf))
	c.unref(s)
}

// retain adds n holders of s, for reads waiting on whoever inflated it.
func (c *Cache) retain(s *span, n int) {
	c.mu.Lock()
	s.refs += n
	c.mu.Unlock()
}

// release lets go of a span from get, retain or newSpan.
func (c *Cache) release(s *span) {
	c.mu.Lock()
	c.unref(s)
	c.mu.Unlock()
}

func (c *Cache) unref(s *span) {
	s.refs--
	if s.refs == 0 {
		c.addSpare(s.buf)
	}
}

// recycle gives back a buffer from alloc that no span holds.
func (c *Cache) recycle(buf []byte) {
	if buf == nil {
		return
	}
	c.mu.Lock()
	c.addSpare(buf)
	c.mu.Unlock()
}

// addSpare keeps buf for alloc if the budget has room for it.
func (c *Cache) addSpare(buf []byte) {
	if n := int64(cap(buf)); c.used+c.spareBytes+n <= c.budget.Load() {
		c.spare = append(c.spare, buf)
		c.spareBytes += n
	}
}

// alloc returns a buffer of n bytes, contents unspecified, to inflate a
// span into: the smallest spare buffer that is large enough, or else a new
// one once the cache has room for it. Making room may free a large enough
// buffer (from the least recently used span). A buffer larger than the
// whole budget is never cached, so it evicts nothing.
func (c *Cache) alloc(n int) []byte {
	if int64(n) > c.budget.Load() {
		return make([]byte, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if b := c.takeSpare(n); b != nil {
			return b[:n]
		}
		if c.used+c.spareBytes+int64(n) <= c.budget.Load() || c.empty() {
			return make([]byte, n) // or the budget was lowered meanwhile
		}
		c.shed()
	}
}

// empty reports a cache with no span and no spare buffer. c.mu is held.
func (c *Cache) empty() bool { return len(c.spare) == 0 && c.lru.prev == &c.lru }

// takeSpare removes and returns the smallest spare buffer of at least n
// bytes, or nil.
func (c *Cache) takeSpare(n int) []byte {
	best := -1
	for i, b := range c.spare {
		if cap(b) >= n && (best < 0 || cap(b) < cap(c.spare[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := c.spare[best]
	c.dropSpare(best)
	return b
}

// shed frees some of the budget: a spare buffer if there is one, else the
// least recently used span.
func (c *Cache) shed() {
	if len(c.spare) > 0 {
		c.dropSpare(len(c.spare) - 1)
	} else {
		c.evict(c.lru.prev)
	}
}

func (c *Cache) dropSpare(i int) {
	last := len(c.spare) - 1
	c.spareBytes -= int64(cap(c.spare[i]))
	c.spare[i] = c.spare[last]
	c.spare[last] = nil
	c.spare = c.spare[:last]
}
