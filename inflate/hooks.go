package inflate

// testHooks are what a test injects into a reader (Options.test) to see
// events as they happen, or to hold them until it has done something
// else, so that it orders them without timing: each hook, when set, is
// called where its comment says. A reader in use has none.
type testHooks struct {
	// start sees (and may change) each chunk start a parallel pass
	// finds, before anyone waiting for it does.
	start func(i int, s *chunkStart)
	// helpWait runs as the index starts waiting for a helper's run.
	helpWait func()
	// pack runs as the window of checkpoint seq starts being packed.
	pack func(seq int64)
	// pend runs as a read starts waiting for a window being packed.
	pend func()
}

func (h *testHooks) started(i int, s *chunkStart) {
	if h != nil && h.start != nil {
		h.start(i, s)
	}
}

func (h *testHooks) helpWaiting() {
	if h != nil && h.helpWait != nil {
		h.helpWait()
	}
}

func (h *testHooks) packing(seq int64) {
	if h != nil && h.pack != nil {
		h.pack(seq)
	}
}

func (h *testHooks) pendWaiting() {
	if h != nil && h.pend != nil {
		h.pend()
	}
}
