package inflate

import (
	"context"
	"sync"
)

// spanCache is a reader's spans in the shared Cache, found by their
// start, each inflated once however many reads want it at once: the
// first to miss it inflates it (a flight), the others wait for that and
// share the span. mu guards the flights.
type spanCache struct {
	cache *Cache
	id    uint64
	hooks *testHooks

	mu     sync.Mutex
	flight map[int64]*flight // by span key
}

// flight is one inflation of a span that concurrent reads of it wait for
// rather than repeat.
type flight struct {
	key     int64         // the span's key: its start, tagged for a chunk's (spanKey)
	whole   bool          // inflate the span whole, not just as far as the read needs
	done    chan struct{} // closed once span and err are set
	waiters int           // guarded by spanCache.mu; each is given a hold on span
	span    *span
	err     error
}

func (c *spanCache) init(s *stream) {
	c.cache, c.id, c.hooks = s.cache, s.id, s.hooks
	c.flight = make(map[int64]*flight)
}

// put caches s as the span of key (its start, for a span not a chunk's:
// see spanKey); the caller still holds s.
func (c *spanCache) put(key int64, s *span) { c.cache.put(cacheKey{c.id, key}, s) }

// get returns the span starting at start, cached under key (see
// spanKey), or a prefix of it reaching need, held for the caller, who
// must release it: from the cache, or from a read inflating it at the
// same time, waited for until ctx is done. When there is neither, it
// returns a flight instead: the caller inflates the span (whole if
// whole, or if the cache held less than need of it) and lands the
// flight.
//
// A flight that failed with ErrBadIndex (its loaded index is gone)
// gives that error to its waiters, to look the span up again.
func (c *spanCache) get(ctx context.Context, key, start, need int64, whole bool) (*span, *flight, error) {
	ck := cacheKey{c.id, key}
	for {
		if s := c.cache.get(ck); s != nil {
			if start+int64(len(s.data)) >= need {
				return s, nil, nil
			}
			c.cache.release(s)
			whole = true // a second read into this span: inflate all of it
		}
		c.mu.Lock()
		f := c.flight[key]
		if f == nil {
			f = &flight{key: key, whole: whole, done: make(chan struct{})}
			c.flight[key] = f
			c.mu.Unlock()
			return nil, f, nil
		}
		f.waiters++
		c.mu.Unlock()
		if err := c.wait(ctx, f); err != nil {
			return nil, nil, err
		}
		switch {
		case f.err != nil && isCancel(f.err) && ctx.Err() == nil:
			continue // the read inflating it was cancelled, not this one
		case f.err != nil:
			return nil, nil, f.err
		case start+int64(len(f.span.data)) >= need:
			return f.span, nil, nil
		}
		c.cache.release(f.span)
		// It inflated less than this read needs.
	}
}

// wait waits for flight f to land, as one of its waiters, or until ctx
// is done: the read then leaves the flight to the others, with its hold
// on the span not taken, and returns ctx's error; unless f landed
// meanwhile (and gave it a hold).
func (c *spanCache) wait(ctx context.Context, f *flight) error {
	c.hooks.waiting(forSpan)
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	landing := c.flight[f.key] != f // land counted the waiters
	if !landing {
		f.waiters--
	}
	c.mu.Unlock()
	if !landing {
		return ctx.Err()
	}
	<-f.done // landing now: it only has the holds to give
	return nil
}

// land ends flight f with what inflating its span gave: the span, held
// by the caller, is cached and shared with the reads that waited.
func (c *spanCache) land(f *flight, s *span, err error) {
	f.span, f.err = s, err
	if err == nil {
		c.put(f.key, s)
	}
	c.mu.Lock()
	delete(c.flight, f.key) // no more waiters after this
	waiters := f.waiters
	c.mu.Unlock()
	if err == nil {
		c.cache.retain(s, waiters)
	}
	close(f.done)
}
