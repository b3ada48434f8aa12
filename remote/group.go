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
	opts  Options // its sources', but for TailBytes, Head and BlockSize
	cache *Cache

	mu   sync.Mutex
	live map[*Source]bool
	gone Stats // of the sources closed
}

// NewGroup makes a group whose sources share one cache of o.CacheBytes
// and o.Disk, and the rest of o but TailBytes, Head and BlockSize, which
// each source is given at Open.
func NewGroup(o *Options) *Group {
	g := &Group{opts: o.withDefaults(), live: map[*Source]bool{}}
	g.cache = NewCache(g.opts.CacheBytes)
	g.opts.Cache = g.cache
	return g
}

// Cache is the group's block cache.
func (g *Group) Cache() *Cache { return g.cache }

// Open opens b's object as Open does, as one of the group's sources, with
// the group's options but for o's TailBytes, Head and BlockSize.
func (g *Group) Open(ctx context.Context, b Backend, o Options) (*Source, error) {
	opts := g.opts
	opts.TailBytes, opts.Head, opts.BlockSize = o.TailBytes, o.Head, o.BlockSize
	s, err := Open(ctx, b, &opts)
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
	if g.opts.Disk != nil {
		st.DiskBytes = g.opts.Disk.Used()
	}
	return st
}
