package inflate

import "sync"

// Cache is an LRU of inflated spans with a byte budget, safe for concurrent
// use, shareable between readers.
type Cache struct {
	budget int64

	mu    sync.Mutex
	used  int64
	items map[cacheKey]*cacheEntry
	lru   cacheEntry // sentinel: lru.next is the most recently used
}

type cacheKey struct {
	reader uint64
	span   int
}

type cacheEntry struct {
	key        cacheKey
	data       []byte
	cost       int64
	prev, next *cacheEntry
}

// NewCache returns a cache that holds at most budget bytes of spans.
func NewCache(budget int64) *Cache {
	c := &Cache{budget: budget, items: make(map[cacheKey]*cacheEntry)}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Budget reports the byte budget the cache was made with.
func (c *Cache) Budget() int64 { return c.budget }

// Used reports the bytes the cache holds now.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *Cache) unlink(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
}

func (c *Cache) pushFront(e *cacheEntry) {
	e.prev = &c.lru
	e.next = c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *Cache) get(k cacheKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.items[k]
	if e == nil {
		return nil
	}
	c.unlink(e)
	c.pushFront(e)
	return e.data
}

// put stores data, which must never be modified afterwards; cost is the
// memory it pins (its backing array). Data for a key already present
// replaces it if longer (a whole span replacing a prefix of it).
func (c *Cache) put(k cacheKey, data []byte, cost int64) {
	if cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.items[k]
	if e != nil {
		c.unlink(e)
		if len(data) > len(e.data) {
			c.used += cost - e.cost
			e.data, e.cost = data, cost
		}
	} else {
		e = &cacheEntry{key: k, data: data, cost: cost}
		c.items[k] = e
		c.used += cost
	}
	c.pushFront(e)
	for c.used > c.budget {
		old := c.lru.prev
		c.unlink(old)
		delete(c.items, old.key)
		c.used -= old.cost
	}
}
