package inflate

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A HelperBudget bounds the goroutines that the readers sharing it start
// to inflate besides their reads: the helpers of a first read deep into
// a member (Options.Helpers) and the goroutines inflating spans ahead of
// a sequential reader inside the index. A reader starts such a goroutine
// only when the budget has room for it, and otherwise does without (the
// reads inflate what they need themselves), so the goroutines of all the
// readers sharing a budget together never outnumber it. Each holds at
// most HelperBytes besides the spans it puts in the Cache. Not counted:
// each reader's read-ahead goroutine (at most one, growing the index a
// few spans ahead of a sequential reader) and window packer (at most
// one), and the workers of IndexAllParallel, which its caller asks for.
type HelperBudget struct {
	limit int
	used  atomic.Int64
}

// NewHelperBudget makes a budget of limit goroutines; 0 or less means
// runtime.GOMAXPROCS(0), read at each use (since Go 1.25 it follows the
// container's CPU limit as it changes).
func NewHelperBudget(limit int) *HelperBudget { return &HelperBudget{limit: limit} }

// defaultHelpers is the process's budget: its zero value follows
// GOMAXPROCS.
var defaultHelpers HelperBudget

// DefaultHelperBudget is the process's budget, of runtime.GOMAXPROCS(0)
// goroutines, which readers whose Options give none share.
func DefaultHelperBudget() *HelperBudget { return &defaultHelpers }

// Limit is how many goroutines the budget allows at once.
func (b *HelperBudget) Limit() int {
	if b.limit > 0 {
		return b.limit
	}
	return runtime.GOMAXPROCS(0)
}

// Busy is how many goroutines hold a place in the budget now.
func (b *HelperBudget) Busy() int { return int(b.used.Load()) }

// take takes places for up to n goroutines, as many as the budget has
// room for, and returns how many it took.
func (b *HelperBudget) take(n int) int {
	for {
		used := b.used.Load()
		k := min(int64(n), int64(b.Limit())-used)
		if k <= 0 {
			return 0
		}
		if b.used.CompareAndSwap(used, used+k) {
			return int(k)
		}
	}
}

// give gives back n places.
func (b *HelperBudget) give(n int) { b.used.Add(-int64(n)) }

// HelperBytes is the most memory one goroutine of a HelperBudget holds
// for readers of spans of span bytes (0: the default span), besides the
// spans it puts in their Cache and the packed windows of the checkpoints
// a helper records, which join the index and its WindowBudget: the
// buffers of a helper (the stretch of the stream it searches for a
// block to start from, the markers it decodes the unknown window into,
// a span's output, the windows it marks and packs), its decoder and the
// window of its chunk's start. A goroutine inflating spans ahead of a
// reader holds a decoder alone.
func HelperBytes(span int64) int64 {
	if span <= 0 {
		span = defaultSpan
	}
	const (
		search  = searchPiece + 16
		markers = markerBuf * 2
		windows = 3 * windowSize // touched, masked, the start's
		packer  = 4 * windowSize // the sparse encoder's tokens and output
		decoder = int64(unsafe.Sizeof(decoder{})) + inBufSize
	)
	return search + markers + span + windowSize + outSlack + windows + packer + decoder
}
