package pack

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/npzfs/npzfs/npz"
)

// A run is three stages: one goroutine reads the members in order, a
// chunk at a time, and hands each chunk to the compressors (when it is
// to be deflated) and, in order, to the writer; one compressor a worker
// deflates chunks alone (they do not depend on each other); the writer,
// the caller's goroutine, waits for each chunk in turn and writes it,
// with its member's headers and index. The order queue bounds the chunks
// in flight.

// job is one chunk of a member.
type job struct {
	mb    *member
	index int    // the chunk's number in its member
	in    []byte // its bytes
	out   *bytes.Buffer
	last  bool          // the member's last chunk (a member has at least one)
	err   error         // reading failed: the run stops with it
	ready chan struct{} // closed once out is made (or at once, when none is)
}

// packer is one run.
type packer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	a      *npz.Archive
	opts   *Options
	out    *output
	work   chan *job // chunks to deflate
	order  chan *job // every chunk, in order, to the writer
	wg     sync.WaitGroup
	ins    sync.Pool // *[]byte of a chunk
	outs   sync.Pool // *bytes.Buffer
	total  int64
	done   int64
	w      *writer
}

func newPacker(ctx context.Context, a *npz.Archive, out *output, o *Options) *packer {
	p := &packer{a: a, opts: o, out: out}
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	p.work = make(chan *job, o.Workers)
	p.order = make(chan *job, 2*o.Workers+2)
	p.ins.New = func() any { b := make([]byte, o.Chunk); return &b }
	p.outs.New = func() any { return new(bytes.Buffer) }
	for m := range a.All() {
		if !m.IsDir() {
			p.total += m.Size()
		}
	}
	p.w = newWriter(p)
	return p
}

// run packs every member, and stops every goroutine it started before
// it returns.
func (p *packer) run() (Result, error) {
	p.wg.Add(1 + p.opts.Workers)
	go p.read()
	for range p.opts.Workers {
		go p.compress()
	}
	err := p.write()
	if err != nil {
		p.cancel(err)
	}
	for range p.order {
		// Unblock the reader, which stops at the cancellation.
	}
	p.wg.Wait()
	p.cancel(nil)
	if err != nil {
		return Result{}, err
	}
	return p.w.res, nil
}

// read plans and reads every member in order, a chunk at a time.
func (p *packer) read() {
	defer p.wg.Done()
	defer close(p.order)
	defer close(p.work)
	for m := range p.a.All() {
		mb, err := p.plan(m)
		if err == nil {
			err = p.readMember(mb)
		}
		if err != nil {
			p.send(&job{err: err})
			return
		}
	}
}

// send queues j for the writer; false once the run is cancelled.
func (p *packer) send(j *job) bool {
	select {
	case p.order <- j:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// readMember reads mb's bytes, a chunk at a time, and queues each.
func (p *packer) readMember(mb *member) error {
	m := mb.m
	size := m.Size()
	if mb.how == asDir {
		size = 0
	}
	f := m.File()
	deflate := mb.how == asDeflated || mb.how == asAuto
	for i, off := 0, int64(0); ; i++ {
		n := min(p.opts.Chunk, size-off)
		j := &job{mb: mb, index: i, in: p.inBuf(n), last: off+n == size, ready: make(chan struct{})}
		if n > 0 {
			if k, err := f.ReadAtContext(p.ctx, j.in, off); int64(k) != n {
				return p.readError(m, err)
			}
		}
		if !p.send(j) {
			return context.Cause(p.ctx)
		}
		if !deflate {
			close(j.ready)
		} else {
			select {
			case p.work <- j:
			case <-p.ctx.Done():
				return context.Cause(p.ctx)
			}
		}
		off += n
		if j.last {
			return nil
		}
	}
}

// readError is why reading m stopped short.
func (p *packer) readError(m *npz.Member, err error) error {
	if p.ctx.Err() != nil {
		return context.Cause(p.ctx)
	}
	if err == nil {
		err = errors.New("the member ends early")
	}
	return memberError(m, err)
}

// inBuf is a buffer of n bytes for a chunk's input: one of the pool for
// a whole chunk.
func (p *packer) inBuf(n int64) []byte {
	if n == p.opts.Chunk {
		return (*p.ins.Get().(*[]byte))[:n]
	}
	return make([]byte, n)
}

// recycle gives j's buffers back.
func (p *packer) recycle(j *job) {
	if b := j.in; int64(len(b)) == p.opts.Chunk {
		p.ins.Put(&b)
	}
	if j.out != nil {
		j.out.Reset()
		p.outs.Put(j.out)
	}
	j.in, j.out = nil, nil
}

// compress deflates chunks as they come.
func (p *packer) compress() {
	defer p.wg.Done()
	c := newCompressor()
	for j := range p.work {
		if p.ctx.Err() == nil {
			j.out = p.outs.Get().(*bytes.Buffer)
			c.chunk(j.out, j.in, j.last)
		}
		close(j.ready)
	}
}

// write writes every chunk in order, with its member's headers, then the
// central directory.
func (p *packer) write() error {
	for j := range p.order {
		if j.err != nil {
			return j.err
		}
		select {
		case <-j.ready:
		case <-p.ctx.Done():
		}
		if p.ctx.Err() != nil {
			return context.Cause(p.ctx)
		}
		if err := p.w.chunk(j); err != nil {
			return err
		}
		p.done += int64(len(j.in))
		p.recycle(j)
		if p.opts.Progress != nil {
			p.opts.Progress(p.done, p.total)
		}
	}
	if err := p.ctx.Err(); err != nil {
		return context.Cause(p.ctx)
	}
	return p.w.close()
}
