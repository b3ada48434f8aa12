//go:build linux

package fs

import "github.com/hanwen/go-fuse/v2/fuse"

const keepCache = fuse.FOPEN_KEEP_CACHE

// len is the number of nodes the kernel knows besides the root.
func (t *knownNodes) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
