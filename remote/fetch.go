package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/source"
)

// get returns blocks first..last, starting fetches for those missing (in
// runs of adjacent blocks, with the read-ahead range [raFrom, raTo)).
func (s *Source) get(first, last int64, raFrom, raTo int64) ([]*block, error) {
	bs := s.opts.BlockSize
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.bg.Err(); err != nil {
		return nil, fmt.Errorf("%s: source closed", s.b)
	}
	out := make([]*block, 0, last-first+1)
	var missing []int64
	for i := first; i <= last; i++ {
		b := s.blocks[i]
		if b == nil {
			if s.changed != nil {
				return nil, s.changed
			}
			missing = append(missing, i)
			continue
		}
		s.cache.touch(b)
	}
	s.n.hits.Add(last - first + 1 - int64(len(missing)))
	s.n.misses.Add(int64(len(missing)))
	// Read-ahead joins the reader's own run when it follows it, so a
	// sequential reader's misses and what comes next are one request. It
	// is bounded by the bytes in flight, not by the cache, which it may
	// cycle through (the least recently used blocks go).
	if raTo > raFrom && s.changed == nil {
		for i := raFrom / bs; i <= (raTo-1)/bs; i++ {
			if i > last && s.blocks[i] == nil && s.cache.pending.Load() < min(s.opts.CacheBytes, s.cache.Max())/2 {
				missing = append(missing, i)
			}
		}
	}
	s.startLocked(sortedRuns(missing))
	for i := first; i <= last; i++ {
		out = append(out, s.blocks[i])
	}
	return out, nil
}

// sortedRuns groups ascending block numbers into runs of adjacent ones.
func sortedRuns(idx []int64) [][]int64 {
	return runsOf(idx, func(i int64) int64 { return i })
}

// runsOf groups xs, ascending by block number, into runs of adjacent
// block numbers, each a subslice of xs.
func runsOf[T any](xs []T, idx func(T) int64) [][]T {
	var runs [][]T
	for i := 0; i < len(xs); {
		j := i + 1
		for j < len(xs) && idx(xs[j]) == idx(xs[j-1])+1 {
			j++
		}
		runs = append(runs, xs[i:j])
		i = j
	}
	return runs
}

// startLocked makes the blocks of each run in flight and fetches each run
// (in requests of at most MaxRequest) in the background.
func (s *Source) startLocked(runs [][]int64) {
	per := int(max(s.opts.MaxRequest/s.opts.BlockSize, 1))
	for _, run := range runs {
		for len(run) > 0 {
			k := min(len(run), per)
			bs := make([]*block, k)
			for j, i := range run[:k] {
				b := &block{src: s, idx: i, done: make(chan struct{})}
				s.blocks[i] = b
				s.cache.pending.Add(s.blockLen(i))
				bs[j] = b
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.fetch(bs)
			}()
			run = run[k:]
		}
	}
}

// blockLen is the length of block i.
func (s *Source) blockLen(i int64) int64 {
	return min(s.opts.BlockSize, s.obj.Size-i*s.opts.BlockSize)
}

// fetch completes adjacent blocks: those the disk cache has from it, the
// others from the server.
func (s *Source) fetch(bs []*block) {
	if s.diskKey != "" {
		var rest []*block
		for _, b := range bs {
			if data, ok := s.opts.Disk.get(s.diskKey, b.idx, s.blockLen(b.idx)); ok {
				s.n.diskHits.Add(1)
				s.complete(b, data)
			} else {
				rest = append(rest, b)
			}
		}
		for _, run := range runsOf(rest, func(b *block) int64 { return b.idx }) {
			s.fetchRemote(run)
		}
		return
	}
	s.fetchRemote(bs)
}

// fetchRemote fetches adjacent blocks in one request, retried from where
// it broke off, completing each block as its bytes arrive.
func (s *Source) fetchRemote(bs []*block) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-s.bg.Done():
		s.fail(bs, fmt.Errorf("%s: source closed", s.b))
		return
	}
	off := bs[0].idx * s.opts.BlockSize
	end := off
	for _, b := range bs {
		end += s.blockLen(b.idx)
	}
	ctx, cancel := context.WithTimeout(WithStallTimeout(s.bg, s.opts.StallTimeout), s.opts.ReadTimeout)
	defer cancel()
	next := 0 // first block not yet complete
	what := fmt.Sprintf("bytes %d-%d", off, end-1)
	err := retry(ctx, &s.opts, s.b, what, &s.n.retries, func(ctx context.Context) error {
		pos := bs[next].idx * s.opts.BlockSize
		s.n.requests.Add(1)
		body, err := s.b.Fetch(ctx, s.obj, pos, end-pos)
		if err != nil {
			return err
		}
		// The stall rule again, for a backend that does not send its
		// requests through NewTransport.
		r := newStallReader(body, s.opts.StallTimeout)
		defer r.Close()
		for ; next < len(bs); next++ {
			b := bs[next]
			buf := make([]byte, s.blockLen(b.idx))
			if _, err := io.ReadFull(r, buf); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("%s: %s: %w", s.b, what, err)
			}
			s.n.fetched.Add(int64(len(buf)))
			s.complete(b, buf)
			if s.diskKey != "" {
				s.opts.Disk.put(s.diskKey, b.idx, buf)
			}
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, source.ErrChanged) {
			err = source.Transient(err)
		}
		s.fail(bs[next:], err)
	}
}

// complete caches b's bytes and wakes its readers, then drops the
// blocks the cache pushed out.
func (s *Source) complete(b *block, data []byte) {
	s.mu.Lock()
	b.data = data
	close(b.done)
	s.cache.pending.Add(-int64(len(data)))
	s.used += int64(len(data))
	s.mu.Unlock()
	forget(s.cache.add(b))
}

// forget drops b, pushed out of the cache, from the source's blocks.
func (s *Source) forget(b *block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocks[b.idx] == b {
		delete(s.blocks, b.idx)
		s.used -= int64(len(b.data))
	}
}

// fail ends blocks with err: they are forgotten, so a later read asks
// again, unless the object changed, which is final.
func (s *Source) fail(bs []*block, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, source.ErrChanged) && s.changed == nil {
		s.changed = err
		s.logf("%v: reads of bytes not yet fetched fail from now on", err)
	}
	for _, b := range bs {
		b.err = err
		close(b.done)
		s.cache.pending.Add(-s.blockLen(b.idx))
		if s.blocks[b.idx] == b {
			delete(s.blocks, b.idx)
		}
	}
}

// retry runs do until it succeeds, fails permanently or has been tried
// 1+o.Retries times, sleeping a jittered, doubling backoff in between;
// each retry is counted in retries (if not nil) and logged, naming what
// of b.
func retry(ctx context.Context, o *Options, b fmt.Stringer, what string, retries *atomic.Int64, do func(context.Context) error) error {
	backoff := o.Backoff
	for attempt := 0; ; attempt++ {
		err := do(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: %s: gave up after %v: %w", b, what, o.ReadTimeout, err)
			}
			return err
		}
		if IsPermanent(err) || attempt >= o.Retries {
			return err
		}
		d := backoff/2 + rand.N(backoff)
		if retries != nil {
			retries.Add(1)
		}
		if o.Logf != nil {
			o.Logf("%s: %s: %v; trying again in %v (%d of %d)", b, what, err, d.Round(time.Millisecond), attempt+1, o.Retries)
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return err
		}
		backoff *= 2
	}
}

func (s *Source) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}
