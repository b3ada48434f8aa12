package inflate

import "time"

// testHooks are what a test injects into a reader (Options.test) to see
// events as they happen, or to hold them until it has done something
// else, so that it orders them without timing: each hook, when set, is
// called where its comment says. A reader in use has none.
type testHooks struct {
	// start sees (and may change) each chunk start a parallel pass
	// finds, before anyone waiting for it does.
	start func(i int, s *chunkStart)
	// pack runs as the window of checkpoint seq starts being packed.
	pack func(seq int64)
	// wait runs as a goroutine starts waiting for what w says.
	wait func(w waitFor)
	// clock is the time, for the backoff of asking an IndexSource.
	clock func() time.Time
}

// waitFor is what a goroutine waits for (see testHooks.wait).
type waitFor int

const (
	forTurn   waitFor = iota // the turn at growing the index
	forSpan                  // a span another read inflates
	forRun                   // a helper's run (the index, with the turn)
	forStart                 // a chunk's start another goroutine is finding
	forWindow                // a window being packed
	forIndex                 // an IndexSource another read asks
)

func (h *testHooks) started(i int, s *chunkStart) {
	if h != nil && h.start != nil {
		h.start(i, s)
	}
}

func (h *testHooks) packing(seq int64) {
	if h != nil && h.pack != nil {
		h.pack(seq)
	}
}

func (h *testHooks) now() time.Time {
	if h != nil && h.clock != nil {
		return h.clock()
	}
	return time.Now()
}

func (h *testHooks) waiting(w waitFor) {
	if h != nil && h.wait != nil {
		h.wait(w)
	}
}
