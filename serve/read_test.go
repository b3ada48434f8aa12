package serve

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

// piece is a read of a member's bytes.
type piece struct {
	member    int
	off, n    int64
	want      []byte
	got       []byte
	final     bool
	errorCode string
}

// readMany sends every read at once (from another goroutine, so that the
// replies are taken as they come) and gathers their replies, which may
// come in any order, checking each read's bytes come in order.
func (c *pipeClient) readMany(ps []*piece) {
	c.t.Helper()
	byID := map[uint64]*piece{}
	ids := make([]uint64, len(ps))
	for i := range ps {
		c.nextID++
		ids[i] = c.nextID
		byID[ids[i]] = ps[i]
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i, p := range ps {
			meta := fmt.Sprintf(`{"id":%d,"kind":"read","member":%d,"offset":%d,"length":%d}`, ids[i], p.member, p.off, p.n)
			if _, err := c.w.Write(frame([]byte(meta), nil)); err != nil {
				return
			}
		}
	}()
	for left := len(ps); left > 0; {
		rp := c.next()
		p := byID[rp.ID]
		switch {
		case p == nil || p.final:
			c.t.Fatalf("a reply to no read in flight: %s", rp)
		case rp.Kind == "error":
			p.final, p.errorCode = true, rp.Code
			left--
		case rp.Kind != "data" || rp.Offset != p.off+int64(len(p.got)):
			c.t.Fatalf("read %d at %d (%d so far): %s", p.member, p.off, len(p.got), rp)
		default:
			p.got = append(p.got, rp.data...)
			if rp.Last {
				p.final = true
				left--
			}
		}
	}
	<-sent
}

// checkPieces checks every read got exactly its bytes.
func checkPieces(t *testing.T, ps []*piece) {
	t.Helper()
	for _, p := range ps {
		if p.errorCode != "" || !bytes.Equal(p.got, p.want) {
			t.Errorf("member %d, %d bytes at %d: got %d bytes (error %q), want %d", p.member, p.n, p.off, len(p.got), p.errorCode, len(p.want))
		}
	}
}

// randomPieces are a member's bytes whole, then count reads of random
// ranges of them (empty ones and ones to the end among them).
func randomPieces(rng *rand.Rand, member int, whole []byte, count int) []*piece {
	n := int64(len(whole))
	ps := []*piece{{member: member, off: 0, n: n, want: whole}}
	for range count {
		off := rng.Int64N(n + 1)
		k := rng.Int64N(n - off + 1)
		switch rng.IntN(4) {
		case 0:
			k = 0
		case 1:
			k = n - off
		}
		ps = append(ps, &piece{member: member, off: off, n: k, want: whole[off : off+k]})
	}
	return ps
}

// TestReadCorpus reads every readable member of every corpus archive,
// whole and in random pieces, all reads of an archive in flight at once,
// and compares the bytes with what Python read.
func TestReadCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for path, man := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			a := openFile(t, path)
			c := startServe(t, a, &Options{Reads: 3})
			var ps []*piece
			for _, e := range c.table(0, false) {
				if !e.Readable {
					continue
				}
				whole, err := readWhole(a.Members()[e.Index])
				if err != nil {
					t.Fatal(err)
				}
				if sha(whole) != man.Members[e.Index].SHA256 {
					t.Fatalf("member %d: npz reads other bytes than Python", e.Index)
				}
				ps = append(ps, randomPieces(rng, e.Index, whole, 20)...)
			}
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
			c.readMany(ps)
			checkPieces(t, ps)
		})
	}
}

// readWhole reads a member's bytes through npz.
func readWhole(m *npz.Member) ([]byte, error) {
	b := make([]byte, m.Size())
	_, err := m.File().ReadAt(b, 0)
	if err != nil && m.Size() > 0 && !strings.Contains(err.Error(), "EOF") {
		return nil, err
	}
	return b, nil
}

// largeArchive is an archive of one array of n bytes of data, stored and
// deflated (a.npy and b.npy), its data compressible but not uniform.
func largeArchive(t testing.TB, n int) (archive, member []byte) {
	t.Helper()
	head, err := npy.EncodeHeader("<u2", false, []int64{int64(n / 2)})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	member = append(head, make([]byte, n)...)
	for i := len(head); i < len(member); i += 2 {
		member[i] = byte(rng.IntN(16))
	}
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, m := range []struct {
		name   string
		method uint16
	}{{"a.npy", zip.Store}, {"b.npy", zip.Deflate}} {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(member)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), member
}

// TestReadLarge reads members of several MiB, stored and deflated, from
// a file and from memory: whole reads come in replies of MaxChunk bytes,
// in order; pieces across chunk boundaries are exact; fewer reads run at
// once than are in flight.
func TestReadLarge(t *testing.T) {
	archive, member := largeArchive(t, 3*MaxChunk+MaxChunk/2)
	path := writeTemp(t, "large.npz", archive)
	for _, src := range []string{"file", "memory"} {
		t.Run(src, func(t *testing.T) {
			a := openBytes(t, archive)
			if src == "file" {
				a = openFile(t, path)
			}
			c := startServe(t, a, &Options{Reads: 2})
			rng := rand.New(rand.NewPCG(5, 6))
			var ps []*piece
			for i := range 2 {
				ps = append(ps, randomPieces(rng, i, member, 30)...)
				for _, off := range []int64{MaxChunk - 1, 2 * MaxChunk, int64(len(member)) - MaxChunk - 2} {
					ps = append(ps, &piece{member: i, off: off, n: MaxChunk + 2, want: member[off : off+MaxChunk+2]})
				}
			}
			c.readMany(ps)
			checkPieces(t, ps)
			if got, rp := c.readAll(1, 0, int64(len(member))); rp != nil || !bytes.Equal(got, member) {
				t.Errorf("whole read: %d bytes, %v", len(got), rp)
			}
		})
	}
}

// TestReadErrors: reads that cannot be made get one error reply each,
// naming the member when there is one, and the server goes on.
func TestReadErrors(t *testing.T) {
	a := openFile(t, "../npz/testdata/methods.npz")
	names := map[int]string{}
	for _, m := range a.Members() {
		names[m.Index()] = m.Name()
	}
	dir := openFile(t, "../npz/testdata/names.npz")
	c := startServe(t, a, nil)
	size := a.Members()[0].Size()
	for _, tc := range []struct {
		q      map[string]any
		code   string
		member int // -1: none named
	}{
		{map[string]any{"kind": "read", "member": 9, "offset": 0, "length": 1}, codeMember, -1},
		{map[string]any{"kind": "read", "member": -1, "offset": 0, "length": 1}, codeMember, -1},
		{map[string]any{"kind": "read", "offset": 0, "length": 1}, codeRequest, -1},
		{map[string]any{"kind": "read", "member": 0, "length": 1}, codeRequest, -1},
		{map[string]any{"kind": "read", "member": 0, "offset": "0", "length": 1}, codeRequest, -1},
		{map[string]any{"kind": "read", "member": 0, "offset": 0, "length": size + 1}, codeRange, 0},
		{map[string]any{"kind": "read", "member": 0, "offset": size, "length": 1}, codeRange, 0},
		{map[string]any{"kind": "read", "member": 0, "offset": -1, "length": 1}, codeRange, 0},
		{map[string]any{"kind": "read", "member": 0, "offset": 1, "length": -1}, codeRange, 0},
		{map[string]any{"kind": "read", "member": 1, "offset": 0, "length": 1}, codeUnreadable, 1}, // bzip2
		{map[string]any{"kind": "read", "member": 3, "offset": 0, "length": 1}, codeUnreadable, 3}, // encrypted
	} {
		rp := c.call(tc.q)
		if rp.Kind != "error" || rp.Code != tc.code || (tc.member < 0) != (rp.Member == nil) ||
			(rp.Member != nil && (*rp.Member != tc.member || rp.Name != names[tc.member])) || strings.Contains(rp.Message, "\n") {
			t.Errorf("%v: %s", tc.q, rp)
		}
	}
	if got, rp := c.readAll(0, size, 0); rp != nil || len(got) != 0 {
		t.Errorf("an empty read at the end: %v", rp)
	}
	if got, rp := c.readAll(4, 0, size); rp != nil || len(got) != int(size) {
		t.Errorf("reading on after errors: %v", rp)
	}
	// A read that fails is a read error naming the member, not a
	// cancellation.
	archive, _ := largeArchive(t, 4096)
	i := bytes.Index(archive, []byte("a.npy"))
	copy(archive[i:], "x.npy") // the first local header names another member
	ca := startServe(t, openBytes(t, archive), nil)
	if rp := ca.call(map[string]any{"kind": "read", "member": 0, "offset": 0, "length": 10}); rp.Code != codeRead || *rp.Member != 0 || !strings.Contains(rp.Message, `"x.npy"`) {
		t.Errorf("a read of a misnamed member: %s", rp)
	}
	cd := startServe(t, dir, nil)
	for _, e := range cd.table(0, false) {
		if e.Kind == kindFolder {
			if rp := cd.call(map[string]any{"kind": "read", "member": e.Index, "offset": 0, "length": 0}); rp.Code != codeUnreadable || *rp.Member != e.Index {
				t.Errorf("reading folder %q: %s", e.Name, rp)
			}
		}
	}
}

// gate is an archive in memory whose reads, once the gate is shut, wait
// until it opens or their context is done.
type gate struct {
	b         []byte
	shut      atomic.Bool
	open      chan struct{}
	waiting   atomic.Int32 // reads that have waited
	cancelled atomic.Int32 // reads given up on their context
}

func newGate(b []byte) *gate { return &gate{b: b, open: make(chan struct{})} }

func (g *gate) ReadAt(p []byte, off int64) (int, error) {
	return g.ReadAtContext(context.Background(), p, off)
}

func (g *gate) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if g.shut.Load() {
		g.waiting.Add(1)
		select {
		case <-g.open:
		case <-ctx.Done():
			g.cancelled.Add(1)
			return 0, ctx.Err()
		}
	}
	return bytes.NewReader(g.b).ReadAt(p, off)
}

// until waits until cond holds: a guard against a bug, not a timing.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); runtime.Gosched() {
		if time.Since(start) > deadlock {
			t.Fatalf("waited too long for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gated serves the large archive through a gate, its members located,
// and shuts the gate.
func gated(t *testing.T, opts *Options) (*gate, *pipeClient, []byte) {
	t.Helper()
	archive, member := largeArchive(t, 4096)
	g := newGate(archive)
	a, err := npz.NewReader(context.Background(), g, int64(len(archive)), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := startServe(t, a, opts)
	for i := range 2 {
		if _, rp := c.readAll(i, 0, 16); rp != nil {
			t.Fatal(rp)
		}
	}
	g.shut.Store(true)
	return g, c, member
}
