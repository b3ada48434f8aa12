//go:build linux

package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

func readAll(t *testing.T, c Content, off int64, n int) ([]byte, syscall.Errno) {
	t.Helper()
	dest := make([]byte, n)
	r, errno := readContent(context.Background(), c, dest, off)
	if errno != 0 {
		return nil, errno
	}
	if r.Size() > n {
		t.Fatalf("read of %d at %d: result claims %d bytes", n, off, r.Size())
	}
	buf := make([]byte, n+4096)
	b, st := r.Bytes(buf)
	if !st.Ok() {
		t.Fatalf("read of %d at %d: Bytes: %v", n, off, st)
	}
	return b, 0
}

func TestReadClampsToFileEnd(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big.bin", "sub"} {
		e := child(root, name)
		var c Content
		if name == "sub" {
			c = content(child(e, "deep.bin"))
		} else {
			c = content(e)
		}
		want := c.(*memContent).data
		size := int64(len(want))
		for _, tc := range []struct {
			off int64
			n   int
		}{
			{0, 4096}, {0, 1 << 20}, {1, 100}, {size - 10, 4096}, {size - 1, 1},
			{size, 4096}, {size + 5000, 10}, {size / 2, 1 << 20}, {0, int(size) + 1<<20},
		} {
			got, errno := readAll(t, c, tc.off, tc.n)
			if errno != 0 {
				t.Fatalf("%s: read %d at %d: %v", name, tc.n, tc.off, errno)
			}
			lo := min(tc.off, size)
			hi := min(tc.off+int64(tc.n), size)
			if !bytes.Equal(got, want[lo:hi]) {
				t.Errorf("%s: read %d at %d: got %d bytes, want %d (bytes differ: %v)", name, tc.n, tc.off, len(got), hi-lo, len(got) == int(hi-lo))
			}
		}
	}
}

// sliced is a read result go-fuse writes with one writev.
type sliced interface {
	Slices() ([][]byte, fuse.Status)
}

// TestMemoryRepliesAreVectors: a read answered from memory (content with
// no extent in the archive file, or past its end) is a list of slices,
// which go-fuse writes with one writev; any other kind of result it
// first tries to splice, at three system calls a reply.
func TestMemoryRepliesAreVectors(t *testing.T) {
	c := &memContent{data: bytes.Repeat([]byte("npzfs"), 1000)}
	for _, off := range []int64{0, 4000, 5000, 6000} {
		r, errno := readContent(context.Background(), c, make([]byte, 4096), off)
		if errno != 0 {
			t.Fatalf("read at %d: %v", off, errno)
		}
		if _, ok := r.(sliced); !ok {
			t.Errorf("read at %d: a %T, not a list of slices", off, r)
		}
	}
}

// storedContent is data stored in a new archive file, after 100 other
// bytes, as a member's bytes lie in its archive: the file's path, and
// the content, open on it until the test ends.
func storedContent(t *testing.T, data []byte) (string, *memContent) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive")
	if err := os.WriteFile(path, append(make([]byte, 100), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, &memContent{data: data, f: f, off: 100}
}

// TestSmallStoredReadsAreCopied: a read of fewer than spliceMin bytes of
// the archive file is copied (one pread, one writev), not spliced, and
// holds the same bytes; a larger one is spliced through a pipe.
func TestSmallStoredReadsAreCopied(t *testing.T) {
	data := pattern(200000, 5)
	_, c := storedContent(t, data)
	for _, tc := range []struct {
		off    int64
		n      int
		copied bool
	}{{0, 4096, true}, {150, spliceMin - 1, true}, {0, spliceMin, false}, {199000, 4096, true}} {
		r, errno := readContent(context.Background(), c, make([]byte, tc.n), tc.off)
		if errno != 0 {
			t.Fatalf("read %d at %d: %v", tc.n, tc.off, errno)
		}
		if _, copied := r.(sliced); copied != tc.copied {
			t.Errorf("read %d at %d: a %T, copied %v, want %v", tc.n, tc.off, r, copied, tc.copied)
		}
		got, st := r.Bytes(make([]byte, tc.n))
		want := data[tc.off:min(tc.off+int64(tc.n), int64(len(data)))]
		if !st.Ok() || !bytes.Equal(got, want) {
			t.Errorf("read %d at %d: %d bytes, %v; want %d", tc.n, tc.off, len(got), st, len(want))
		}
		r.Done()
	}
}

// shortContent claims size bytes but holds fewer.
type shortContent struct {
	memContent
	size int64
}

func (c *shortContent) Size() int64 { return c.size }

func TestReadErrorsBecomeEIO(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := content(child(root, "bad.bin"))
	if _, errno := readContent(context.Background(), c, make([]byte, 10), 0); errno != syscall.EIO {
		t.Errorf("read of corrupt content: errno %v, want EIO", errno)
	}
	// Content that ends before its Size is EIO, not a short read (which
	// would make the kernel think the file ends there).
	short := &shortContent{memContent{data: pattern(5000, 3)}, 8192}
	for _, off := range []int64{4096, 4999, 6000} {
		if _, errno := readContent(context.Background(), short, make([]byte, 4096), off); errno != syscall.EIO {
			t.Errorf("read at %d of content shorter than its size: errno %v, want EIO", off, errno)
		}
	}
	if _, errno := readContent(context.Background(), content(child(root, "small.txt")), make([]byte, 10), -1); errno != syscall.EINVAL {
		t.Errorf("read at -1: errno %v, want EINVAL", errno)
	}
}

// readdir lists the folder open as handle fh from offset off, one
// request of size bytes at a time, as the kernel would.
func readdir(t *testing.T, s *server, fh, off uint64, size int, plus bool) []fuse.DirEntry {
	t.Helper()
	return readdirFrom(t, s, fuse.ReadIn{Fh: fh}, off, size, plus)
}

// readdirFrom lists what in names (a handle, or a node with no handle)
// from offset off to its end, size bytes a request.
func readdirFrom(t *testing.T, s *server, in fuse.ReadIn, off uint64, size int, plus bool) []fuse.DirEntry {
	t.Helper()
	var out []fuse.DirEntry
	for {
		l := fuse.NewDirEntryList(make([]byte, size), off)
		in.Offset, in.Size = off, uint32(size)
		var st fuse.Status
		if plus {
			st = s.ReadDirPlus(nil, &in, l)
		} else {
			st = s.ReadDir(nil, &in, l)
		}
		if !st.Ok() {
			t.Fatalf("readdir at %d: %v", off, st)
		}
		ents := parseDirents(t, l.Bytes(), plus)
		if len(ents) == 0 {
			return out
		}
		out = append(out, ents...)
		off = ents[len(ents)-1].Off
	}
}

// parseDirents decodes a readdir reply, and checks that each
// readdirplus entry's attributes are its own (or that it has none: node 0,
// for an entry whose attributes could not be had).
func parseDirents(t *testing.T, b []byte, plus bool) []fuse.DirEntry {
	t.Helper()
	ents, eos, err := dirents(b, plus)
	if err != nil {
		t.Fatal(err)
	}
	for i, de := range ents {
		if eo := eos[i]; plus && de.Name != "." && de.Name != ".." && eo.NodeId != 0 && (eo.NodeId != de.Ino || eo.Attr.Ino != de.Ino) {
			t.Errorf("readdirplus %s: entry node %d attr ino %d, dirent ino %d", de.Name, eo.NodeId, eo.Attr.Ino, de.Ino)
		}
	}
	return ents
}

// dirents decodes a readdir reply: struct fuse_dirent (ino, off, namelen,
// type, name padded to 8 bytes), each after its struct fuse_entry_out
// when plus.
func dirents(b []byte, plus bool) ([]fuse.DirEntry, []*fuse.EntryOut, error) {
	var ents []fuse.DirEntry
	var eos []*fuse.EntryOut
	le := binary.LittleEndian
	for len(b) > 0 {
		var eo *fuse.EntryOut
		if plus {
			eo = (*fuse.EntryOut)(unsafe.Pointer(&b[0]))
			b = b[unsafe.Sizeof(fuse.EntryOut{}):]
		}
		if len(b) < 24 {
			return nil, nil, fmt.Errorf("dirent of %d bytes", len(b))
		}
		nl := int(le.Uint32(b[16:]))
		n := (24 + nl + 7) &^ 7
		if n > len(b) {
			return nil, nil, fmt.Errorf("dirent of %d bytes in %d", n, len(b))
		}
		ents = append(ents, fuse.DirEntry{Ino: le.Uint64(b), Off: le.Uint64(b[8:]), Mode: le.Uint32(b[20:]) << 12, Name: string(b[24 : 24+nl])})
		eos = append(eos, eo)
		b = b[n:]
	}
	return ents, eos, nil
}

func newTestServer(t *testing.T) (*server, *memEntry) {
	t.Helper()
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newServer(&mountState{root: root, timeout: time.Hour}), root
}

func lookup(t *testing.T, s *server, parent uint64, name string) fuse.EntryOut {
	t.Helper()
	var out fuse.EntryOut
	if st := s.Lookup(nil, &fuse.InHeader{NodeId: parent}, name, &out); !st.Ok() {
		t.Fatalf("lookup %q in %d: %v", name, parent, st)
	}
	return out
}

func TestReaddirListsAndSeeks(t *testing.T) {
	s, _ := newTestServer(t)
	many := lookup(t, s, rootID, "many")
	var o fuse.OpenOut
	if st := s.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: many.NodeId}}, &o); !st.Ok() {
		t.Fatal(st)
	}
	if o.OpenFlags&fuse.FOPEN_CACHE_DIR == 0 {
		t.Errorf("opendir flags %#x: want cache_dir", o.OpenFlags)
	}
	for _, plus := range []bool{false, true} {
		ents := readdir(t, s, o.Fh, 0, 4096, plus)
		if len(ents) != 1002 || ents[0].Name != "." || ents[1].Name != ".." || ents[2].Name != "f0000" || ents[1001].Name != "f0999" {
			t.Fatalf("plus=%v: %d entries", plus, len(ents))
		}
		if ents[0].Ino != 7 || ents[1].Ino != rootID || ents[2].Ino != 100 {
			t.Errorf("plus=%v: inode numbers . %d .. %d f0000 %d", plus, ents[0].Ino, ents[1].Ino, ents[2].Ino)
		}
		for i, e := range ents {
			if e.Off != uint64(i+1) {
				t.Fatalf("plus=%v: entry %d has offset %d, want %d", plus, i, e.Off, i+1)
			}
		}
		// Reading from the offset of entry k resumes at entry k+1.
		rest := readdir(t, s, o.Fh, ents[500].Off, 4096, plus)
		if len(rest) != 501 || rest[0].Name != ents[501].Name {
			t.Errorf("plus=%v: from offset %d: %d entries, first %v", plus, ents[500].Off, len(rest), rest[0])
		}
		if past := readdir(t, s, o.Fh, 5000, 4096, plus); len(past) != 0 {
			t.Errorf("plus=%v: from past the end: %d entries", plus, len(past))
		}
	}
	// Each readdirplus entry was one lookup of that child: f0000 was
	// listed once, f0600 again when the listing resumed past f0499.
	for ino, want := range map[uint64]uint64{100: 1, 700: 2} {
		if k, ok := s.nodes.get(ino); !ok || k.refs != want || k.parent != many.NodeId {
			t.Errorf("node %d after readdirplus: %+v %v, want %d refs from %d", ino, k, ok, want, many.NodeId)
		}
	}
	s.ReleaseDir(&fuse.ReleaseIn{Fh: o.Fh})
	l := fuse.NewDirEntryList(make([]byte, 4096), 0)
	if st := s.ReadDir(nil, &fuse.ReadIn{Fh: o.Fh}, l); st != fuse.Status(syscall.EBADF) {
		t.Errorf("readdir after releasedir: %v, want EBADF", st)
	}
}

// TestLookupsAreCountedAndForgotten: the server keeps a node only while
// the kernel holds lookups of it, and knows ".." from where it was found.
func TestLookupsAreCountedAndForgotten(t *testing.T) {
	s, _ := newTestServer(t)
	sub := lookup(t, s, rootID, "sub")
	deep := lookup(t, s, sub.NodeId, "deep.bin")
	lookup(t, s, sub.NodeId, "deep.bin")
	if deep.NodeId != 5 || deep.Attr.Size != 70000 || deep.EntryTimeout() == 0 || deep.AttrTimeout() == 0 {
		t.Errorf("deep.bin: %+v", deep)
	}
	if up := lookup(t, s, sub.NodeId, ".."); up.NodeId != rootID {
		t.Errorf(`lookup ".." in sub: node %d, want the root`, up.NodeId)
	}
	if self := lookup(t, s, sub.NodeId, "."); self.NodeId != sub.NodeId {
		t.Errorf(`lookup "." in sub: node %d`, self.NodeId)
	}
	if st := s.Lookup(nil, &fuse.InHeader{NodeId: deep.NodeId}, "x", &fuse.EntryOut{}); st != fuse.Status(syscall.ENOTDIR) {
		t.Errorf("lookup in a file: %v, want ENOTDIR", st)
	}
	var a fuse.AttrOut
	if st := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: deep.NodeId}}, &a); !st.Ok() || a.Size != 70000 {
		t.Errorf("getattr deep.bin: %v size %d", st, a.Size)
	}

	// A missing name is a cached negative entry, not an error.
	miss := lookup(t, s, rootID, "nope")
	if miss.NodeId != 0 || miss.EntryTimeout() == 0 {
		t.Errorf("lookup of a missing name: node %d timeout %v", miss.NodeId, miss.EntryTimeout())
	}

	s.Forget(deep.NodeId, 1)
	if k, ok := s.nodes.get(deep.NodeId); !ok || k.refs != 1 {
		t.Errorf("deep.bin after forgetting 1 of 2 lookups: %+v %v", k, ok)
	}
	s.Forget(deep.NodeId, 1)
	if _, ok := s.nodes.get(deep.NodeId); ok {
		t.Errorf("deep.bin still known after the last forget")
	}
	if st := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: deep.NodeId}}, &a); st != fuse.Status(syscall.ESTALE) {
		t.Errorf("getattr of a forgotten node: %v, want ESTALE", st)
	}
	s.Forget(rootID, 1) // the kernel never forgets the root; harmless if it did
	// Known now: sub (found twice, by name and as "."); the root's own
	// lookups (as "..") are never recorded.
	if n := s.nodes.len(); n != 1 {
		t.Errorf("%d nodes known, want 1", n)
	}
	if k, _ := s.nodes.get(sub.NodeId); k.refs != 2 || k.parent != rootID {
		t.Errorf("sub: %+v, want 2 refs from the root", k)
	}
}

func TestAttrs(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &mountState{uid: 1234, gid: 5678, root: root}
	var a, d = new(attrOut), new(attrOut)
	st.fillAttr(context.Background(), child(root, "big.bin"), &a.Attr)
	st.fillAttr(context.Background(), child(root, "sub"), &d.Attr)
	if a.Mode != syscall.S_IFREG|0o444 || a.Size != 3<<20+17 || a.Uid != 1234 || a.Gid != 5678 || a.Ino != 2 {
		t.Errorf("file attr: %+v", a.Attr)
	}
	if a.Mtime != uint64(root.mt.Unix()) {
		t.Errorf("file mtime %d, want %d", a.Mtime, root.mt.Unix())
	}
	if d.Mode != syscall.S_IFDIR|0o555 || d.Ino != 4 {
		t.Errorf("dir attr: %+v", d.Attr)
	}
	if n := st.nodeCount(context.Background()); n != 1+7+1000+1 {
		t.Errorf("node count %d, want %d", n, 1009)
	}
}

func TestWritingOperationsAnswerEROFS(t *testing.T) {
	s, _ := newTestServer(t)
	small := lookup(t, s, rootID, "small.txt").NodeId
	h := fuse.InHeader{NodeId: small}
	checks := map[string]fuse.Status{
		"setattr":         s.SetAttr(nil, &fuse.SetAttrIn{}, nil),
		"mknod":           s.Mknod(nil, &fuse.MknodIn{}, "a", nil),
		"mkdir":           s.Mkdir(nil, &fuse.MkdirIn{}, "a", nil),
		"unlink":          s.Unlink(nil, &h, "a"),
		"rmdir":           s.Rmdir(nil, &h, "a"),
		"rename":          s.Rename(nil, &fuse.RenameIn{}, "a", "b"),
		"link":            s.Link(nil, &fuse.LinkIn{}, "a", nil),
		"symlink":         s.Symlink(nil, &h, "t", "a", nil),
		"setxattr":        s.SetXAttr(nil, &fuse.SetXAttrIn{}, "user.a", nil),
		"removexattr":     s.RemoveXAttr(nil, &h, "user.a"),
		"create":          s.Create(nil, &fuse.CreateIn{}, "a", nil),
		"tmpfile":         s.Tmpfile(nil, &fuse.CreateIn{}, nil),
		"fallocate":       s.Fallocate(nil, &fuse.FallocateIn{}),
		"access W":        s.Access(nil, &fuse.AccessIn{InHeader: h, Mask: 2}),
		"open O_WRONLY":   s.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_WRONLY}, &fuse.OpenOut{}),
		"open O_RDWR":     s.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_RDWR}, &fuse.OpenOut{}),
		"open O_TRUNC":    s.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_RDONLY | syscall.O_TRUNC}, &fuse.OpenOut{}),
		"write":           second(s.Write(nil, &fuse.WriteIn{}, []byte("x"))),
		"writev":          second(s.Writev(nil, &fuse.WriteIn{}, [][]byte{[]byte("x")})),
		"copy_file_range": second(s.CopyFileRange(nil, &fuse.CopyFileRangeIn{})),
	}
	for op, st := range checks {
		if st != fuse.Status(syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", op, st)
		}
	}
	var o fuse.OpenOut
	if st := s.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_RDONLY}, &o); !st.Ok() || o.OpenFlags&keepCache == 0 {
		t.Errorf("open O_RDONLY: %v flags %#x, want keep_cache", st, o.OpenFlags)
	}
	if st := s.Access(nil, &fuse.AccessIn{InHeader: h, Mask: 1}); st != fuse.Status(syscall.EACCES) {
		t.Errorf("access X_OK on a file: %v, want EACCES", st)
	}
}

func second[T any](_ T, st fuse.Status) fuse.Status { return st }

type attrOut = fuse.AttrOut

func TestAllowRootDeniesOthers(t *testing.T) {
	s, root := newTestServer(t)
	st := s.st
	st.uid, st.rootToo = 1000, true
	small := lookup(t, s, rootID, "small.txt").NodeId
	caller := func(uid uint32) fuse.InHeader {
		h := fuse.InHeader{NodeId: small}
		h.Uid = uid
		return h
	}
	for uid, want := range map[uint32]fuse.Status{0: fuse.OK, 1000: fuse.OK, 1001: fuse.Status(syscall.EACCES)} {
		if got := s.Open(nil, &fuse.OpenIn{InHeader: caller(uid), Flags: syscall.O_RDONLY}, &fuse.OpenOut{}); got != want {
			t.Errorf("open by uid %d: %v, want %v", uid, got, want)
		}
		if got := s.GetAttr(nil, &fuse.GetAttrIn{InHeader: caller(uid)}, &attrOut{}); got != want {
			t.Errorf("getattr by uid %d: %v, want %v", uid, got, want)
		}
		h := caller(uid)
		h.NodeId = rootID
		if got := s.Lookup(nil, &h, "small.txt", &fuse.EntryOut{}); got != want {
			t.Errorf("lookup by uid %d: %v, want %v", uid, got, want)
		}
	}
	var a attrOut
	st.fillAttr(context.Background(), child(root, "small.txt"), &a.Attr)
	if a.Mode&0o777 != 0o400 {
		t.Errorf("allow_root file mode %o, want 0400", a.Mode&0o777)
	}
	st.rootToo = false
	if got := s.Open(nil, &fuse.OpenIn{InHeader: caller(1001), Flags: syscall.O_RDONLY}, &fuse.OpenOut{}); !got.Ok() {
		t.Errorf("open by another uid without allow_root: %v", got)
	}
}

// ctxContent is content whose reads wait for their context, as a read
// inflating deep into a member or fetching from a server does.
type ctxContent struct{ memContent }

func (c *ctxContent) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestReadPassesRequestContext: a read's content gets the request's
// context, so the kernel interrupting the request (go-fuse closes its
// cancel channel) stops the content's work, and the reply is EINTR.
func TestReadPassesRequestContext(t *testing.T) {
	cancel := make(chan struct{})
	ctx := newRequest(cancel, time.Hour)
	defer ctx.end()
	c := &ctxContent{memContent{data: pattern(8192, 1)}}
	done := make(chan syscall.Errno)
	go func() {
		_, errno := readContent(ctx, c, make([]byte, 4096), 0)
		done <- errno
	}()
	close(cancel)
	if errno := <-done; errno != syscall.EINTR {
		t.Errorf("interrupted read: errno %v, want EINTR", errno)
	}
}

// changingContent is spliced content whose second Extent call (the check
// after the bytes are read) reports a change, as a rewrite of the archive
// during the read would.
type changingContent struct {
	memContent
	calls int
}

func (c *changingContent) Extent(context.Context) (uintptr, int64, bool, error) {
	c.calls++
	if c.calls > 1 {
		return 0, 0, false, errors.New("the archive changed after it was opened")
	}
	return c.memContent.Extent(context.Background())
}

// TestSplicedReadIsWholeOrEIO: a stored read that the archive file cannot
// serve whole (truncated under the read, or failing) is EIO, never a short
// reply, which the kernel would take for the end of the file; one that
// saw the archive change while it read is EIO too; a whole one is exact,
// through the pipe and through the read fallback.
func TestSplicedReadIsWholeOrEIO(t *testing.T) {
	data := pattern(300000, 9)
	path, c := storedContent(t, data)
	f := c.f
	got, errno := readAll(t, c, 1000, 200000)
	if errno != 0 || !bytes.Equal(got, data[1000:201000]) {
		t.Fatalf("whole spliced read: errno %v, %d bytes", errno, len(got))
	}
	b := make([]byte, 5000)
	if err := readFull(f.Fd(), 1100, b); err != nil {
		t.Fatalf("read fallback: %v", err)
	} else if !bytes.Equal(b, data[1000:6000]) {
		t.Fatal("read fallback: wrong bytes")
	}

	// The archive file cut short under the content.
	if err := os.Truncate(path, 100+150000); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{140000, 150000, 200000} {
		if _, errno := readContent(context.Background(), c, make([]byte, 65536), off); errno != syscall.EIO {
			t.Errorf("read at %d of a truncated archive: errno %v, want EIO", off, errno)
		}
	}
	if err := readFull(f.Fd(), 100+140000, make([]byte, 65536)); !errors.Is(err, errShortFile) {
		t.Errorf("read fallback past the cut: %v, want errShortFile", err)
	}

	// A descriptor that cannot be read from (a folder) fails the read.
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if _, errno := readContent(context.Background(), &memContent{data: data, f: dir}, make([]byte, 4096), 0); errno != syscall.EIO {
		t.Errorf("read from a failing descriptor: errno %v, want EIO", errno)
	}

	// A change seen after the bytes were read.
	ch := &changingContent{memContent: memContent{data: data[:1000], f: f, off: 100}}
	if _, errno := readContent(context.Background(), ch, make([]byte, 4096), 0); errno != syscall.EIO {
		t.Errorf("read during a change: errno %v, want EIO", errno)
	}
}

// headedContent is memContent whose first bytes are a head made in
// memory; Extent places the bytes after it.
type headedContent struct {
	memContent
	head []byte
}

func (c *headedContent) Head(context.Context) ([]byte, error) { return c.head, nil }

// TestHeadedReadsSpliceAfterTheHead: a view with a head (KEY.ra) reads
// exactly head then data, from any offset, across the seam or on either
// side of it, through the pipe and through the pread fallback.
func TestHeadedReadsSpliceAfterTheHead(t *testing.T) {
	head := pattern(56, 3)
	data := pattern(200000, 4)
	path := filepath.Join(t.TempDir(), "archive")
	if err := os.WriteFile(path, append(make([]byte, 333), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	whole := append(slices.Clone(head), data...)
	c := &headedContent{memContent: memContent{data: whole, f: f, off: 333}, head: head}
	for _, tc := range []struct {
		off int64
		n   int
	}{{0, 56}, {0, 4096}, {10, 20}, {55, 2}, {56, 4096}, {1000, 131072}, {0, len(whole)}, {int64(len(whole)) - 7, 4096}} {
		got, errno := readAll(t, c, tc.off, tc.n)
		end := min(tc.off+int64(tc.n), int64(len(whole)))
		if errno != 0 || !bytes.Equal(got, whole[tc.off:end]) {
			t.Errorf("read of %d at %d: errno %v, %d bytes, want %d", tc.n, tc.off, errno, len(got), end-tc.off)
		}
		// The fallback when no pipe can be had.
		r, err := readCopy(f.Fd(), 333+max(tc.off-56, 0), head[min(tc.off, 56):min(end, 56)], make([]byte, end-tc.off))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := r.Bytes(nil); !bytes.Equal(b, whole[tc.off:end]) {
			t.Errorf("copied read of %d at %d: wrong bytes", tc.n, tc.off)
		}
	}
}
