package remote

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// A Cache bounds the fetched blocks of the Sources that share it (the
// archives of a remote folder's mount) in bytes: past the bound, the
// block used least recently, of whichever source, goes first. It also
// bounds their read-ahead in flight together, to half its bound. What
// is kept beside the blocks (a Folder's listings) counts against the
// bound too, and may take up to 3/4 of it. The bound may be changed
// while the cache is used (SetMax). It is safe for concurrent use.
//
// A source's own lock may be held when the cache's is taken (to mark a
// block used), never the other way round: blocks pushed out are dropped
// from their sources after the cache's lock is let go.
type Cache struct {
	max     atomic.Int64
	pending atomic.Int64 // bytes of blocks in flight

	mu   sync.Mutex
	lru  list.List // of *block, least recently used first
	used int64     // by the blocks
	kept int64     // by what is kept beside them (keep)
}

// NewCache returns a Cache of at most maxBytes (0 means
// DefaultCacheBytes).
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	c := &Cache{}
	c.max.Store(maxBytes)
	return c
}

// Max is the cache's bound.
func (c *Cache) Max() int64 { return c.max.Load() }

// SetMax changes the cache's bound to maxBytes (0 means
// DefaultCacheBytes): a lower one pushes blocks out at once, the least
// recently used first; what is kept beside them stays until it is let
// go.
func (c *Cache) SetMax(maxBytes int64) {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	c.mu.Lock()
	c.max.Store(maxBytes)
	out := c.trimLocked()
	c.mu.Unlock()
	forget(out)
}

// Used is the bytes of blocks it holds.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// add caches b, whose data is set, and returns the blocks pushed out to
// keep within the bound (never b itself), for their sources to forget.
func (c *Cache) add(b *block) []*block {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.elem = c.lru.PushBack(b)
	c.used += int64(len(b.data))
	return c.trimLocked()
}

// trimLocked pushes blocks out, the least recently used first, until
// they and what is kept are within the bound (but for the last block
// added), and returns them. c.mu is held.
func (c *Cache) trimLocked() []*block {
	var out []*block
	for c.used+c.kept > c.max.Load() && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Front()).(*block)
		old.elem = nil
		c.used -= int64(len(old.data))
		out = append(out, old)
	}
	return out
}

// forget has the sources of blocks pushed out of their cache drop them.
// No cache's lock is held.
func forget(out []*block) {
	for _, b := range out {
		b.src.forget(b)
	}
}

// keep counts n bytes more (or less, n < 0) of what is kept beside the
// blocks against the bound, pushing blocks out to make room, and
// returns them for their sources to forget; it counts nothing, and
// reports false, where that would make what is kept pass 3/4 of the
// bound.
func (c *Cache) keep(n int64) (bool, []*block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > 0 && c.kept+n > c.max.Load()/4*3 {
		return false, nil
	}
	c.kept += n
	return true, c.trimLocked()
}

// unkeep counts n bytes less of what is kept beside the blocks.
func (c *Cache) unkeep(n int64) {
	c.mu.Lock()
	c.kept -= n
	c.mu.Unlock()
}

// touch marks b used now, if it is cached.
func (c *Cache) touch(b *block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.elem != nil {
		c.lru.MoveToBack(b.elem)
	}
}

// remove drops bs (those cached) from the cache.
func (c *Cache) remove(bs []*block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range bs {
		if b.elem != nil {
			c.lru.Remove(b.elem)
			b.elem = nil
			c.used -= int64(len(b.data))
		}
	}
}
