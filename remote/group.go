package remote

import (
	"context"
	"sync"
)

// A Group is the remote sources of one dataset (an archive and its
// sidecar, or a folder's archives): they share one block Cache, the
// least recently used block of any going first, and a DiskCache, and
// their counts add up in the group's Stats, those of sources closed
// since too.
type Group struct {
	cache *Cache
	disk  *DiskCache
	logf  func(string, ...any)

	mu   sync.Mutex
	live map[*Source]bool
	gone Stats // of the sources closed
}

// NewGroup makes a group whose sources share a cache of cacheBytes (0:
// DefaultCacheBytes) and disk (nil: none), and log through logf (nil:
// nowhere).
func NewGroup(cacheBytes int64, disk *DiskCache, logf func(string, ...any)) *Group {
	if cacheBytes <= 0 {
		cacheBytes = DefaultCacheBytes
	}
	return &Group{cache: NewCache(cacheBytes), disk: disk, logf: logf, live: map[*Source]bool{}}
}

// Open opens b's object as Open does, as one of the group's sources: o's
// cache, disk cache and Logf are the group's.
func (g *Group) Open(ctx context.Context, b Backend, o Options) (*Source, error) {
	o.Cache, o.CacheBytes, o.Disk, o.Logf = g.cache, g.cache.Max(), g.disk, g.logf
	s, err := Open(ctx, b, &o)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s.group = g
	g.live[s] = true
	return s, nil
}

// closed moves s's counts to those of the sources closed.
func (g *Group) closed(s *Source) {
	st := s.Stats()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live[s] {
		delete(g.live, s)
		g.gone = g.gone.add(st)
	}
}

// Stats adds up what the group's sources did, those closed too, and the
// bytes their caches hold now.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.gone
	for s := range g.live {
		st = st.add(s.Stats())
	}
	st.CachedBytes = g.cache.Used()
	if g.disk != nil {
		st.DiskBytes = g.disk.Used()
	}
	return st
}
