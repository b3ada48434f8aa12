package npz

import (
	"sync"
	"unsafe"
)

// arena keeps the members' names in a few large blocks, each name where
// add put it until the archive is closed; a name is known by a uint32
// (its block, and where it starts in it), so that the member table holds
// no pointer per name.
type arena struct {
	blocks [][]byte
}

// add copies s into the arena and says where it is; want is how many
// bytes of names may still come (a hint for the next block's size).
func (ar *arena) add(s string, want int64) (ref uint32, n uint16) {
	if len(s) == 0 {
		return 0, 0
	}
	last := len(ar.blocks) - 1
	if last < 0 || cap(ar.blocks[last])-len(ar.blocks[last]) < len(s) {
		ar.blocks = append(ar.blocks, make([]byte, 0, max(int64(len(s)), min(want, arenaBlock))))
		last++
	}
	b := &ar.blocks[last]
	off := len(*b)
	*b = append(*b, s...)
	return uint32(last)<<arenaShift | uint32(off), uint16(len(s))
}

// get is the name of n bytes at ref.
func (ar *arena) get(ref uint32, n uint16) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&ar.blocks[ref>>arenaShift][ref&(arenaBlock-1)], int(n))
}

// arenaBlock bounds a block of the names arena (names are at most 65,535
// bytes, so each fits one); arenaShift places the block's number above
// the offset in it in a name's ref, so there may be 4,096 blocks.
const (
	arenaShift = 20
	arenaBlock = 1 << arenaShift
)

// locTable keeps the locations of the members that have one
// (Member.loaded), in shards so that reads of different members rarely
// wait for each other.
type locTable struct {
	shards [16]struct {
		mu sync.RWMutex
		m  map[int32]*location
	}
}

func (t *locTable) get(i int32) *location {
	sh := &t.shards[uint32(i)%uint32(len(t.shards))]
	sh.mu.RLock()
	l := sh.m[i]
	sh.mu.RUnlock()
	return l
}

func (t *locTable) put(i int32, l *location) {
	sh := &t.shards[uint32(i)%uint32(len(t.shards))]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[int32]*location{}
	}
	sh.m[i] = l
	sh.mu.Unlock()
}

// all is every location kept, in no particular order.
func (t *locTable) all() []*location {
	var out []*location
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for _, l := range sh.m {
			out = append(out, l)
		}
		sh.mu.RUnlock()
	}
	return out
}
