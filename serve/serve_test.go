package serve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestHello: the version is checked, and the reply says what the
// server serves and its limits.
func TestHello(t *testing.T) {
	a := openFile(t, "../npz/testdata/numpy_savez_compressed.npz")
	c := startServe(t, a, &Options{Server: "npzfs test", Name: "/data/x.npz", Reads: 5})
	rp := c.call(map[string]any{"kind": "hello", "version": Version})
	if rp.Kind != "hello" || rp.Version != Version || rp.Server != "npzfs test" || rp.Archive.Name != "/data/x.npz" ||
		rp.Archive.Size != a.Size() || rp.Archive.Members != a.Len() || rp.Archive.Bare || rp.Archive.Problems == nil ||
		rp.Limits.MaxRequest != MaxRequest || rp.Limits.MaxReplyMeta != MaxReplyMeta || rp.Limits.MaxChunk != MaxChunk ||
		rp.Limits.MaxPending != MaxPending || rp.Limits.Reads != 5 {
		t.Errorf("hello: %s", rp)
	}
	for _, q := range []map[string]any{{"kind": "hello", "version": 2}, {"kind": "hello"}} {
		if rp := c.call(q); rp.Kind != "error" || rp.Code != codeVersion {
			t.Errorf("%v: %s", q, rp)
		}
	}
}

// TestMalformed sends requests that are wrong in every way the decoder
// and the dispatcher see: each gets one error reply (with the request's
// id when it could be read), and the server serves on.
func TestMalformed(t *testing.T) {
	a := openFile(t, "../npz/testdata/numpy_savez.npz")
	c := startServe(t, a, nil)
	long := append([]byte(`{"id":5,"kind":"hello","version":1,"pad":"`), bytes.Repeat([]byte("x"), MaxRequest)...)
	long = append(long, `"}`...)
	for _, tc := range []struct {
		what  string
		frame []byte
		id    uint64
		code  string
	}{
		{"not JSON", frame([]byte("hello"), nil), 0, codeRequest},
		{"a JSON array", frame([]byte(`[1,2]`), nil), 0, codeRequest},
		{"no id", frame([]byte(`{"kind":"hello","version":1}`), nil), 0, codeRequest},
		{"id 0", frame([]byte(`{"id":0,"kind":"hello","version":1}`), nil), 0, codeRequest},
		{"a negative id", frame([]byte(`{"id":-3,"kind":"hello"}`), nil), 0, codeRequest},
		{"an id too large", frame([]byte(`{"id":18446744073709551616,"kind":"hello"}`), nil), 0, codeRequest},
		{"a string for a number", frame([]byte(`{"id":7,"kind":"table","first":"0"}`), nil), 7, codeRequest},
		{"a kind not known", frame([]byte(`{"id":8,"kind":"write"}`), nil), 8, codeKind},
		{"no kind", frame([]byte(`{"id":9}`), nil), 9, codeKind},
		{"a cancel of nothing named", frame([]byte(`{"id":10,"kind":"cancel"}`), nil), 10, codeRequest},
		{"an empty meta", frame(nil, nil), 0, codeFrame},
		{"a request with data", frame([]byte(`{"id":11,"kind":"hello","version":1}`), []byte("data")), 0, codeFrame},
		{"a request too long", frame(long, nil), 0, codeFrame},
	} {
		c.sendRaw(tc.frame)
		rp := c.next()
		if rp.Kind != "error" || rp.ID != tc.id || rp.Code != tc.code || rp.Message == "" || strings.Contains(rp.Message, "\n") {
			t.Errorf("%s: %s", tc.what, rp)
		}
		if rp := c.call(map[string]any{"kind": "hello", "version": 1}); rp.Kind != "hello" {
			t.Fatalf("after %s: %s", tc.what, rp)
		}
	}
	// A cancel of a request not in flight is no request at all: no reply.
	c.send(map[string]any{"kind": "cancel", "target": 12345})
	if rp := c.call(map[string]any{"kind": "hello", "version": 1}); rp.Kind != "hello" {
		t.Errorf("after a cancel of nothing: %s", rp)
	}
	// A bad magic cannot be followed: one reply, and Serve returns
	// without reading the rest.
	c.w.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	if rp := c.next(); rp.Kind != "error" || rp.Code != codeFrame || rp.ID != 0 {
		t.Errorf("bad magic: %s", rp)
	}
	var fe *frameError
	if err := c.wait(); !errors.As(err, &fe) || !fe.fatal {
		t.Errorf("Serve after a bad magic: %v", err)
	}
}

// TestHugeFrame: a frame that declares 4 GiB is skipped without holding
// it: what the server allocates while it reads 8 MiB of it is far less.
func TestHugeFrame(t *testing.T) {
	var hdr [headerLen]byte
	putHeader(hdr[:], 1<<32-1, 0)
	r := io.MultiReader(bytes.NewReader(hdr[:]), io.LimitReader(zeros{}, 8<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var fr frameReader
	_, err := fr.next(r)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("a frame cut short: %v", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Errorf("skipping 8 MiB of a frame allocated %d bytes", grown)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCancel: a cancel ends a read under way (its one reply says
// cancelled, and the read stopped at the source); other reads go on;
// the id may be used again once the reply has come.
func TestCancel(t *testing.T) {
	g, c, member := gated(t, nil)
	id := c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 100})
	until(t, "the read to wait", func() bool { return g.waiting.Load() == 1 })
	c.send(map[string]any{"kind": "cancel", "target": id})
	if rp := c.next(); rp.ID != id || rp.Code != codeCancelled || rp.Member == nil || *rp.Member != 0 {
		t.Fatalf("cancelled read: %s", rp)
	}
	if g.cancelled.Load() != 1 {
		t.Errorf("the source saw %d reads cancelled", g.cancelled.Load())
	}
	close(g.open)
	if got, rp := c.readAll(0, 0, 100); rp != nil || !bytes.Equal(got, member[:100]) {
		t.Errorf("a read after a cancel: %v", rp)
	}
	c.send(map[string]any{"id": id, "kind": "read", "member": 1, "offset": 5, "length": 10})
	if rp := c.next(); rp.ID != id || rp.Kind != "data" || !bytes.Equal(rp.data, member[5:15]) {
		t.Errorf("a read with the id again: %s", rp)
	}
}

// TestCancelWaiting: a read waiting for its turn behind one that runs
// is cancelled before it starts.
func TestCancelWaiting(t *testing.T) {
	g, c, _ := gated(t, &Options{Reads: 1})
	first := c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 100})
	until(t, "the read to wait", func() bool { return g.waiting.Load() == 1 })
	second := c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 100})
	c.send(map[string]any{"kind": "cancel", "target": second})
	if rp := c.next(); rp.ID != second || rp.Code != codeCancelled {
		t.Fatalf("cancelled while waiting: %s", rp)
	}
	close(g.open)
	if rp := c.next(); rp.ID != first || rp.Kind != "data" || !rp.Last {
		t.Fatalf("the first read: %s", rp)
	}
	if g.waiting.Load() != 1 {
		t.Errorf("%d reads reached the source, want 1", g.waiting.Load())
	}
}

// TestCloseMidRead: a close cancels the reads under way, which reply
// so, then is answered, and Serve returns; nothing more is written.
func TestCloseMidRead(t *testing.T) {
	g, c, _ := gated(t, nil)
	ids := map[uint64]bool{}
	for range 5 {
		ids[c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 4096})] = true
	}
	until(t, "the reads to wait", func() bool { return g.waiting.Load() == 5 })
	closeID := c.send(map[string]any{"kind": "close"})
	for range ids {
		if rp := c.next(); !ids[rp.ID] || rp.Code != codeCancelled {
			t.Errorf("a read under way at close: %s", rp)
		}
	}
	if rp := c.next(); rp.ID != closeID || rp.Kind != "closed" {
		t.Errorf("close: %s", rp)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Serve after close: %v", err)
	}
	if rp, ok := <-c.replies; ok {
		t.Errorf("a reply after closed: %s", rp)
	}
}

// TestEndOfInputMidRead: when the client's side of the input closes,
// the reads under way are cancelled at the source, and Serve returns.
func TestEndOfInputMidRead(t *testing.T) {
	g, c, _ := gated(t, nil)
	for range 3 {
		c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 4096})
	}
	until(t, "the reads to wait", func() bool { return g.waiting.Load() == 3 })
	c.w.Close()
	if err := c.wait(); err != nil {
		t.Errorf("Serve at the end of its input: %v", err)
	}
	if g.cancelled.Load() != 3 {
		t.Errorf("%d reads cancelled at the source, want 3", g.cancelled.Load())
	}
}

// TestOutputClosed: once a reply cannot be written (the client is gone),
// Serve returns the error.
func TestOutputClosed(t *testing.T) {
	a := openFile(t, "../npz/testdata/numpy_savez.npz")
	c := startServe(t, a, nil)
	c.r.CloseWithError(io.ErrClosedPipe)
	c.send(map[string]any{"kind": "hello", "version": 1})
	if err := c.wait(); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Serve with its output closed: %v", err)
	}
}

// TestBusyAndDuplicate: past MaxPending requests in flight, one more is
// refused as busy; an id in flight is refused; both leave the reads in
// flight alone.
func TestBusyAndDuplicate(t *testing.T) {
	g, c, _ := gated(t, &Options{Reads: 2})
	var b bytes.Buffer
	for i := range MaxPending {
		b.Write(frame(fmt.Appendf(nil, `{"id":%d,"kind":"read","member":0,"offset":0,"length":1}`, i+1), nil))
	}
	c.sendRaw(b.Bytes())
	c.nextID = MaxPending
	until(t, "the reads to wait", func() bool { return g.waiting.Load() == 2 })
	if rp := c.call(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 1}); rp.Code != codeBusy {
		t.Errorf("one read past the most: %s", rp)
	}
	if rp := c.call(map[string]any{"kind": "hello", "version": 1}); rp.Kind != "hello" {
		t.Errorf("hello while busy: %s", rp)
	}
	close(g.open)
	got := map[uint64]bool{}
	for range MaxPending {
		rp := c.next()
		if rp.Kind != "data" || got[rp.ID] || rp.ID < 1 || rp.ID > MaxPending {
			t.Fatalf("reply %s", rp)
		}
		got[rp.ID] = true
	}
	c.send(map[string]any{"id": 1, "kind": "read", "member": 0, "offset": 0, "length": 1})
	if rp := c.next(); rp.ID != 1 || rp.Kind != "data" {
		t.Errorf("a finished id used again: %s", rp)
	}
	g.shut.Store(false)
	g2, c2, _ := gated(t, nil)
	c2.send(map[string]any{"id": 77, "kind": "read", "member": 0, "offset": 0, "length": 1})
	until(t, "the read to wait", func() bool { return g2.waiting.Load() == 1 })
	if rp := c2.call(map[string]any{"id": 77, "kind": "table"}); rp.Code != codeRequest {
		t.Errorf("an id in flight: %s", rp)
	}
	close(g2.open)
	if rp := c2.next(); rp.ID != 77 || rp.Kind != "data" {
		t.Errorf("the read in flight: %s", rp)
	}
}

// FuzzFrames feeds arbitrary bytes to the server as its input: it must
// neither panic nor hang, and must write only whole, well-formed
// replies (startServe's reader checks them).
func FuzzFrames(f *testing.F) {
	archive, _ := largeArchive(f, 4096)
	req := func(s string) []byte { return frame([]byte(s), nil) }
	f.Add(req(`{"id":1,"kind":"hello","version":1}`))
	f.Add(append(req(`{"id":1,"kind":"table","headers":true}`), req(`{"id":2,"kind":"read","member":1,"offset":10,"length":3000}`)...))
	f.Add(append(req(`{"id":3,"kind":"read","member":0,"offset":0,"length":4000}`), req(`{"id":4,"kind":"cancel","target":3}`)...))
	f.Add(req(`{"id":5,"kind":"close"}`))
	f.Add([]byte("NZS1\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Add([]byte("NZS1\x02\x00\x00\x00\x05\x00\x00\x00{}abcde"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a := openBytes(t, archive)
		c := startServe(t, a, &Options{Reads: 2})
		c.w.Write(in) // a bad frame stops the server reading
		c.w.Close()
		for range c.replies {
		}
		c.wait()
	})
}

// FuzzFrameReader reads frames from arbitrary bytes until an error:
// metas are never longer than a request may be, and errors are what the
// decoder promises.
func FuzzFrameReader(f *testing.F) {
	f.Add(frame([]byte(`{"id":1}`), nil))
	f.Add([]byte("NZS1\x00\x00\x01\x00"))
	f.Add(binary.LittleEndian.AppendUint32([]byte("NZS1\x01\x00\x00\x00"), 3))
	f.Fuzz(func(t *testing.T, in []byte) {
		var fr frameReader
		r := bytes.NewReader(in)
		for {
			meta, err := fr.next(r)
			var fe *frameError
			switch {
			case err == nil:
				if len(meta) == 0 || len(meta) > MaxRequest {
					t.Fatalf("a meta of %d bytes", len(meta))
				}
				continue
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				return
			case errors.As(err, &fe):
				if fe.fatal {
					return
				}
				continue
			}
			t.Fatalf("error %v", err)
		}
	})
}

// TestCachedReadNeedsNoTurn: a read whose bytes are cached, and an empty
// read, are answered in the request loop at once, while the only read
// turn is held by a read waiting for its source; one with the id of the
// read in flight is refused all the same.
func TestCachedReadNeedsNoTurn(t *testing.T) {
	g, c, member := gated(t, &Options{Reads: 1})
	g.shut.Store(false)
	if got, rp := c.readAll(1, 0, int64(len(member))); rp != nil || !bytes.Equal(got, member) {
		t.Fatalf("the deflated member whole: %d bytes, %v", len(got), rp)
	}
	g.shut.Store(true)
	first := c.send(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 100})
	until(t, "the stored read to wait", func() bool { return g.waiting.Load() == 1 })
	cached := c.send(map[string]any{"kind": "read", "member": 1, "offset": 10, "length": 1000})
	if rp := c.next(); rp.ID != cached || rp.Kind != "data" || !rp.Last || rp.Offset != 10 || !bytes.Equal(rp.data, member[10:1010]) {
		t.Fatalf("the cached read: %s", rp)
	}
	empty := c.send(map[string]any{"kind": "read", "member": 0, "offset": 5, "length": 0})
	if rp := c.next(); rp.ID != empty || rp.Kind != "data" || !rp.Last || len(rp.data) != 0 {
		t.Fatalf("the empty read: %s", rp)
	}
	// A cached read with the id of the read in flight is refused, as any
	// read with it is.
	c.send(map[string]any{"kind": "read", "member": 1, "offset": 0, "length": 10, "id": first})
	if rp := c.next(); rp.ID != first || rp.Kind != "error" || rp.Code != codeRequest {
		t.Fatalf("a cached read with the id in flight: %s", rp)
	}
	close(g.open)
	if rp := c.next(); rp.ID != first || rp.Kind != "data" || !rp.Last || !bytes.Equal(rp.data, member[:100]) {
		t.Fatalf("the stored read: %s", rp)
	}
}
