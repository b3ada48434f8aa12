//go:build linux

package fs

import (
	"encoding/binary"
	"errors"
	"log"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/splice"
	"golang.org/x/sys/unix"
)

// loop serves the FUSE device fd itself, for a tree that never changes
// (Finder) and answers every request from memory and local files
// (Config.Local): one goroutine reads a request, answers it, and reads
// the next, as a single-threaded C daemon does. go-fuse instead keeps
// a reader blocked in read(2) for every P (at least two) and starts
// another whenever the last one takes a request; with every P held by
// a blocked reader, Go's monitor thread takes them back, and each
// request then wakes it and another thread, on the other CPU: three
// context switches and a few more system calls for each request of a
// small file, against one. Here one reader holds one P (yielding it
// now and then so that the monitor leaves it be: see read), and a
// request costs the read that brings it and the system calls of its
// answer.
//
// What may take long is answered apart, each in a goroutine of its own,
// so that it holds up no other request: a read whose bytes are not
// spliced from the archive file (inflated, or a view made in memory)
// and statfs (whose first call counts the tree). The kernel's interrupt
// of such a request cancels it. A request answered inline that holds
// the reader up all the same (a read from a cold disk, a push waiting
// for the answer to a read of the pages it fills) gets another reader
// beside it from a watchdog (see watch).
type loop struct {
	s      *server
	fd     int
	logger *log.Logger
	main   reader // the loop's own buffers

	mu      sync.Mutex
	cancels map[uint64]chan struct{} // requests answered apart, by unique

	// For the watchdog (see watch): readers blocked in read(2), requests
	// answered so far, and whether the watchdog runs.
	waiting  atomic.Int32
	answered atomic.Uint64
	watching atomic.Bool

	done chan struct{} // closed when the mount is gone
}

// reader is what one reader of the device reads a request into and
// fills a reply from.
type reader struct {
	in  []byte // the request being answered
	out []byte // its reply's payload (a read's bytes, a listing)
}

func newReader() reader {
	// A request holds at most a write's worth of data after its header
	// (none reach a read-only mount, but the kernel sizes the reads of
	// the device by it).
	return reader{in: make([]byte, MaxRead+64<<10), out: make([]byte, MaxRead)}
}

// FUSE's opcodes that the loop tells apart (Linux's fuse.h).
const (
	opLookup      = 1
	opForget      = 2
	opGetattr     = 3
	opOpen        = 14
	opRead        = 15
	opStatfs      = 17
	opRelease     = 18
	opOpendir     = 27
	opReaddir     = 28
	opReleasedir  = 29
	opAccess      = 34
	opInterrupt   = 36
	opDestroy     = 38
	opIoctl       = 39
	opNotifyReply = 41
	opBatchForget = 42
	opReaddirplus = 44
)

// readOnlyOps are the requests that would change the tree: refused with
// EROFS, as the server's methods for them do.
var readOnlyOps = map[uint32]bool{
	4: true, 6: true, 8: true, 9: true, 10: true, 11: true, 12: true, 13: true, 16: true,
	21: true, 24: true, 35: true, 43: true, 45: true, 47: true, 51: true,
}

const (
	inHeaderSize  = int(unsafe.Sizeof(fuse.InHeader{}))
	outHeaderSize = int(unsafe.Sizeof(fuse.OutHeader{}))
)

func newLoop(s *server, fd int, logger *log.Logger) *loop {
	return &loop{
		s: s, fd: fd, logger: logger, main: newReader(),
		cancels: make(map[uint64]chan struct{}),
		done:    make(chan struct{}),
	}
}

// serve answers requests until the mount is gone.
func (l *loop) serve() {
	defer close(l.done)
	l.read(&l.main, false)
}

// read reads requests and answers them until the mount is gone, or for
// a rescuer (see watch), until another reader waits for requests.
//
// A reader yields its P now and then (see yieldEvery): it keeps it
// through every read(2) and answer, so Go's scheduler never runs in
// between, and to Go's monitor thread a goroutine on the same P for
// 10 ms is a long-running one. The monitor then takes the P whenever it
// finds the reader in read(2), and every request after that finds its
// reader without a P: the thread that wakes in read(2) asks the
// scheduler for one (waking the monitor from its sleep) or hands the
// goroutine to another thread, two or three context switches for a
// request instead of one.
func (l *loop) read(rd *reader, rescuer bool) {
	yielded := time.Now()
	for {
		l.waiting.Add(1)
		n, err := syscall.Read(l.fd, rd.in)
		l.waiting.Add(-1)
		switch {
		case err == nil:
			if !l.watching.Load() && l.watching.CompareAndSwap(false, true) {
				go l.watch()
			}
			l.handle(rd, rd.in[:n])
			l.answered.Add(1)
			if now := time.Now(); now.Sub(yielded) >= yieldEvery {
				yielded = now
				runtime.Gosched()
			}
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.ENOENT):
			// Interrupted, or a request the kernel took back.
		case errors.Is(err, syscall.ENODEV):
			return // unmounted
		default:
			if !rescuer {
				l.logger.Printf("reading the FUSE device: %v", err)
			}
			return
		}
		if rescuer && l.waiting.Load() > 0 {
			return
		}
	}
}

// yieldEvery is how often a reader answering requests back to back
// yields its P: half the time slice (10 ms) after which Go's monitor
// thread deems a goroutine long-running, so that it never does.
const yieldEvery = 5 * time.Millisecond

// rescueAfter is how long every reader may be held up by the requests
// it answers before the watchdog starts another.
const rescueAfter = 10 * time.Millisecond

// watch starts a reader whenever every reader has been answering a
// request for rescueAfter without one being answered. A request that
// takes that long (a read of a cold disk, a listing of many headers)
// then holds up no other; and one cannot wait for another forever: a
// push (FUSE_NOTIFY_STORE) locks each page it fills, and waits for a
// page that a read in flight holds locked until that read is answered,
// which only a reader of the device can do. It runs while requests come
// and stops once none has come for a second, so an idle mount costs
// nothing; while it runs, it wakes a hundred times a second.
func (l *loop) watch() {
	last, quiet := l.answered.Load(), 0
	for {
		time.Sleep(rescueAfter)
		now := l.answered.Load()
		switch {
		case l.gone():
			return
		case now != last:
			quiet = 0
		case l.waiting.Load() == 0:
			quiet = 0
			rd := newReader()
			go l.read(&rd, true)
		default:
			quiet++
		}
		last = now
		if quiet >= int(time.Second/rescueAfter) {
			l.watching.Store(false)
			if l.answered.Load() == now || !l.watching.CompareAndSwap(false, true) {
				return
			}
			quiet = 0 // a request came as it stopped: go on
		}
	}
}

// gone reports whether the mount is gone (the loop has stopped).
func (l *loop) gone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// input is the request's input as a T (which starts with its header),
// or nil when the request is too short to hold one.
func input[T any](req []byte) *T {
	var zero T
	if len(req) < int(unsafe.Sizeof(zero)) {
		return nil
	}
	return (*T)(unsafe.Pointer(&req[0]))
}

// bytesOf is the memory of *v, a reply's fixed part.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// handle answers one request read inline.
func (l *loop) handle(rd *reader, req []byte) {
	if len(req) < inHeaderSize {
		return
	}
	h := (*fuse.InHeader)(unsafe.Pointer(&req[0]))
	s := l.s
	switch op := h.Opcode; {
	case op == opForget:
		if in := input[fuse.ForgetIn](req); in != nil {
			s.Forget(h.NodeId, in.Nlookup)
		}
	case op == opBatchForget:
		l.batchForget(req[inHeaderSize:])
	case op == opInterrupt:
		if in := input[fuse.InterruptIn](req); in != nil {
			l.interrupt(in.Unique)
		}
	case op == opNotifyReply:
		// Nothing is ever asked of the kernel's cache.
	case op == opLookup:
		var out fuse.EntryOut
		st := s.Lookup(nil, h, cString(req[inHeaderSize:]), &out)
		l.reply(h, st, bytesOf(&out), nil)
	case op == opRead, op == opStatfs:
		l.answerRead(rd, h, req)
	case op == opReaddir || op == opReaddirplus:
		in := input[fuse.ReadIn](req)
		if in == nil {
			l.reply(h, fuse.EIO, nil, nil)
			return
		}
		list := fuse.NewDirEntryList(rd.out[:min(int(in.Size), len(rd.out))], in.Offset)
		var st fuse.Status
		if op == opReaddir {
			st = s.ReadDir(nil, in, list)
		} else {
			st = s.ReadDirPlus(nil, in, list)
		}
		l.reply(h, st, nil, list.Bytes())
	default:
		l.other(h, req)
	}
}

// other answers the requests whose answer is a status and at most a
// fixed part.
func (l *loop) other(h *fuse.InHeader, req []byte) {
	s := l.s
	switch op := h.Opcode; {
	case op == opGetattr:
		var out fuse.AttrOut
		if in := input[fuse.GetAttrIn](req); in != nil {
			l.reply(h, s.GetAttr(nil, in, &out), bytesOf(&out), nil)
			return
		}
	case op == opOpen || op == opOpendir:
		var out fuse.OpenOut
		if in := input[fuse.OpenIn](req); in != nil {
			st := s.Open
			if op == opOpendir {
				st = s.OpenDir
			}
			l.reply(h, st(nil, in, &out), bytesOf(&out), nil)
			return
		}
	case op == opRelease || op == opReleasedir:
		if in := input[fuse.ReleaseIn](req); in != nil {
			if op == opRelease {
				s.Release(nil, in)
			} else {
				s.ReleaseDir(in)
			}
			l.reply(h, fuse.OK, nil, nil)
			return
		}
	case op == opAccess:
		if in := input[fuse.AccessIn](req); in != nil {
			l.reply(h, s.Access(nil, in), nil, nil)
			return
		}
	case op == opIoctl:
		var out fuse.IoctlOut
		if in := input[fuse.IoctlIn](req); in != nil {
			l.reply(h, s.Ioctl(nil, in, nil, &out, nil), bytesOf(&out), nil)
			return
		}
	case op == opDestroy:
		l.reply(h, fuse.OK, nil, nil)
		return
	case readOnlyOps[op]:
		l.reply(h, s.refuse(h, erofs), nil, nil)
		return
	default:
		l.reply(h, s.refuse(h, fuse.ENOSYS), nil, nil)
		return
	}
	l.reply(h, fuse.EIO, nil, nil) // too short for its kind
}

// answerRead answers a read, inline when its bytes are read from the
// archive file (copied or spliced), else apart, as statfs is.
func (l *loop) answerRead(rd *reader, h *fuse.InHeader, req []byte) {
	if h.Opcode == opRead {
		in := input[fuse.ReadIn](req)
		if in == nil {
			l.reply(h, fuse.EIO, nil, nil)
			return
		}
		if l.s.fromArchiveFile(in.NodeId) {
			r, st := l.s.Read(nil, in, rd.out[:min(int(in.Size), len(rd.out))])
			l.replyRead(h, r, st, rd.out)
			return
		}
	}
	l.apart(h, req)
}

// apart has req answered by a goroutine of its own, and the loop reads
// the next request meanwhile.
func (l *loop) apart(h *fuse.InHeader, req []byte) {
	req = append([]byte(nil), req...) // the reader reads the next into its buffer
	cancel := make(chan struct{})
	l.mu.Lock()
	l.cancels[h.Unique] = cancel
	l.mu.Unlock()
	go l.answerApart(req, cancel)
}

// answerApart answers a read or a statfs apart.
func (l *loop) answerApart(req []byte, cancel chan struct{}) {
	h := (*fuse.InHeader)(unsafe.Pointer(&req[0]))
	defer func() {
		l.mu.Lock()
		delete(l.cancels, h.Unique)
		l.mu.Unlock()
	}()
	switch h.Opcode {
	case opStatfs:
		var out fuse.StatfsOut
		l.reply(h, l.s.StatFs(cancel, h, &out), bytesOf(&out), nil)
	default:
		in := input[fuse.ReadIn](req)
		buf := readBufs.Get().(*[]byte)
		defer readBufs.Put(buf)
		r, st := l.s.Read(cancel, in, (*buf)[:min(int(in.Size), len(*buf))])
		l.replyRead(h, r, st, *buf)
	}
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, MaxRead); return &b }}

// interrupt cancels the request unique if it is answered apart and not
// yet answered; the kernel interrupts only requests it still waits on.
func (l *loop) interrupt(unique uint64) {
	l.mu.Lock()
	if c, ok := l.cancels[unique]; ok {
		close(c)
		delete(l.cancels, unique)
	}
	l.mu.Unlock()
}

// batchForget passes on each node of a BATCH_FORGET: a count and a
// padding word, then (node ID, lookups) pairs.
func (l *loop) batchForget(b []byte) {
	if len(b) < 8 {
		return
	}
	n := int(binary.NativeEndian.Uint32(b))
	b = b[8:]
	for i := 0; i < n && len(b) >= 16; i++ {
		l.s.Forget(binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:]))
		b = b[16:]
	}
}

// cString is the NUL-terminated string b starts with.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// reply answers h with st and, when st is OK, the reply's fixed part
// and payload. A reply the kernel no longer waits for (ENOENT: the
// request was interrupted) is dropped.
func (l *loop) reply(h *fuse.InHeader, st fuse.Status, fixed, payload []byte) {
	if !st.Ok() {
		fixed, payload = nil, nil
	}
	oh := fuse.OutHeader{Length: uint32(outHeaderSize + len(fixed) + len(payload)), Status: -int32(st), Unique: h.Unique}
	l.write([][]byte{bytesOf(&oh), fixed, payload})
}

func (l *loop) write(iov [][]byte) {
	for {
		_, err := unix.Writev(l.fd, iov)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				l.logger.Printf("answering the kernel: %v", err)
			}
			return
		}
	}
}

// inMemory and inPipe are what go-fuse's read results hold: bytes in
// memory (fuse.ReadResultVector), and bytes waiting in a pipe
// (fuse.ReadResultPipe), its read end and their count.
type (
	inMemory interface {
		Slices() ([][]byte, fuse.Status)
	}
	inPipe interface{ Stateful() (uintptr, int) }
)

// replyRead answers a read with r: slices of memory written as they
// are, a pipe (bytes spliced from the archive file) spliced on behind
// the header, so that the bytes never pass through the daemon; else
// copied into buf.
func (l *loop) replyRead(h *fuse.InHeader, r fuse.ReadResult, st fuse.Status, buf []byte) {
	if !st.Ok() || r == nil {
		l.reply(h, st, nil, nil)
		return
	}
	defer r.Done()
	switch r := r.(type) {
	case inMemory:
		if b, st := r.Slices(); st.Ok() {
			n := 0
			for _, s := range b {
				n += len(s)
			}
			oh := fuse.OutHeader{Length: uint32(outHeaderSize + n), Unique: h.Unique}
			l.write(append([][]byte{bytesOf(&oh)}, b...))
			return
		}
	case inPipe:
		src, n := r.Stateful()
		if err := l.splice(h, src, n); err != nil {
			l.logger.Printf("splicing a read's bytes to the kernel: %v", err)
			l.reply(h, fuse.EIO, nil, nil)
		}
		return
	}
	b, st := r.Bytes(buf)
	l.reply(h, st, nil, b)
}

// splice sends n bytes waiting in the pipe read by src behind a reply
// header: both in a pipe of their own, which is spliced to the device
// whole, as the kernel takes a reply spliced to it.
func (l *loop) splice(h *fuse.InHeader, src uintptr, n int) error {
	pair, err := splice.Get()
	if err != nil {
		return err
	}
	defer splice.Done(pair)
	total := outHeaderSize + n
	if err := pair.Grow(total + os.Getpagesize()); err != nil {
		return err
	}
	oh := fuse.OutHeader{Length: uint32(total), Unique: h.Unique}
	if k, err := pair.Write(bytesOf(&oh)); err != nil || k != outHeaderSize {
		return errors.Join(errors.New("writing a reply header into a pipe"), err)
	}
	for moved := 0; moved < n; {
		k, err := pair.LoadFrom(src, n-moved)
		if err != nil || k == 0 {
			return errors.Join(errors.New("moving a read's bytes between pipes"), err)
		}
		moved += k
	}
	if _, err := pair.WriteTo(uintptr(l.fd), total); err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}
