// Package serve answers npzfs's array protocol (docs/serve.md) for one
// opened archive over a byte stream: the member table, reads of any
// member's bytes at any offset, several at once, and their cancellation.
// It is what "npzfs serve --stdio" runs over its stdin and stdout, so
// that a program (the Python package's npzfs.open) reads arrays through
// npzfs's reader, with its saved indexes and caches, local or remote,
// with no FUSE.
//
// Frames are a small binary header, a JSON object and raw bytes: a
// read's bytes are never encoded. Every request that can block (a table,
// a read) runs in a goroutine of its own under a context that a cancel
// request, a close request or the end of the input cancels, at most
// Options.Reads of them at once; replies go out whole, in whatever order
// they are ready. A malformed request gets an error reply and the server
// goes on; nothing a client sends can make it allocate more than a
// request's bound.
package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"sync"

	"github.com/npzfs/npzfs/npz"
)

// Version is the protocol version this package speaks (hello).
const Version = 1

// DefaultReads is how many reads and tables run at once unless
// Options.Reads says otherwise: enough to keep a remote archive's
// requests overlapping, a few per core for inflating.
var DefaultReads = max(16, 4*runtime.GOMAXPROCS(0))

// Options tune Serve. The zero value is the default.
type Options struct {
	// Server names the program in the hello reply ("npzfs 1.2.3").
	Server string
	// Name is the archive as it may be shown (an absolute path, or a
	// URL without secrets), for the hello reply.
	Name string
	// Reads bounds the reads and tables that run at once; 0 means
	// DefaultReads.
	Reads int
	// MaxHeaderLen bounds the npy header read of an array whose name
	// does not end in ".npy" (the archive's own option bounds the
	// others); 0 means npz.DefaultMaxHeaderLen.
	MaxHeaderLen int
}

// server is one Serve call's state.
type server struct {
	a       *npz.Archive
	members []*npz.Member
	opts    Options
	out     *writer
	ctx     context.Context // cancelled when Serve returns
	stop    context.CancelFunc
	turns   chan struct{} // a slot for each request running
	wg      sync.WaitGroup

	mu    sync.Mutex
	tasks map[uint64]*task // requests in flight, by id
}

// task is a request in flight.
type task struct{ cancel context.CancelFunc }

// Serve answers the requests read from r with replies written to w,
// about a, until r ends or a close request comes (nil), or a frame makes
// the stream impossible to follow, or a reply cannot be written (the
// error). Requests in flight are cancelled then, and waited for; ctx
// cancels them too, though Serve returns only at the end of r. Serve
// does not close a.
func Serve(ctx context.Context, a *npz.Archive, r io.Reader, w io.Writer, opts *Options) error {
	s := &server{a: a, members: a.Members(), out: &writer{w: w}, tasks: map[uint64]*task{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Reads <= 0 {
		s.opts.Reads = DefaultReads
	}
	if s.opts.MaxHeaderLen <= 0 {
		s.opts.MaxHeaderLen = npz.DefaultMaxHeaderLen
	}
	s.turns = make(chan struct{}, s.opts.Reads)
	s.ctx, s.stop = context.WithCancel(ctx)
	defer s.shutdown()
	// Requests come in batches (a client sends every run of an index at
	// once): one read takes many of them.
	br := bufio.NewReaderSize(r, 64<<10)
	var fr frameReader
	for {
		meta, err := fr.next(br)
		var fe *frameError
		switch {
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil // the client is gone
		case errors.As(err, &fe):
			s.fail(0, codeFrame, fe.msg, nil)
			if fe.fatal {
				return fe
			}
			continue
		case err != nil:
			return err
		}
		if s.handle(meta) {
			return s.out.failed()
		}
		if err := s.out.failed(); err != nil {
			return err
		}
	}
}

// shutdown cancels every request in flight and waits for them.
func (s *server) shutdown() {
	s.stop()
	s.wg.Wait()
}

// request is any request: the fields of every kind (docs/serve.md).
type request struct {
	ID      uint64  `json:"id"`
	Kind    string  `json:"kind"`
	Version *int    `json:"version"`
	First   *int64  `json:"first"`
	Count   *int64  `json:"count"`
	Headers bool    `json:"headers"`
	Member  *int64  `json:"member"`
	Offset  *int64  `json:"offset"`
	Length  *int64  `json:"length"`
	Target  *uint64 `json:"target"`
}

// Request kinds.
const (
	kindHello  = "hello"
	kindTable  = "table"
	kindRead   = "read"
	kindCancel = "cancel"
	kindClose  = "close"
)

// handle answers one request, or starts answering it; done reports a
// close request, answered.
func (s *server) handle(meta []byte) (done bool) {
	var q request
	if err := json.Unmarshal(meta, &q); err != nil {
		s.fail(q.ID, codeRequest, "bad request: "+jsonProblem(err), nil)
		return false
	}
	if q.ID == 0 {
		s.fail(0, codeRequest, `bad request: no "id", or 0 (ids are whole numbers from 1)`, nil)
		return false
	}
	switch q.Kind {
	case kindHello:
		s.hello(&q)
	case kindTable:
		s.start(&q, s.table)
	case kindRead:
		if !s.readNow(&q) {
			s.start(&q, s.read)
		}
	case kindCancel:
		if q.Target == nil {
			s.fail(q.ID, codeRequest, `bad request: a cancel needs "target", the id of the request to cancel`, nil)
			return false
		}
		s.mu.Lock()
		if t, ok := s.tasks[*q.Target]; ok {
			t.cancel()
		}
		s.mu.Unlock()
	case kindClose:
		s.shutdown()
		s.out.send(struct {
			ID   uint64 `json:"id"`
			Kind string `json:"kind"`
		}{q.ID, "closed"}, nil)
		return true
	default:
		s.fail(q.ID, codeKind, fmt.Sprintf("unknown request kind %q: the kinds are hello, table, read, cancel and close", q.Kind), nil)
	}
	return false
}

// jsonProblem says what is wrong with a request's JSON, briefly.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "not a JSON object: " + err.Error()
	}
	want := "a whole number"
	switch te.Type.Kind() {
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Uint64:
		want = "a whole number from 1"
	}
	return fmt.Sprintf("%q must be %s, not a JSON %s", te.Field, want, te.Value)
}

// hello answers a hello: the version, the server, the archive, the
// limits.
func (s *server) hello(q *request) {
	if q.Version == nil || *q.Version != Version {
		s.fail(q.ID, codeVersion, fmt.Sprintf(`this server speaks version %d of the protocol: give "version": %d`, Version, Version), nil)
		return
	}
	type archive struct {
		Name     string   `json:"name"`
		Size     int64    `json:"size"`
		Members  int      `json:"members"`
		Bare     bool     `json:"bare"`
		Problems []string `json:"problems"`
	}
	type limits struct {
		MaxRequest   int `json:"max_request"`
		MaxReplyMeta int `json:"max_reply_meta"`
		MaxChunk     int `json:"max_chunk"`
		MaxPending   int `json:"max_pending"`
		Reads        int `json:"reads"`
	}
	problems := s.a.Problems()
	if problems == nil {
		problems = []string{}
	}
	s.out.send(struct {
		ID      uint64  `json:"id"`
		Kind    string  `json:"kind"`
		Version int     `json:"version"`
		Server  string  `json:"server"`
		Archive archive `json:"archive"`
		Limits  limits  `json:"limits"`
	}{
		q.ID, kindHello, Version, s.opts.Server,
		archive{s.opts.Name, s.a.Size(), len(s.members), s.a.Bare(), problems},
		limits{MaxRequest, MaxReplyMeta, MaxChunk, MaxPending, s.opts.Reads},
	}, nil)
}

// start runs a request that may block in a goroutine of its own, once
// it has a turn, under a context that cancel and close cancel; run calls
// done before it sends its last reply.
func (s *server) start(q *request, run func(ctx context.Context, q *request, done func())) {
	ctx, cancel := context.WithCancel(s.ctx)
	t := &task{cancel: cancel}
	s.mu.Lock()
	_, dup := s.tasks[q.ID]
	busy := len(s.tasks) >= MaxPending
	if !dup && !busy {
		s.tasks[q.ID] = t
		s.wg.Add(1)
	}
	s.mu.Unlock()
	switch {
	case dup:
		cancel()
		s.fail(q.ID, codeRequest, fmt.Sprintf("bad request: id %d is in flight already", q.ID), nil)
		return
	case busy:
		cancel()
		s.fail(q.ID, codeBusy, fmt.Sprintf("%d requests are in flight, the most a server takes: wait for replies before sending more", MaxPending), nil)
		return
	}
	go func() {
		defer s.wg.Done()
		defer s.finish(q.ID, t) // if run has not
		select {
		case s.turns <- struct{}{}:
		case <-ctx.Done():
			s.finish(q.ID, t)
			s.fail(q.ID, codeCancelled, "cancelled", nil)
			return
		}
		defer func() { <-s.turns }()
		run(ctx, q, func() { s.finish(q.ID, t) })
	}()
}

// finish forgets request id, run as t, so that its id may be used
// again, and releases its context: a request calls it before its last
// reply.
func (s *server) finish(id uint64, t *task) {
	s.mu.Lock()
	if s.tasks[id] == t {
		delete(s.tasks, id)
	}
	s.mu.Unlock()
	t.cancel()
}
