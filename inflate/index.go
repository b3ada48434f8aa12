package inflate

import (
	"errors"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/npzfs/npzfs/internal/crc"
)

// checkpoint is a place decoding can resume from: the output offset, the
// decoder's state there, and the window before it.
type checkpoint struct {
	seq    int64 // the checkpoint's number, counting a span each from 0
	out    int64 // output offset
	bit    int64 // bit position of the next symbol, block header or stored byte
	block  int64 // bit position of the current Huffman block's header
	stored int32 // bytes left in the current stored block
	state  uint8
	final  bool
	winLen int32  // window bytes before out: min(32 KiB, out)
	win    []byte // packed window (see packWindow)
	// pend, while the window is packed in the background, stands for win
	// (see frontier.packLater).
	pend   *pendingWindow
	sum    uint32 // CRC-32 of the span's output, once it is indexed
	loaded bool   // from LoadIndex: its span is checked against sum
	// chunk: from Chunks, at a block header with an empty window: its
	// span is checked as decodeChunk says, and sum is known once it is
	// inflated (see chunkSums).
	chunk bool
	// A loaded checkpoint's window stays in the index file until its
	// span is inflated: winSize bytes at winOff, whose CRC-32C is winSum
	// if winSummed (an index written before windows had checksums has
	// none).
	winSize   int32
	winOff    int64
	winSum    uint32
	winSummed bool
}

// compStart is the bit where inflating cp's span starts reading the
// stream: in a Huffman block, at the block's header (its tables are read
// first).
func (cp *checkpoint) compStart() int64 {
	if cp.state == stHuff {
		return cp.block
	}
	return cp.bit
}

// index is a reader's checkpoints, one a span of output apart from the
// stream's start to the last, the frontier, where the index grows (see
// frontier); or a saved index loaded, whose windows stay in its file
// until a span needs them. Its windows count in a WindowBudget, within
// which it thins itself. mu guards every field but windows and hooks
// (set once) and parallelDone.
type index struct {
	windows *WindowBudget // nil: unbounded
	hooks   *testHooks

	mu       sync.RWMutex
	cps      []checkpoint
	done     bool  // the checkpoints cover the stream to its end, checked
	err      error // the stream's error, found inflating the span from errAt
	errAt    int64
	frontWin []byte // the frontier's window, unpacked
	winBytes int64  // the packed windows' bytes
	stride   int64  // once thinned: kept checkpoints are this many spans apart (see fitBudget)
	released bool   // Release was called: windows no longer counts this index
	loaded   *loadedIndex
	grown    bool  // checkpoints were added since the index was loaded (or made)
	dropped  error // why a loaded index was discarded
	drops    int   // how many times one was
	// chunksDropped is why chunks were refused or dropped.
	chunksDropped error
	parallel      bool // the parallel first pass made the index

	// The output a parallel first pass has indexed while it runs (for
	// Indexed).
	parallelDone atomic.Int64
}

// loadedIndex is what an index loaded from a file (LoadIndex) still
// needs of it.
type loadedIndex struct {
	src io.ReaderAt // the file, for the windows
	n   int         // checkpoints loaded
	// frontier: the last checkpoint is a partial index's frontier,
	// without a window yet (frontier.prepareFrontier makes it).
	frontier bool
	// chunks, for an index made from Chunks (no file, no windows), are
	// its spans' CRC-32s.
	chunks *chunkSums
}

func (ix *index) init(windows *WindowBudget, hooks *testHooks) {
	ix.windows, ix.hooks = windows, hooks
	ix.cps = []checkpoint{{state: stHeader}}
	if windows != nil {
		windows.join(ix)
	}
}

// covers reports whether the index covers output offset off of a stream
// of size bytes, or the stream's error if off is in or past the span
// where it was found: bytes before that span inflated without error and
// are served whether or not the error was found first (by read-ahead, or
// by another reader), so the answer to a read never depends on timing.
func (ix *index) covers(off, size int64) (bool, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.err != nil && off >= ix.errAt {
		return true, ix.err
	}
	// A checkpoint exactly at the declared size still has the end of
	// the stream (and the CRC) to check before anything is served.
	last := ix.cps[len(ix.cps)-1].out
	return ix.done || (last > off && last < size), nil
}

// spanOf returns the checkpoint of the indexed span holding output
// offset off, where the span ends, and the bit position where its
// compressed bytes end: the next checkpoint's, or endBit for the last
// span.
func (ix *index) spanOf(off, size, endBit int64) (checkpoint, int64, int64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	k := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out > off }) - 1
	end := size
	if k+1 < len(ix.cps) {
		end, endBit = ix.cps[k+1].out, ix.cps[k+1].bit
	}
	return ix.cps[k], end, endBit
}

// servedSpanOf is spanOf for a read that must not wait: the span holding
// output offset off of a stream of size bytes and where it ends, with ok
// false unless a read may be served from it as it is cached: the stream
// is not found bad, and the span has a checkpoint after it, or is the
// last of an index that reached the stream's end (and, for a chunk
// index, found the stream's CRC-32 right: see ReaderAt.checkChunks).
func (ix *index) servedSpanOf(off, size int64) (cp checkpoint, end int64, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	k := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out > off }) - 1
	switch {
	case ix.err != nil || k < 0:
		return checkpoint{}, 0, false
	case k+1 < len(ix.cps):
		return ix.cps[k], ix.cps[k+1].out, true
	case ix.done && (ix.chunkState() == nil || ix.chunkState().checked):
		return ix.cps[k], size, true
	}
	return checkpoint{}, 0, false
}

// spanLen is the length of the indexed span holding output offset off
// of a stream of size bytes (0 past the frontier).
func (ix *index) spanLen(off, size int64) int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	k := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out > off })
	switch {
	case k < len(ix.cps):
		return ix.cps[k].out - ix.cps[k-1].out
	case ix.done:
		return size - ix.cps[k-1].out
	}
	return 0
}

// spansIn returns the starts of the spans that hold output offsets
// [from, to) of a stream of size bytes, when the index covers them all
// (see covers) and they are at least least; else nil.
func (ix *index) spansIn(from, to, size int64, least int) []int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	last := ix.cps[len(ix.cps)-1].out
	if to-from <= 0 || ix.err != nil || !(ix.done || (last >= to && last < size)) {
		return nil
	}
	i := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out > from }) - 1
	j := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out >= to })
	if j-i < least {
		return nil
	}
	starts := make([]int64, j-i)
	for k := range starts {
		starts[k] = ix.cps[i+k].out
	}
	return starts
}

// front returns the frontier, its place in the index and its window.
func (ix *index) front() (int, checkpoint, []byte) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	k := len(ix.cps) - 1
	return k, ix.cps[k], ix.frontWin
}

// first returns the checkpoint at the stream's start.
func (ix *index) first() checkpoint {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cps[0]
}

// frontOut returns where the frontier is, and whether the index may grow
// from it (the stream is neither done nor bad).
func (ix *index) frontOut() (int64, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cps[len(ix.cps)-1].out, !ix.done && ix.err == nil
}

// fresh returns the first checkpoint, and whether the index has nothing
// more: not grown, not loaded, and the stream not found bad.
func (ix *index) fresh() (checkpoint, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cps[0], len(ix.cps) == 1 && !ix.done && ix.err == nil && ix.loaded == nil
}

// early returns the frontier, and whether it is still before bit of the
// compressed stream in an index grown from the start (not loaded), that
// may grow on.
func (ix *index) early(bit int64) (checkpoint, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	front := ix.cps[len(ix.cps)-1]
	return front, !ix.done && ix.err == nil && ix.loaded == nil && front.bit < bit
}

// indexedStarts returns the starts of up to n indexed spans from output
// offset from on that start before until (the frontier's span is not
// indexed until the stream is done).
func (ix *index) indexedStarts(from, until int64, n int) (starts [maxAheadSpans]int64, k int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	last := len(ix.cps) - 1
	if ix.done {
		last++
	}
	i := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out >= from })
	for ; k < min(n, len(starts)) && i < last && ix.cps[i].out < until; i++ {
		starts[k] = ix.cps[i].out
		k++
	}
	return starts, k
}

// grow records the span from checkpoint k, the frontier: its output's
// CRC-32 and its window being packed; then the checkpoints after it in
// add (the next, or a helper's run and the start it ends at), the last
// of which is the new frontier, with frontWin its window; or, with done,
// that the stream ends there. It keeps the index within its budget.
func (ix *index) grow(k int, sum uint32, pend *pendingWindow, add []checkpoint, frontWin []byte, done bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.cps[k].pend = pend
	ix.cps[k].sum = sum
	for _, c := range add {
		ix.cps = append(ix.cps, c)
		ix.addWinBytes(int64(len(c.win)))
	}
	ix.done = done
	ix.frontWin = frontWin
	ix.grown = true
	if ix.windows != nil {
		ix.fitBudget()
	}
}

// setWindow gives the checkpoint numbered seq its window p, packed, if
// the index still has it (thinning may have dropped it).
func (ix *index) setWindow(seq int64, p *pendingWindow) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].seq >= seq })
	if i < len(ix.cps) && ix.cps[i].pend == p {
		ix.cps[i].win, ix.cps[i].pend = p.win, nil
		ix.addWinBytes(int64(len(p.win)))
	}
}

// fail keeps err, an error in the stream found inflating the span from
// the frontier: every later read of that span, or past it, fails alike
// (see covers).
func (ix *index) fail(err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.failAt(err, ix.cps[len(ix.cps)-1].out)
}

// failAt keeps err, an error in the stream found inflating the span at
// off, unless one was found before it. ix.mu is held.
func (ix *index) failAt(err error, off int64) {
	if ix.err == nil || off < ix.errAt {
		ix.err, ix.errAt = err, off
	}
}

// damaged keeps a DamageError found in the span at off.
func (ix *index) damaged(err error, off int64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.failAt(err, off)
}

// addWinBytes counts n bytes more (or less) of windows. ix.mu is held.
func (ix *index) addWinBytes(n int64) {
	ix.winBytes += n
	if ix.windows != nil && !ix.released {
		ix.windows.used.Add(n)
	}
}

// release takes the index's windows out of its budget for good.
func (ix *index) release() {
	ix.mu.Lock()
	if ix.windows != nil && !ix.released {
		ix.windows.used.Add(-ix.winBytes)
	}
	ix.released = true
	ix.mu.Unlock()
	if ix.windows != nil {
		ix.windows.leave(ix)
	}
}

// fitBudget keeps the index within its window budget. Once an index has
// been thinned it keeps only the checkpoints whose number is a multiple
// of its stride (and the last, where indexing goes on), so its
// checkpoints stay evenly spaced, stride spans apart; while the budget
// is passed, it doubles its stride. ix.mu is held for writing. Spans are
// cached and inflated by their start, so reads holding a span or waiting
// on one are not affected.
func (ix *index) fitBudget() {
	if ix.stride > 1 {
		// The checkpoint before the last was just given its window.
		if k := len(ix.cps) - 2; k > 0 && ix.cps[k].seq%ix.stride != 0 {
			ix.dropCheckpoints()
		}
	}
	for ix.windows.over() && len(ix.cps) > 2 {
		ix.stride = max(ix.stride, 1) * 2
		ix.windows.thinned.Add(1)
		if !ix.dropCheckpoints() && ix.stride > int64(len(ix.cps))*4 {
			return // nothing left to drop
		}
	}
}

// halve thins the index for a budget lowered (WindowBudget.SetLimit):
// it doubles its stride until that drops checkpoints, as fitBudget does,
// and reports whether it dropped any.
func (ix *index) halve() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for !ix.released && ix.winBytes > 0 && len(ix.cps) > 2 && ix.stride <= int64(len(ix.cps))*4 {
		ix.stride = max(ix.stride, 1) * 2
		ix.windows.thinned.Add(1)
		if ix.dropCheckpoints() {
			return true
		}
	}
	return false
}

// dropCheckpoints removes the checkpoints between the first and the last
// whose number is not a multiple of ix.stride, with their windows, and
// reports whether it removed any.
func (ix *index) dropCheckpoints() bool {
	last := len(ix.cps) - 1
	kept := ix.cps[:1]
	var freed int64
	for i := 1; i < last; i++ {
		if ix.cps[i].seq%ix.stride != 0 {
			freed += int64(len(ix.cps[i].win))
			// The kept span before it now runs on through it.
			k := &kept[len(kept)-1]
			k.sum = crc.Combine(k.sum, ix.cps[i].sum, ix.cps[i+1].out-ix.cps[i].out)
			continue
		}
		kept = append(kept, ix.cps[i])
	}
	kept = append(kept, ix.cps[last])
	dropped := len(kept) < len(ix.cps)
	clear(ix.cps[len(kept):])
	ix.cps = kept
	ix.addWinBytes(-freed)
	return dropped
}

// install makes cps, a complete index of the stream made by the
// parallel first pass, the index; split says whether the pass was.
func (ix *index) install(cps []checkpoint, split bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var wb int64
	for _, cp := range cps {
		wb += int64(len(cp.win))
	}
	ix.cps, ix.done, ix.frontWin, ix.grown = cps, true, nil, true
	ix.addWinBytes(wb)
	if ix.windows != nil && !ix.released {
		ix.fitBudget()
	}
	ix.parallel = split
}

// load makes cps, loaded from src (see parseIndex), the index: all of
// it, or up to a frontier to grow from when partial; it reports whether
// it did. The caller grows the index (it has the frontier's turn). What
// the index held before (a prefix of the same stream) is replaced; reads
// going on keep the checkpoints they copied, which are as good.
func (ix *index) load(cps []checkpoint, partial bool, src io.ReaderAt) (bool, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.done || ix.err != nil {
		return false, errors.New("inflate: LoadIndex on a reader whose index is complete")
	}
	if partial && cps[len(cps)-1].out <= ix.cps[len(ix.cps)-1].out {
		return false, nil // no further than this reader's own: keep that
	}
	ix.addWinBytes(-ix.winBytes)
	ix.cps, ix.done, ix.grown = cps, !partial, false
	ix.loaded = &loadedIndex{src: src, n: len(cps), frontier: partial}
	ix.frontWin, ix.stride = nil, 0
	return true, nil
}

// drop discards a loaded index that proved wrong, a chunk index or a
// saved one as chunks says, giving back its windows, so that the stream
// is indexed afresh from its start, and reports whether there was one
// (not yet discarded).
func (ix *index) drop(why error, chunks bool) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.loaded == nil || (ix.loaded.chunks != nil) != chunks {
		return false
	}
	ix.loaded = nil
	ix.addWinBytes(-ix.winBytes)
	ix.cps = []checkpoint{{state: stHeader}}
	ix.done, ix.err, ix.errAt, ix.stride = false, nil, 0, 0
	ix.frontWin, ix.grown = nil, false
	if chunks {
		ix.chunksDropped = why
	} else {
		ix.refused(why)
	}
	return true
}

// refused records that a saved index was not used, and why.
func (ix *index) refused(why error) {
	ix.dropped = why
	ix.drops++
}

// noteRefused is refused, for an index LoadIndex would not take.
func (ix *index) noteRefused(why error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.refused(why)
}

// isLoaded reports an index loaded and not discarded since.
func (ix *index) isLoaded() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.loaded != nil
}

// loadedFrontier returns, for a loaded partial index whose frontier has
// no window yet, the frontier and the checkpoint before it.
func (ix *index) loadedFrontier() (prev, front checkpoint, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.loaded == nil || !ix.loaded.frontier {
		return prev, front, false
	}
	k := len(ix.cps) - 1
	return ix.cps[k-1], ix.cps[k], true
}

// setFrontWin gives a loaded frontier its window.
func (ix *index) setFrontWin(win []byte) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.frontWin, ix.loaded.frontier = win, false
}

// loadedSums returns the CRC-32 of the output up to the frontier of a
// loaded index, from its spans' CRC-32s.
func (ix *index) loadedSums() uint32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var acc uint32
	for i := 0; i+1 < len(ix.cps); i++ {
		acc = crc.Combine(acc, ix.cps[i].sum, ix.cps[i+1].out-ix.cps[i].out)
	}
	return acc
}

// stats returns the checkpoints and the bytes their windows take
// (with the frontier's, unpacked).
func (ix *index) stats() (int, int64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.cps), ix.winBytes + int64(len(ix.frontWin))
}

// indexed returns how many bytes of a stream of size bytes the index
// covers.
func (ix *index) indexed(size int64) int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.done {
		return size
	}
	// A run from a start later found false counts bytes twice.
	return max(ix.cps[len(ix.cps)-1].out, min(ix.parallelDone.Load(), size))
}

// progress is the index as Progress reports it.
func (ix *index) progress(size int64) Progress {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p := Progress{Indexed: ix.cps[len(ix.cps)-1].out, Dropped: ix.dropped, ChunksDropped: ix.chunksDropped}
	if ix.done {
		p.Indexed = size
		p.Chunks = ix.chunkState() != nil
		p.Complete = ix.err == nil && !p.Chunks
		p.Loaded = ix.loaded != nil && !ix.grown
	}
	return p
}

// snapshot returns a copy of the checkpoints to marshal, if the index
// may be saved: complete, or, with partial, a partial index of at least
// minSpans spans that grew past what was loaded and whose last span is a
// window long or more.
func (ix *index) snapshot(partial bool, minSpans int) ([]checkpoint, io.ReaderAt, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.err != nil || ix.done == partial || ix.chunkState() != nil {
		return nil, nil, false
	}
	k := len(ix.cps) - 1
	if partial && (k < max(1, minSpans) || (ix.loaded != nil && (k < ix.loaded.n || ix.loaded.frontier)) ||
		ix.cps[k].out-ix.cps[k-1].out < windowSize) {
		return nil, nil, false
	}
	var src io.ReaderAt
	if ix.loaded != nil {
		src = ix.loaded.src
	}
	return slices.Clone(ix.cps), src, true
}
