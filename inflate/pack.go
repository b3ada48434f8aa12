package inflate

import "context"

// The first pass packs each checkpoint's window (see packWindow) while
// the span after the next checkpoint inflates: packing is a sizeable
// share of a span's work, so the frontier hands it to a goroutine of its
// own and goes on; a read that needs the window before it is packed
// waits for it (index.windowOf).

// A pendingWindow is a checkpoint's window being packed: win is set
// before done is closed.
type pendingWindow struct {
	done   chan struct{}
	masked []byte // the window, with only its touched bytes kept
	win    []byte
}

// packed waits for the window packed before, if any, to be packed (and
// packBuf free), until ctx is done. The turn is held.
func (f *frontier) packed(ctx context.Context) error {
	p := f.packing
	if p == nil {
		return nil
	}
	f.s.hooks.waiting(forWindow)
	_, err := p.wait(ctx)
	return err
}

// packLater copies the touched bytes of win into packBuf, the window
// packed before being packed (see packed), and returns the pending
// window for index.pack. The turn is held.
func (f *frontier) packLater(win []byte, touched []bool) *pendingWindow {
	if f.packBuf == nil && len(win) > 0 {
		f.packBuf = make([]byte, windowSize)
	}
	masked := f.packBuf[:len(win)]
	maskWindow(masked, win, touched)
	f.packing = &pendingWindow{done: make(chan struct{}), masked: masked}
	return f.packing
}

// pack packs the window p of the checkpoint numbered seq, and gives it
// to that checkpoint if the index still has it.
func (ix *index) pack(seq int64, p *pendingWindow) {
	ix.hooks.packing(seq)
	p.win = packWindow(p.masked)
	p.masked = nil
	ix.setWindow(seq, p)
	close(p.done)
}

// wait returns the window once it is packed, or ctx's error once ctx is
// done.
func (p *pendingWindow) wait(ctx context.Context) ([]byte, error) {
	select {
	case <-p.done:
		return p.win, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
