package fs

import (
	"bytes"
	"context"
	"syscall"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
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
		e := root.Lookup(name)
		var c Content
		if name == "sub" {
			c = e.Lookup("deep.bin").File()
		} else {
			c = e.File()
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

func TestReadErrorsBecomeEIO(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := root.Lookup("bad.bin").File()
	if _, errno := readContent(context.Background(), c, make([]byte, 10), 0); errno != syscall.EIO {
		t.Errorf("read of corrupt content: errno %v, want EIO", errno)
	}
	if _, errno := readContent(context.Background(), root.Lookup("small.txt").File(), make([]byte, 10), -1); errno != syscall.EINVAL {
		t.Errorf("read at -1: errno %v, want EINVAL", errno)
	}
}

func TestDirHandleListsAndSeeks(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	many := root.Lookup("many")
	d := &dirHandle{kids: many.Children(), dots: [2]uint64{7, 1}}
	var names []string
	var offs []uint64
	for {
		de, errno := d.Readdirent(context.Background())
		if errno != 0 {
			t.Fatal(errno)
		}
		if de == nil {
			break
		}
		names = append(names, de.Name)
		offs = append(offs, de.Off)
	}
	if len(names) != 1002 || names[0] != "." || names[1] != ".." || names[2] != "f0000" || names[1001] != "f0999" {
		t.Fatalf("listing: %d names, first %q, last %q", len(names), names[:3], names[len(names)-1])
	}
	for i, o := range offs {
		if o != uint64(i+1) {
			t.Fatalf("entry %d has offset %d, want %d", i, o, i+1)
		}
	}
	// Seeking to the offset of entry k resumes at entry k+1.
	if errno := d.Seekdir(context.Background(), offs[500]); errno != 0 {
		t.Fatal(errno)
	}
	de, _ := d.Readdirent(context.Background())
	if de == nil || de.Name != names[501] {
		t.Fatalf("after seekdir(%d): got %v, want %q", offs[500], de, names[501])
	}
	if errno := d.Seekdir(context.Background(), 5000); errno != syscall.EINVAL {
		t.Errorf("seekdir past the end: %v, want EINVAL", errno)
	}
}

func TestAttrs(t *testing.T) {
	root, err := fakeTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &mountState{uid: 1234, gid: 5678, root: root}
	var a, d = new(attrOut), new(attrOut)
	st.fillAttr(root.Lookup("big.bin"), &a.Attr)
	st.fillAttr(root.Lookup("sub"), &d.Attr)
	if a.Mode != syscall.S_IFREG|0o444 || a.Size != 3<<20+17 || a.Uid != 1234 || a.Gid != 5678 || a.Ino != 2 {
		t.Errorf("file attr: %+v", a.Attr)
	}
	if a.Mtime != uint64(root.mt.Unix()) {
		t.Errorf("file mtime %d, want %d", a.Mtime, root.mt.Unix())
	}
	if d.Mode != syscall.S_IFDIR|0o555 || d.Ino != 4 {
		t.Errorf("dir attr: %+v", d.Attr)
	}
	if n := st.nodeCount(); n != 1+5+1000+1 {
		t.Errorf("node count %d, want %d", n, 1007)
	}
}

func TestWritingOperationsAnswerEROFS(t *testing.T) {
	n := &node{e: &memEntry{name: "x", ino: 2, c: &memContent{}}, st: &mountState{}}
	ctx := context.Background()
	checks := map[string]syscall.Errno{
		"setattr":     n.Setattr(ctx, nil, nil, nil),
		"unlink":      n.Unlink(ctx, "a"),
		"rmdir":       n.Rmdir(ctx, "a"),
		"rename":      n.Rename(ctx, "a", nil, "b", 0),
		"setxattr":    n.Setxattr(ctx, "user.a", nil, 0),
		"removexattr": n.Removexattr(ctx, "user.a"),
		"allocate":    n.Allocate(ctx, nil, 0, 1, 0),
		"access W":    n.Access(ctx, 2),
	}
	_, checks["write"] = n.Write(ctx, nil, []byte("x"), 0)
	_, _, _, checks["create"] = n.Create(ctx, "a", 0, 0o644, nil)
	_, checks["mkdir"] = n.Mkdir(ctx, "a", 0o755, nil)
	_, checks["mknod"] = n.Mknod(ctx, "a", 0o644, 0, nil)
	_, checks["symlink"] = n.Symlink(ctx, "t", "a", nil)
	_, checks["link"] = n.Link(ctx, nil, "a", nil)
	_, checks["copy_file_range"] = n.CopyFileRange(ctx, nil, 0, nil, nil, 0, 1, 0)
	_, _, checks["open O_WRONLY"] = n.Open(ctx, syscall.O_WRONLY)
	_, _, checks["open O_RDWR"] = n.Open(ctx, syscall.O_RDWR)
	_, _, checks["open O_TRUNC"] = n.Open(ctx, syscall.O_RDONLY|syscall.O_TRUNC)
	for op, errno := range checks {
		if errno != syscall.EROFS {
			t.Errorf("%s: %v, want EROFS", op, errno)
		}
	}
	if _, flags, errno := n.Open(ctx, syscall.O_RDONLY); errno != 0 || flags&keepCache == 0 {
		t.Errorf("open O_RDONLY: errno %v flags %#x, want keep_cache", errno, flags)
	}
	if errno := n.Access(ctx, 1); errno != syscall.EACCES {
		t.Errorf("access X_OK on a file: %v, want EACCES", errno)
	}
}

var _ gofs.InodeEmbedder = (*node)(nil)

type attrOut = fuseAttrOut

func TestAllowRootDeniesOthers(t *testing.T) {
	st := &mountState{uid: 1000, rootToo: true}
	n := &node{e: &memEntry{name: "x", ino: 2, c: &memContent{}}, st: st}
	caller := func(uid uint32) context.Context {
		c := &fuseContext{}
		c.Uid = uid
		return c
	}
	for uid, want := range map[uint32]syscall.Errno{0: 0, 1000: 0, 1001: syscall.EACCES} {
		if _, _, errno := n.Open(caller(uid), syscall.O_RDONLY); errno != want {
			t.Errorf("open by uid %d: %v, want %v", uid, errno, want)
		}
		if errno := n.Getattr(caller(uid), nil, &attrOut{}); errno != want {
			t.Errorf("getattr by uid %d: %v, want %v", uid, errno, want)
		}
	}
	var a attrOut
	st.fillAttr(n.e, &a.Attr)
	if a.Mode&0o777 != 0o400 {
		t.Errorf("allow_root file mode %o, want 0400", a.Mode&0o777)
	}
	st.rootToo = false
	if _, _, errno := n.Open(caller(1001), syscall.O_RDONLY); errno != 0 {
		t.Errorf("open by another uid without allow_root: %v", errno)
	}
}
