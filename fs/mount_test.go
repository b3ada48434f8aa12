//go:build linux

package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/pagecache"
)

// The mount tests serve the fake tree from a child process (this test
// binary, re-run with NPZFS_FSTEST_SERVE set): a process that touches its
// own FUSE mount can deadlock.

const serveEnv = "NPZFS_FSTEST_SERVE" // "MOUNTPOINT:DATADIR"

// localEnv set has the child serve the fake tree as a tree that never
// changes (Finder) of local files (Config.Local): with the server's own
// loop, not go-fuse's readers.
const localEnv = "NPZFS_FSTEST_LOCAL"

func TestMain(m *testing.M) {
	if spec := os.Getenv(serveEnv); spec != "" {
		os.Exit(serve(spec))
	}
	os.Exit(m.Run())
}

func serve(spec string) int {
	mnt, data, _ := strings.Cut(spec, ":")
	root, err := fakeTree(data)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	var served Entry = root
	local := os.Getenv(localEnv) != ""
	if local {
		served = &stallRoot{finderRoot: newFinderRoot(root), release: make(chan struct{})}
	}
	srv, err := Mount(mnt, served, Config{
		Source:      filepath.Join(data, "fake.npz"),
		ArchiveSize: 10 << 20,
		UID:         uint32(os.Getuid()),
		GID:         uint32(os.Getgid()),
		Debug:       os.Getenv("NPZFS_FSTEST_DEBUG") != "",
		Local:       local,
	})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		if err := srv.Unmount(false); err != nil {
			srv.Unmount(true)
		}
	}()
	fmt.Println("ready")
	srv.Wait()
	return 0
}

func fuseUsable(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err == nil {
		f.Close()
		if os.Geteuid() == 0 || HaveFusermount() {
			return
		}
		err = ErrNoFusermount
	}
	if os.Getenv("NPZFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("FUSE unusable: %v", err)
	}
	t.Skipf("FUSE unusable: %v (set NPZFS_REQUIRE_FUSE=1 to fail instead)", err)
}

func isMounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// stallRoot is the fake tree as a local archive is served (a Finder),
// whose lookup of "stall" waits until a lookup of a name starting with
// "unstall" comes while it waits (or 30 s): a request that only another
// can release, as a push waits for the answer to a read of the pages it
// fills. Both find small.txt.
type stallRoot struct {
	*finderRoot
	stalled atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (r *stallRoot) Lookup(ctx context.Context, name string) (Entry, error) {
	switch {
	case name == "stall":
		r.stalled.Store(true)
		select {
		case <-r.release:
		case <-time.After(30 * time.Second):
			return nil, iofs.ErrNotExist
		}
		return r.finderRoot.Lookup(ctx, "small.txt")
	case strings.HasPrefix(name, "unstall") && r.stalled.Load():
		r.once.Do(func() { close(r.release) })
		return r.finderRoot.Lookup(ctx, "small.txt")
	}
	return r.finderRoot.Lookup(ctx, name)
}

// TestLoopRescuesAStalledRequest: a request that waits for another is
// not left waiting by the loop's one reader: its watchdog starts another
// reader, which answers the other request.
func TestLoopRescuesAStalledRequest(t *testing.T) {
	mnt, _ := mountFakeAs(t, true)
	done := make(chan error, 1)
	go func() {
		_, err := os.Stat(filepath.Join(mnt, "stall"))
		done <- err
	}()
	// Each name is new: the kernel keeps a missing one as missing.
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("stat of the stalled name: %v", err)
			}
			return
		default:
		}
		os.Stat(filepath.Join(mnt, fmt.Sprintf("unstall%d", i)))
	}
}

// mountFake mounts the fake tree in a child process and returns the mount
// point; cleanup unmounts it and reaps the child whatever happened.
func mountFake(t *testing.T) (mnt, data string) {
	return mountFakeAs(t, false)
}

// mountFakeAs is mountFake, serving the tree as a local archive is
// served (see localEnv) when local.
func mountFakeAs(t *testing.T, local bool) (mnt, data string) {
	fuseUsable(t)
	mnt, data = t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+mnt+":"+data)
	if local {
		cmd.Env = append(cmd.Env, localEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			t.Errorf("server exited: %v", err)
		}
		if isMounted(mnt) {
			t.Errorf("%s still mounted after the server exited", mnt)
			LazyUnmount(mnt)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("server did not mount: %q %v", line, err)
	}
	return mnt, data
}

// TestMountServesTree: the tree reads back as it is, through go-fuse's
// readers and through the server's own loop (a local archive's).
func TestMountServesTree(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(map[bool]string{false: "go-fuse", true: "loop"}[local], func(t *testing.T) {
			testMountServesTree(t, local)
		})
	}
}

func testMountServesTree(t *testing.T, local bool) {
	mnt, data := mountFakeAs(t, local)

	ents, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "bad.bin big.bin many small.txt sub" {
		t.Errorf("ls: %s", got)
	}

	want := map[string]struct {
		mode os.FileMode
		size int64
		ino  uint64
	}{
		"":             {os.ModeDir | 0o555, 0, 1},
		"big.bin":      {0o444, 3<<20 + 17, 2},
		"small.txt":    {0o444, 6, 3},
		"sub":          {os.ModeDir | 0o555, 0, 4},
		"sub/deep.bin": {0o444, 70000, 5},
		"many/f0999":   {0o444, 0, 1099},
	}
	for p, w := range want {
		fi, err := os.Lstat(filepath.Join(mnt, p))
		if err != nil {
			t.Errorf("stat %s: %v", p, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != w.mode || fi.Size() != w.size || st.Ino != w.ino {
			t.Errorf("stat %s: mode %v size %d ino %d, want %v %d %d", p, fi.Mode(), fi.Size(), st.Ino, w.mode, w.size, w.ino)
		}
		if st.Uid != uint32(os.Getuid()) || st.Gid != uint32(os.Getgid()) {
			t.Errorf("stat %s: owner %d:%d", p, st.Uid, st.Gid)
		}
		if fi.ModTime().Unix() != 1714979289 {
			t.Errorf("stat %s: mtime %v", p, fi.ModTime())
		}
	}
	if _, err := os.Stat(filepath.Join(mnt, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat of a missing name: %v", err)
	}

	// Whole-file reads: spliced (big.bin) and from memory (deep.bin).
	for p, w := range map[string][]byte{"big.bin": pattern(3<<20+17, 7), "sub/deep.bin": pattern(70000, 9), "small.txt": []byte("hello\n")} {
		for pass := 0; pass < 2; pass++ { // the second pass comes from the page cache
			got, err := os.ReadFile(filepath.Join(mnt, p))
			if err != nil || !bytes.Equal(got, w) {
				t.Errorf("read %s (pass %d): %d bytes, err %v; equal %v", p, pass, len(got), err, bytes.Equal(got, w))
			}
		}
	}

	// Reads at odd offsets near the end never see bytes past the member.
	f, err := os.Open(filepath.Join(mnt, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := pattern(3<<20+17, 7)
	for _, off := range []int64{0, 1, 4095, 1 << 20, 3 << 20, 3<<20 + 16, 3<<20 + 17, 3<<20 + 100} {
		buf := make([]byte, 300000)
		n, err := f.ReadAt(buf, off)
		lo := min(off, int64(len(big)))
		hi := min(off+int64(len(buf)), int64(len(big)))
		if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], big[lo:hi]) {
			t.Errorf("pread at %d: %d bytes, err %v, want %d bytes", off, n, err, hi-lo)
		}
	}

	// mmap sees the same bytes.
	m, err := syscall.Mmap(int(f.Fd()), 0, len(big), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	if !bytes.Equal(m, big) {
		t.Errorf("mmap of big.bin differs from the content")
	}
	syscall.Munmap(m)
	checkServedAsides(t, mnt, data)
}

// checkServedAsides checks what the fake tree mounted on mnt answers
// besides its files' bytes: fsync, a failing read, a big listing,
// statfs, extended attributes and the mount table's line.
func checkServedAsides(t *testing.T, mnt, data string) {
	t.Helper()
	// fsync succeeds on files and folders; the daemon answers it (and
	// flush) ENOSYS once, and the kernel stops asking.
	for i := 0; i < 2; i++ {
		for _, p := range []string{"small.txt", "sub"} {
			g, err := os.Open(filepath.Join(mnt, p))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Sync(); err != nil {
				t.Errorf("fsync %s: %v", p, err)
			}
			if err := g.Close(); err != nil {
				t.Errorf("close %s: %v", p, err)
			}
		}
	}

	// A content error reaches the reader as EIO.
	if _, err := os.ReadFile(filepath.Join(mnt, "bad.bin")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read bad.bin: %v, want EIO", err)
	}

	// Listing a big folder in small chunks (several readdir calls).
	d, err := os.Open(filepath.Join(mnt, "many"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for {
		chunk, err := d.Readdirnames(37)
		all = append(all, chunk...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	if len(all) != 1000 || all[0] != "f0000" || all[999] != "f0999" {
		t.Errorf("readdir many: %d names", len(all))
	}

	// statfs: blocks from the archive size, files from the node count.
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(mnt, &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Bsize != 4096 || sfs.Blocks != (10<<20)/4096 || sfs.Files != 1009 || sfs.Bfree != 0 {
		t.Errorf("statfs: bsize %d blocks %d files %d bfree %d", sfs.Bsize, sfs.Blocks, sfs.Files, sfs.Bfree)
	}

	// No extended attributes, and the kernel answers that itself.
	for i := 0; i < 2; i++ {
		if _, err := syscall.Getxattr(filepath.Join(mnt, "small.txt"), "user.x", make([]byte, 64)); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("getxattr: %v, want EOPNOTSUPP", err)
		}
		if n, err := syscall.Listxattr(filepath.Join(mnt, "small.txt"), make([]byte, 64)); n > 0 || (err != nil && !errors.Is(err, syscall.EOPNOTSUPP)) {
			t.Errorf("listxattr: %d, %v", n, err)
		}
	}

	// mount(8) shows fuse.npzfs and the source.
	mounts, _ := os.ReadFile("/proc/self/mounts")
	wantLine := filepath.Join(data, "fake.npz") + " " + mnt + " fuse.npzfs ro,"
	if !strings.Contains(string(mounts), wantLine) {
		t.Errorf("/proc/self/mounts has no line starting %q", wantLine)
	}
}

func TestMountRefusesWrites(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(map[bool]string{false: "go-fuse", true: "loop"}[local], func(t *testing.T) {
			testMountRefusesWrites(t, local)
		})
	}
}

func testMountRefusesWrites(t *testing.T, local bool) {
	mnt, _ := mountFakeAs(t, local)
	p := func(s string) string { return filepath.Join(mnt, s) }
	checks := map[string]error{}
	_, checks["open for writing"] = os.OpenFile(p("small.txt"), os.O_WRONLY, 0)
	_, checks["open O_RDWR"] = os.OpenFile(p("small.txt"), os.O_RDWR, 0)
	_, checks["create"] = os.Create(p("new.txt"))
	checks["mkdir"] = os.Mkdir(p("newdir"), 0o755)
	checks["unlink"] = os.Remove(p("small.txt"))
	checks["rmdir"] = syscall.Rmdir(p("sub"))
	checks["rename"] = os.Rename(p("small.txt"), p("other.txt"))
	checks["chmod"] = os.Chmod(p("small.txt"), 0o644)
	checks["truncate"] = os.Truncate(p("small.txt"), 0)
	checks["symlink"] = os.Symlink("small.txt", p("link"))
	checks["link"] = os.Link(p("small.txt"), p("hard"))
	checks["mknod"] = syscall.Mknod(p("fifo"), syscall.S_IFIFO|0o644, 0)
	checks["setxattr"] = syscall.Setxattr(p("small.txt"), "user.x", []byte("1"), 0)
	checks["removexattr"] = syscall.Removexattr(p("small.txt"), "user.x")
	checks["utimes"] = os.Chtimes(p("small.txt"), fixedTime, fixedTime)
	for op, err := range checks {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", op, err)
		}
	}
	if got, _ := os.ReadFile(p("small.txt")); string(got) != "hello\n" {
		t.Errorf("small.txt changed: %q", got)
	}
}

// TestOpenPushesSmallFiles: opening a small file whose bytes lie in a
// local file puts all of them in the page cache before any read (the
// server pushes them with its answer to the open), and they are the
// file's bytes; other files wait for their reads.
func TestOpenPushesSmallFiles(t *testing.T) {
	mnt, _ := mountFake(t)
	big := pattern(3<<20+17, 7)
	for _, tc := range []struct {
		path   string
		want   []byte
		pushed bool
	}{
		{"sub/near.bin", big[100:5100], true},
		{"sub/head.bin", append([]byte("HEAD:"), big[200:3200]...), true},
		{"sub/deep.bin", pattern(70000, 9), false}, // in memory, not in a file
		{"big.bin", big, false},                    // over PushMax
	} {
		p := filepath.Join(mnt, tc.path)
		f, err := os.Open(p) // the open is what pushes
		if err != nil {
			t.Fatal(err)
		}
		pages, err := pagecache.Resident(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range pages {
			if in != tc.pushed {
				t.Errorf("%s: page %d of %d in the page cache after an open: %v, want %v", tc.path, i, len(pages), in, tc.pushed)
				break
			}
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %d bytes, %v; want its %d bytes", tc.path, len(got), err, len(tc.want))
		}
	}
}
