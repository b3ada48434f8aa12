package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/npzfs/npzfs/npz"
)

// reply is a reply frame as a test client reads it: its meta, decoded
// into the fields of every kind, and its data.
type reply struct {
	ID      uint64 `json:"id"`
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Member  *int   `json:"member"`
	Name    string `json:"name"`
	Offset  int64  `json:"offset"`
	Last    bool   `json:"last"`
	First   int64  `json:"first"`
	Total   int64  `json:"total"`
	Members []entry
	Version int `json:"version"`
	Server  string
	Archive struct {
		Name     string
		Size     int64
		Members  int
		Bare     bool
		Problems []string
	}
	Limits struct {
		MaxRequest   int `json:"max_request"`
		MaxReplyMeta int `json:"max_reply_meta"`
		MaxChunk     int `json:"max_chunk"`
		MaxPending   int `json:"max_pending"`
		Reads        int
	}
	meta []byte
	data []byte
}

// pipeClient runs Serve over two in-memory pipes and reads its replies
// as a client would, checking each frame.
type pipeClient struct {
	t       testing.TB
	w       *io.PipeWriter // requests
	r       *io.PipeReader // replies, closed to make writes fail
	replies chan *reply
	served  chan error // Serve's result
	nextID  uint64
}

// deadlock bounds a wait that only a bug makes long: a guard against a
// test that would hang, not a timing.
const deadlock = 2 * time.Minute

// startServe serves a over pipes until the test ends.
func startServe(t testing.TB, a *npz.Archive, opts *Options) *pipeClient {
	t.Helper()
	qr, qw := io.Pipe()
	rr, rw := io.Pipe()
	c := &pipeClient{t: t, w: qw, r: rr, replies: make(chan *reply, 64), served: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), a, qr, rw, opts)
		rw.Close()
		qr.Close()
		c.served <- err
	}()
	go c.readReplies(rr)
	t.Cleanup(func() {
		qw.Close()
		for range c.replies {
		}
		c.wait()
	})
	return c
}

// readReplies reads reply frames until the server's output ends: every
// frame must be whole and within the protocol's limits.
func (c *pipeClient) readReplies(r io.Reader) {
	defer close(c.replies)
	var hdr [headerLen]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err != io.EOF && err != io.ErrClosedPipe {
				c.t.Errorf("reading a reply's header: %v", err)
			}
			return
		}
		m, d := binary.LittleEndian.Uint32(hdr[4:]), binary.LittleEndian.Uint32(hdr[8:])
		if string(hdr[:4]) != frameMagic || m == 0 || m > MaxReplyMeta || d > MaxChunk {
			c.t.Errorf("bad reply frame header % x", hdr)
			return
		}
		rp := &reply{meta: make([]byte, m), data: make([]byte, d)}
		if _, err := io.ReadFull(r, rp.meta); err != nil {
			c.t.Errorf("reading a reply's meta: %v", err)
			return
		}
		if _, err := io.ReadFull(r, rp.data); err != nil {
			c.t.Errorf("reading a reply's data: %v", err)
			return
		}
		if err := json.Unmarshal(rp.meta, rp); err != nil {
			c.t.Errorf("reply %s: %v", rp.meta, err)
			return
		}
		if d > 0 && rp.Kind != "data" {
			c.t.Errorf("a %s reply with data: %s", rp.Kind, rp.meta)
		}
		c.replies <- rp
	}
}

// frame is a request frame of meta and data.
func frame(meta []byte, data []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(meta)+len(data))
	putHeader(b, len(meta), len(data))
	return append(append(b, meta...), data...)
}

// sendRaw writes bytes as they are.
func (c *pipeClient) sendRaw(b []byte) {
	c.t.Helper()
	if _, err := c.w.Write(b); err != nil {
		c.t.Fatalf("writing a request: %v", err)
	}
}

// send writes a request whose meta is v, with an id of its own unless
// v has one, and returns the id.
func (c *pipeClient) send(v map[string]any) uint64 {
	c.t.Helper()
	if _, ok := v["id"]; !ok {
		c.nextID++
		v["id"] = c.nextID
	}
	meta, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(frame(meta, nil))
	switch id := v["id"].(type) {
	case uint64:
		return id
	case int:
		return uint64(id)
	}
	return 0
}

// next is the next reply; it fails the test when the server's output
// ends first.
func (c *pipeClient) next() *reply {
	c.t.Helper()
	select {
	case rp, ok := <-c.replies:
		if !ok {
			c.t.Fatal("the server's output ended")
		}
		return rp
	case <-time.After(deadlock):
		c.t.Fatal("no reply")
	}
	return nil
}

// call sends a request and returns its one reply, the next to come.
func (c *pipeClient) call(v map[string]any) *reply {
	c.t.Helper()
	id := c.send(v)
	rp := c.next()
	if rp.ID != id {
		c.t.Fatalf("reply to %d, want to %d: %s", rp.ID, id, rp.meta)
	}
	return rp
}

// wait waits for Serve to return, and returns its error.
func (c *pipeClient) wait() error {
	c.t.Helper()
	select {
	case err := <-c.served:
		c.served <- err
		return err
	case <-time.After(deadlock):
		c.t.Fatal("Serve does not return")
	}
	return nil
}

// readAll reads bytes [off, off+n) of member i in one request and
// checks the replies' order and sizes.
func (c *pipeClient) readAll(i int, off, n int64) ([]byte, *reply) {
	c.t.Helper()
	id := c.send(map[string]any{"kind": "read", "member": i, "offset": off, "length": n})
	var out []byte
	for {
		rp := c.next()
		if rp.ID != id {
			c.t.Fatalf("reply to %d, want to %d: %s", rp.ID, id, rp.meta)
		}
		if rp.Kind != "data" {
			return out, rp
		}
		if rp.Offset != off+int64(len(out)) {
			c.t.Fatalf("data at %d, want %d", rp.Offset, off+int64(len(out)))
		}
		out = append(out, rp.data...)
		if rp.Last {
			if int64(len(out)) != n {
				c.t.Fatalf("%d bytes read, want %d", len(out), n)
			}
			return out, nil
		}
	}
}

// openFile opens an archive file, closed when the test ends.
func openFile(t testing.TB, path string) *npz.Archive {
	t.Helper()
	a, err := npz.Open(context.Background(), path, &npz.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// openBytes opens an archive held in memory.
func openBytes(t testing.TB, b []byte) *npz.Archive {
	t.Helper()
	a, err := npz.NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), &npz.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeTemp writes b to a file of the test's and returns its path.
func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (rp *reply) String() string { return fmt.Sprintf("%s %q", rp.meta, rp.data) }
