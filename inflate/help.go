package inflate

import "context"

// Helping the lazy first pass. On a reader with Options.Helpers set, the
// first read far past an index still in its first chunk (further than a
// (Helpers+1)th of the output past it) has the stream cut into Helpers+1
// chunks, as the parallel pass cuts it (see parallel.go): helper goroutines find the
// starts of chunks 1 on and run from them, while the index grows from the
// stream's start as it always does, a span at a time under r.extMu,
// answering the reads before it as it reaches them. When it reaches the
// next chunk's start, proven as a run proves it (a block header at the
// very bit, then the start's recorded state), the helper's run of that
// chunk is waited for and spliced in: the index jumps to that run's end,
// the next chunk's start. A run that failed, or a start passed any other
// way, leaves the index to grow on as before.

// helping is a reader's help (under r.extMu).
type helping struct {
	p     *parallelPass
	w     *passWorker // for a start the index needs that no helper has begun
	stop  context.CancelFunc
	chunk int   // the chunk the frontier is in
	next  int   // the start the index heads for: -2 not yet looked for, -1 none
	final int64 // once next's header is reached: the output offset of its start; else -1
}

// on reports whether h is help under way: a reader without helpers, or
// whose helpers are done or will never start, has a nil or empty one.
func (h *helping) on() bool { return h != nil && h.p != nil }

// maybeHelp starts helpers when a read waits far past an index still in
// its first chunk, or decides there will be none. r.extMu is held.
func (r *ReaderAt) maybeHelp() {
	if r.helpers == 0 || r.help != nil {
		return
	}
	n := int(min(r.csize/r.helpChunk, int64(r.helpers+1)))
	chunk := (r.csize + int64(n) - 1) / int64(max(n, 1))
	r.mu.RLock()
	// The index may have grown a little for shallower reads, but not
	// into the chunks the helpers would run.
	front := r.cps[len(r.cps)-1]
	early := !r.done && r.err == nil && !r.loaded && front.bit < chunk*8
	deep := false
	for _, w := range r.waiting {
		deep = deep || (!w.background && w.start >= front.out+r.size/int64(r.helpers+1))
	}
	r.mu.RUnlock()
	if !deep && early {
		return
	}
	if !early || n < 2 || r.csize >= r.size {
		r.help = &helping{} // never: too late, or the stream too short or stored
		return
	}
	r.aheadMu.Lock()
	defer r.aheadMu.Unlock()
	if r.aheadCtx.Err() != nil {
		return // released
	}
	ctx, stop := context.WithCancel(r.aheadCtx)
	p := newPass(r, ctx, n, r.cps[0])
	r.help = &helping{p: p, w: &passWorker{}, stop: stop, next: -2, final: -1}
	ws := make([]*passWorker, min(r.helpers, n-1))
	for i := range ws {
		ws[i] = &passWorker{}
	}
	r.helpStarts.Add(1)
	r.aheadWG.Add(1)
	go func() {
		defer r.aheadWG.Done()
		// Task k is chunk k/2+1's start when k is even, else its run.
		eachParallel(ws, 2*(n-1), func(w *passWorker, k int) {
			i := k/2 + 1
			if k%2 == 0 {
				p.start(w, i)
				return
			}
			if p.start(w, i).ok {
				p.runs[i] = p.run(w, i)
			}
			close(p.ran[i])
		})
	}()
}

// decodeHelped decodes the span from output offset out0 (its window w
// bytes) to target, or to the next chunk's start where it comes first,
// and returns where the span ends. r.extMu is held.
func (r *ReaderAt) decodeHelped(d *decoder, out0 int64, w int, target int64) (int64, error) {
	h := r.help
	if !h.on() {
		return target, d.decode(w + int(target-out0))
	}
	p := h.p
	if h.final >= 0 {
		target = min(target, h.final)
	}
	for {
		d.stopBit = 0
		switch {
		case h.final >= 0:
		case h.next == -2 && h.chunk+1 < len(p.starts):
			d.stopBit = int64(h.chunk+1) * p.chunk * 8
		case h.next >= 0:
			d.stopBit = p.starts[h.next].bit
		}
		err := d.decode(w + int(target-out0))
		if err != nil || d.stopBit == 0 || d.pos >= w+int(target-out0) || d.state != stHeader {
			d.stopBit = 0
			return target, err
		}
		// At a block header at or past the chunk's end, or the next
		// start's.
		if h.next == -2 {
			h.next = p.nextStart(h.w, h.chunk+1, d.bitPos())
		} else if d.bitPos() == d.stopBit {
			h.final = out0 + int64(d.pos-w) + p.starts[h.next].lead
			target = min(target, h.final)
		} else {
			h.next = p.nextStart(h.w, h.next+1, d.bitPos())
		}
	}
}

// helpReached is called when a span ends at or past where the next
// chunk's start lies (end, in the output), with acc the CRC-32 of the
// output up to end. If the decoder is there in the start's state, it
// waits for the helper's run from that start (or for ctx) and returns
// it, to be spliced in; nil leaves the index to grow on. r.extMu is
// held.
func (r *ReaderAt) helpReached(ctx context.Context, d *decoder, end int64, acc uint32) (*chunkRun, error) {
	h := r.help
	p, j := h.p, h.next
	s := &p.starts[j].cp
	final := h.final
	h.final = -1
	if end != final || d.bitPos() != s.bit || uint8(d.state) != s.state || d.blockBit != s.block ||
		int32(storedLeft(d)) != s.stored || d.final != s.final {
		h.next = p.nextStart(h.w, j+1, d.bitPos())
		return nil, nil
	}
	if testHelpWaitHook != nil {
		testHelpWaitHook()
	}
	select {
	case <-p.ran[j]:
	case <-ctx.Done():
		h.final = final // the span is inflated again, and ends here again
		return nil, ctx.Err()
	}
	run := &p.runs[j]
	if run.err != nil || len(run.cps) == 0 ||
		(run.next < 0 && (end+run.size != r.size || crc32Combine(acc, run.crc, run.size) != r.crc)) {
		r.stopHelp() // the index grows on from here alone, and finds what is wrong
		return nil, nil
	}
	h.chunk, h.next = run.next, -2
	if run.next < 0 {
		r.stopHelp()
	}
	return run, nil
}

// testHelpWaitHook, when set, runs as the index starts waiting for a
// helper's run.
var testHelpWaitHook func()

// splice appends to r.cps a helper's run from output offset end, and
// the start where it ends as the frontier, and returns that start's
// window (nil at the stream's end). r.mu is held for writing.
func (r *ReaderAt) splice(run *chunkRun, end int64, seq int64) []byte {
	for _, c := range run.cps {
		c.out += end
		c.seq = seq
		seq++
		r.cps = append(r.cps, c)
		r.winBytes += int64(len(c.win))
		if r.windows != nil && !r.released {
			r.windows.used.Add(int64(len(c.win)))
		}
	}
	r.crcAcc = crc32Combine(r.crcAcc, run.crc, run.size)
	r.helpSplices.Add(1)
	if run.next < 0 {
		r.done = true
		return nil
	}
	st := &r.help.p.starts[run.next]
	f := st.cp
	f.out, f.seq = end+run.size, seq
	r.cps = append(r.cps, f)
	return append([]byte(nil), st.win...)
}

// stopHelp cancels the helpers' work still going on, and lets go of
// it; the index grows on alone. r.extMu is held.
func (r *ReaderAt) stopHelp() {
	if h := r.help; h.on() {
		h.stop()
		r.help = &helping{}
	}
}
