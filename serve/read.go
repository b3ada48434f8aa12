package serve

import (
	"context"
	"fmt"
	"sync"

	"github.com/npzfs/npzfs/npz"
)

// chunkBufs recycles the buffers of full-size replies (MaxChunk bytes
// and the room before them); shorter replies get a buffer of their size.
var chunkBufs = sync.Pool{New: func() any { b := make([]byte, dataRoom+MaxChunk); return &b }}

// maxNow is the longest read the request loop answers itself.
const maxNow = 64 << 10

// readNow answers read request q in the request loop itself, with no
// goroutine, when it can without blocking: an empty read of a valid
// range, or one of at most maxNow bytes that the cache holds (see
// npz.File.ReadCached). A goroutine handed a read costs a wake-up of
// another thread, which is most of a cached read's round trip. It
// reports whether it answered; anything else (an error to say, bytes to
// inflate or fetch) is left to read.
func (s *server) readNow(q *request) bool {
	_, f, off, n, problem := s.target(q)
	if problem != nil || n > maxNow {
		return false
	}
	s.mu.Lock()
	_, dup := s.tasks[q.ID]
	s.mu.Unlock()
	if dup {
		return false // read says so
	}
	buf := make([]byte, dataRoom+n)
	if n > 0 {
		if _, ok := f.ReadCached(buf[dataRoom:], off); !ok {
			return false
		}
	}
	s.out.sendData(q.ID, off, true, buf)
	return true
}

// read answers a read request: the member's bytes from offset, length
// of them, in replies of at most MaxChunk bytes, in order, the last
// marked so.
func (s *server) read(ctx context.Context, q *request, done func()) {
	m, f, off, n, ok := s.checkRead(q, done)
	if !ok {
		return
	}
	who := &about{m.Index(), m.Name()}
	for {
		k := min(n, MaxChunk)
		var buf []byte
		var pooled *[]byte
		if k == MaxChunk {
			pooled = chunkBufs.Get().(*[]byte)
			buf = *pooled
		} else {
			buf = make([]byte, dataRoom+k)
		}
		got, err := f.ReadAtContext(ctx, buf[dataRoom:dataRoom+k], off)
		if got == int(k) {
			err = nil // io.EOF at the member's end
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			if pooled != nil {
				chunkBufs.Put(pooled)
			}
			code, msg := codeRead, bare(err)
			if ctx.Err() != nil {
				code, msg = codeCancelled, "cancelled"
			}
			done() // which cancels ctx: the code is decided before
			s.fail(q.ID, code, msg, who)
			return
		}
		last := k == n
		if last {
			done()
		}
		s.out.sendData(q.ID, off, last, buf[:dataRoom+k])
		if pooled != nil {
			chunkBufs.Put(pooled) // written: sendData keeps nothing
		}
		if last {
			return
		}
		off, n = off+k, n-k
	}
}

// checkRead checks a read request: the member, that it can be read, and
// the range. When it fails, it has sent the error reply (after done).
func (s *server) checkRead(q *request, done func()) (m *npz.Member, f *npz.File, off, n int64, ok bool) {
	m, f, off, n, problem := s.target(q)
	if problem != nil {
		done()
		s.fail(q.ID, problem.code, problem.msg, problem.who)
		return
	}
	if n == 0 {
		done()
		s.out.sendData(q.ID, off, true, make([]byte, dataRoom))
		return
	}
	return m, f, off, n, true
}

// readProblem is why a read request cannot be made: its error reply.
type readProblem struct {
	code, msg string
	who       *about
}

// target is what read request q reads: the member, its file, the range;
// or the problem that stops it (a field missing, no such member, one
// with no bytes or none npzfs can read, a range past its end).
func (s *server) target(q *request) (m *npz.Member, f *npz.File, off, n int64, problem *readProblem) {
	if q.Member == nil || q.Offset == nil || q.Length == nil {
		return nil, nil, 0, 0, &readProblem{codeRequest, `bad request: a read needs "member", "offset" and "length"`, nil}
	}
	i := *q.Member
	if i < 0 || i >= int64(len(s.members)) {
		return nil, nil, 0, 0, &readProblem{codeMember, fmt.Sprintf("no member %d: the archive has %d (0 to %d)", i, len(s.members), len(s.members)-1), nil}
	}
	m = s.members[i]
	who := func() *about { return &about{m.Index(), m.Name()} } // for a problem alone
	if f = m.File(); f == nil {
		return nil, nil, 0, 0, &readProblem{codeUnreadable, fmt.Sprintf("%q is a folder: it has no bytes", m.Name()), who()}
	}
	if err := m.ReadError(); err != nil {
		return nil, nil, 0, 0, &readProblem{codeUnreadable, bare(err), who()}
	}
	off, n = *q.Offset, *q.Length
	if off < 0 || n < 0 || off > m.Size() || n > m.Size()-off {
		return nil, nil, 0, 0, &readProblem{codeRange, fmt.Sprintf("bytes %d to %d of %q, which has %d", off, off+n, m.Name(), m.Size()), who()}
	}
	return m, f, off, n, nil
}
