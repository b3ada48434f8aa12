//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/internal/pagecache"
)

// maxHWM is the most memory (peak resident set, VmHWM) a daemon may use,
// whatever the archive it serves claims.
const maxHWM = 256 << 20

// vmHWM is a process's peak resident set in bytes, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("daemon %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// theDaemon is the one live daemon serving dir.
func theDaemon(t *testing.T, dir string) int {
	t.Helper()
	pids := daemons(dir)
	if len(pids) != 1 {
		t.Fatalf("daemons for %s: %v, want one", dir, pids)
	}
	return pids[0]
}

// checkDaemon checks that the daemon still runs and stayed within maxHWM.
func checkDaemon(t *testing.T, pid int) {
	t.Helper()
	if !processAlive(pid) {
		t.Fatalf("daemon %d died", pid)
	}
	if hwm := vmHWM(t, pid); hwm > maxHWM {
		t.Errorf("daemon %d: VmHWM %d MiB, want at most %d", pid, hwm>>20, maxHWM>>20)
	}
}

func sha256File(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// readCapped reads a file from the start, at most limit bytes, into a
// buffer that grows as bytes arrive (never what stat claims).
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(io.LimitReader(f, limit))
	return buf.Bytes(), err
}

// walked is what reading one file through the mount gave.
type walked struct {
	data []byte
	err  error
	size int64
}

// walkMount walks the whole mount with walkEntries (which checks types,
// modes, owners and inodes) and reads every file.
func walkMount(t *testing.T, dir string) map[string]walked {
	t.Helper()
	files := map[string]walked{}
	walkEntries(t, dir, func(path string, fi fs.FileInfo) {
		if fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			b, err := readCapped(path, 64<<20)
			files[rel] = walked{b, err, fi.Size()}
		}
	})
	return files
}

// memberOf is the archive member a served bad path reads: KEY.npy for
// KEY/raw.bin, else the path.
func memberOf(path string) string {
	if k, ok := strings.CutSuffix(path, "/raw.bin"); ok {
		return k + ".npy"
	}
	return path
}

// TestHostileMounts mounts every hostile archive with the real command.
// Unreadable archives are refused within 5 s with one line, leaving
// nothing mounted. The others mount; the whole tree is walked and every
// file read: good files byte for byte, bad files EIO (with the member
// named in the daemon log), absent paths ENOENT, every other file read
// whole or EIO; npzfs ls gives the reasons; the daemon lives and stays
// under 256 MiB; unmount works; the archive is unchanged.
func TestHostileMounts(t *testing.T) {
	needFuse(t)
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "hostile.npz")
			if err := os.WriteFile(archive, c.Archive, 0o444); err != nil {
				t.Fatal(err)
			}
			sum := sha256File(t, archive)
			defer func() {
				if sha256File(t, archive) != sum {
					t.Errorf("the archive changed")
				}
			}()
			if c.Refused {
				hostileRefused(t, archive)
				return
			}
			logf := filepath.Join(t.TempDir(), "daemon.log")
			dir := mount(t, archive, "--log", logf)
			pid := theDaemon(t, dir)
			log := hostileTree(t, c, dir, logf)
			hostileListing(t, c, archive, log)
			checkDaemon(t, pid)
			if r := npzfs(t, "unmount", dir); r.code != 0 {
				t.Fatalf("unmount: exit %d: %s", r.code, r.stderr)
			}
			if !waitGone(pid) {
				t.Errorf("daemon %d still running after unmount", pid)
			}
		})
	}
}

// hostileRefused checks that npzfs mount refuses the unreadable archive
// at once, in one line, leaving nothing mounted, and ls too.
func hostileRefused(t *testing.T, archive string) {
	t.Helper()
	dir := t.TempDir()
	clearLater(t, dir)
	// A hang guard, not a timing test: a refusal takes
	// milliseconds, the rule is 5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mount", archive, dir)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("npzfs mount did not refuse within 5 s")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("npzfs mount of an unreadable archive: %v", err)
	}
	oneLine(t, "mount", result{so.String(), se.String(), ee.ExitCode()}, 1)
	if !strings.Contains(se.String(), "not a readable .npz archive") && !strings.Contains(se.String(), "is a .npy file, not an .npz archive") {
		t.Errorf("message %q does not say the archive is unreadable", se.String())
	}
	if isMounted(dir) || len(daemons(dir)) > 0 {
		t.Errorf("a refused mount left a mount or a daemon")
	}
	r := npzfs(t, "ls", archive)
	oneLine(t, "ls", r, 1)
}

// hostileTree walks the mount of a hostile archive on dir and checks
// what c says of its files; it returns the daemon's log.
func hostileTree(t *testing.T, c hostile.Case, dir, logf string) []byte {
	t.Helper()
	files := walkMount(t, dir)
	for p, w := range files {
		if w.err == nil && int64(len(w.data)) != min(w.size, 64<<20) {
			t.Errorf("%s: read %d bytes of %d without an error", p, len(w.data), w.size)
		}
		if w.err != nil && !errors.Is(w.err, syscall.EIO) {
			t.Errorf("%s: %v, want EIO", p, w.err)
		}
	}
	for p, want := range c.Good {
		w, ok := files[p]
		if !ok {
			t.Errorf("good %q not found in the walk", p)
		} else if w.err != nil || !bytes.Equal(w.data, want) {
			t.Errorf("good %q: %d bytes (want %d), %v", p, len(w.data), len(want), w.err)
		}
	}
	log, _ := os.ReadFile(logf)
	for _, p := range c.Bad {
		w, ok := files[p]
		if !ok {
			t.Errorf("bad %q not found in the walk", p)
		} else if !errors.Is(w.err, syscall.EIO) {
			t.Errorf("bad %q: %d bytes, %v; want EIO", p, len(w.data), w.err)
		}
		if m := strconv.Quote(memberOf(p)); !bytes.Contains(log, []byte(m)) {
			t.Errorf("the daemon log does not name bad member %s:\n%s", m, log)
		}
	}
	for _, p := range c.Absent {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("absent %q: %v, want ENOENT", p, err)
		}
	}
	for _, p := range c.Empty {
		if ents, err := os.ReadDir(filepath.Join(dir, p)); err != nil || len(ents) != 0 {
			t.Errorf("empty folder %q: %d entries, %v", p, len(ents), err)
		}
	}
	return log
}

// hostileListing checks what npzfs ls, and ls --verify, say of the
// hostile archive: every reason, every bad member, every problem.
func hostileListing(t *testing.T, c hostile.Case, archive string, log []byte) {
	t.Helper()
	r := npzfs(t, "ls", archive)
	if r.code != 0 {
		t.Errorf("npzfs ls: exit %d: %s", r.code, r.stderr)
	}
	for name, why := range c.Reasons {
		if !strings.Contains(r.stdout, why) {
			t.Errorf("npzfs ls does not say %q (for %q):\n%s", why, name, r.stdout)
		}
	}
	// ls --verify reads every member: each bad one says why.
	r = npzfs(t, "ls", "--verify", archive)
	for _, p := range c.Bad {
		m := memberOf(p)
		found := false
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, m+" ") && (strings.Contains(line, "reading fails") || strings.Contains(line, "cannot read")) {
				found = true
			}
		}
		if !found {
			t.Errorf("npzfs ls --verify does not say why %q fails:\n%s", m, r.stdout)
		}
		// On stderr too, for a script that keeps it.
		if !strings.Contains(r.stderr, "npzfs ls: "+archive+": "+m+": ") || r.code != 1 {
			t.Errorf("npzfs ls --verify: exit %d, stderr does not say why %q fails: %q", r.code, m, r.stderr)
		}
	}
	for _, p := range c.Problems {
		if !strings.Contains(r.stdout, p) || !bytes.Contains(log, []byte(p)) {
			t.Errorf("npzfs ls or the log lacks the problem %q:\n%s\nlog:\n%s", p, r.stdout, log)
		}
	}
}

// bigArchive writes an archive of a stored and a deflated member of
// mib MiB each (several inflate spans) to a new file and returns it with
// the files the mount serves for them. The bytes are made once per size.
func bigArchive(t *testing.T, mib int) (string, map[string][]byte) {
	t.Helper()
	bigArchives.Lock()
	b, ok := bigArchives.m[mib]
	if !ok {
		n := int64(mib) << 18 // float32 items
		raw := hostile.Bytes(int(4*n), 7)
		data := hostile.NPY("<f4", []int64{n}, raw)
		b.zip = hostile.Zip([]hostile.Member{
			{Name: "stored.npy", Data: data},
			{Name: "deflated.npy", Data: data, Deflate: true},
		})
		b.files = map[string][]byte{
			"stored.npy": data, "stored/raw.bin": raw,
			"deflated.npy": data, "deflated/raw.bin": raw,
		}
		bigArchives.m[mib] = b
	}
	bigArchives.Unlock()
	path := filepath.Join(t.TempDir(), "big.npz")
	if err := os.WriteFile(path, b.zip, 0o444); err != nil {
		t.Fatal(err)
	}
	return path, b.files
}

// bigZip is an archive made by bigArchive and the files it serves.
type bigZip struct {
	zip   []byte
	files map[string][]byte
}

var bigArchives = struct {
	sync.Mutex
	m map[int]bigZip
}{m: map[int]bigZip{}}

// TestHostileArchiveChangedWhileMounted truncates, rewrites in place, or
// renames another file over the archive while it is mounted. Truncated or
// rewritten: every read that reaches the daemon is EIO (spliced stored
// reads too, which used to come back short), the daemon lives and says
// why, and unmount works. Renamed over: the mounted file keeps serving.
func TestHostileArchiveChangedWhileMounted(t *testing.T) {
	needFuse(t)
	for _, change := range []string{"truncate", "rewrite", "rename over"} {
		t.Run(change, func(t *testing.T) {
			archive, want := bigArchive(t, 3)
			logf := filepath.Join(t.TempDir(), "daemon.log")
			dir := mount(t, archive, "--log", logf)
			pid := theDaemon(t, dir)
			open := map[string]*os.File{}
			for p, w := range want {
				f, err := os.Open(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				open[p] = f
				buf := make([]byte, 4096)
				if n, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf[:n], w[:4096]) {
					t.Fatalf("%s before the change: %d, %v", p, n, err)
				}
			}
			fi, _ := os.Stat(archive)
			var err error
			switch change {
			case "truncate":
				err = os.Truncate(archive, fi.Size()/2)
			case "rewrite":
				var b []byte
				if b, err = os.ReadFile(archive); err == nil {
					os.Chmod(archive, 0o644)
					err = os.WriteFile(archive, bytes.Repeat([]byte{0x5a}, len(b)), 0o644)
				}
			case "rename over":
				other := filepath.Join(filepath.Dir(archive), "other")
				if err = os.WriteFile(other, []byte("not the archive"), 0o644); err == nil {
					err = os.Rename(other, archive)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range want {
				f := open[p]
				if err := pagecache.Drop(f); err != nil {
					t.Fatalf("fadvise: %v", err)
				}
				// A range past the cut; for a stored member the start
				// again too. (The start of a deflated one is in the
				// daemon's span cache, read before the change: it is
				// still served.)
				offs := []int64{int64(len(w)) - 5000}
				if strings.HasPrefix(p, "stored") {
					offs = append(offs, 0)
				}
				for _, off := range offs {
					buf := make([]byte, 5000)
					n, err := f.ReadAt(buf, off)
					if change == "rename over" {
						if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], w[off:min(off+5000, int64(len(w)))]) {
							t.Errorf("%s at %d after a rename over the archive: %d, %v", p, off, n, err)
						}
						continue
					}
					if !errors.Is(err, syscall.EIO) {
						t.Errorf("%s at %d after the change: %d bytes, %v; want EIO", p, off, n, err)
					}
				}
			}
			checkDaemon(t, pid)
			for _, f := range open {
				f.Close()
			}
			if r := npzfs(t, "unmount", dir); r.code != 0 {
				t.Fatalf("unmount after the change: exit %d: %s", r.code, r.stderr)
			}
			if !waitGone(pid) {
				t.Errorf("daemon %d still running after unmount", pid)
			}
			log, _ := os.ReadFile(logf)
			if changed := bytes.Contains(log, []byte("changed after it was opened")); changed != (change != "rename over") {
				t.Errorf("the log mentions the change: %v; log:\n%s", changed, log)
			}
		})
	}
}

// readerEnv makes the test binary a reader child (see readerChild).
const readerEnv = "NPZFS_INTEGRATION_READER"

// readerChild reads random ranges of files through a mount and compares
// them with reference copies. spec: "SEED;READS;MOUNTED=REF;...". It drops
// the file's cached pages now and then so reads keep reaching the daemon.
// It prints one line and exits 0 when every byte matched.
func readerChild(spec string) int {
	parts := strings.Split(spec, ";")
	seed, _ := strconv.ParseInt(parts[0], 10, 64)
	reads, _ := strconv.Atoi(parts[1])
	type pair struct {
		f    *os.File
		want []byte
	}
	var files []pair
	for _, p := range parts[2:] {
		mounted, ref, _ := strings.Cut(p, "=")
		want, err := os.ReadFile(ref)
		if err != nil {
			fmt.Println("reader:", err)
			return 1
		}
		f, err := os.Open(mounted)
		if err != nil {
			fmt.Println("reader:", err)
			return 1
		}
		defer f.Close()
		files = append(files, pair{f, want})
	}
	rng := rand.New(rand.NewSource(seed))
	total := 0
	for i := 0; i < reads; i++ {
		p := files[rng.Intn(len(files))]
		if i%8 == 0 {
			pagecache.Drop(p.f)
		}
		size := int64(len(p.want))
		off := rng.Int63n(size)
		buf := make([]byte, 1+rng.Intn(300<<10))
		n, err := p.f.ReadAt(buf, off)
		end := min(off+int64(len(buf)), size)
		if (err != nil && err != io.EOF) || int64(n) != end-off || !bytes.Equal(buf[:n], p.want[off:end]) {
			fmt.Printf("reader: %s at %d (+%d): %d bytes, %v; equal %v\n", p.f.Name(), off, len(buf), n, err, bytes.Equal(buf[:n], p.want[off:end]))
			return 1
		}
		total += n
	}
	fmt.Printf("reader: ok, %d reads, %d bytes verified\n", reads, total)
	return 0
}

// TestHostileLoad has 16 processes (this test binary re-run as reader
// children: the mount is served by the daemon, never read by the process
// serving it) read random ranges of stored and deflated members and their
// raw.bin at once, with a span cache small enough to be evicted all the
// time; every byte is verified. The daemon lives and stays under 256 MiB.
func TestHostileLoad(t *testing.T) {
	needFuse(t)
	archive, want := bigArchive(t, 4)
	sum := sha256File(t, archive)
	dir := mount(t, archive, "--cache-mb", "2")
	pid := theDaemon(t, dir)
	refs := t.TempDir()
	var pairs []string
	for p, w := range want {
		ref := filepath.Join(refs, strings.ReplaceAll(p, "/", "_"))
		if err := os.WriteFile(ref, w, 0o644); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, filepath.Join(dir, p)+"="+ref)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A hang guard only.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d;%d;%s", readerEnv, i+1, 120, strings.Join(pairs, ";")))
			out, err := cmd.CombinedOutput()
			line, _ := bufio.NewReader(bytes.NewReader(out)).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "reader: ok") {
				t.Errorf("reader %d: %v: %s", i, err, out)
			}
		}()
	}
	wg.Wait()
	checkDaemon(t, pid)
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("unmount: exit %d: %s", r.code, r.stderr)
	}
	if sha256File(t, archive) != sum {
		t.Errorf("the archive changed")
	}
}

// TestHostileWritesRefused tries the writing operations the EROFS test
// does not (link, mknod, mkfifo, chown, utimes, open with O_TRUNC,
// removexattr, rename of a folder) on an archive whose members ask for a
// symlink, setuid, exec and device modes: all are refused with EROFS, and
// the member that asks to be executable cannot be run.
func TestHostileWritesRefused(t *testing.T) {
	var modes hostile.Case
	for _, c := range hostile.Cases() {
		if c.Name == "modes" {
			modes = c
		}
	}
	archive := filepath.Join(t.TempDir(), "modes.npz")
	if err := os.WriteFile(archive, modes.Archive, 0o444); err != nil {
		t.Fatal(err)
	}
	sum := sha256File(t, archive)
	dir := mount(t, archive)
	p := func(s string) string { return filepath.Join(dir, s) }
	checks := map[string]error{
		"link":        os.Link(p("link"), p("link2")),
		"mknod":       syscall.Mknod(p("node"), syscall.S_IFCHR|0o666, 0x0101),
		"mkfifo":      syscall.Mkfifo(p("fifo2"), 0o666),
		"chown":       os.Chown(p("setuid.npy"), 1, 1),
		"utimes":      os.Chtimes(p("exec.sh"), time.Now(), time.Now()),
		"removexattr": syscall.Removexattr(p("s.npy"), "user.x"),
		"rename dir":  os.Rename(p("s"), p("t")),
	}
	_, checks["open O_TRUNC"] = os.OpenFile(p("s.npy"), os.O_RDONLY|os.O_TRUNC, 0)
	for op, err := range checks {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", op, err)
		}
	}
	if err := exec.Command(p("exec.sh")).Run(); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("running exec.sh: %v, want permission denied", err)
	}
	if fi, err := os.Lstat(p("link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link: %v, %v; want a regular file", fi.Mode(), err)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("unmount: %s", r.stderr)
	}
	if sha256File(t, archive) != sum {
		t.Errorf("the archive changed")
	}
}

// TestHostileMountOnAMountPoint: a folder another file system is mounted
// on is refused with one line, and that mount is left alone.
func TestHostileMountOnAMountPoint(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	archive, _ := testArchive(t)
	dir := t.TempDir()
	if err := syscall.Mount("none", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, 0)
	r := npzfs(t, "mount", archive, dir)
	oneLine(t, "mount on a tmpfs", r, 1)
	if !strings.Contains(r.stderr, "already a mount point") {
		t.Errorf("message %q", r.stderr)
	}
	if m, ok := mountOf(dir); !ok || m.FSType != "tmpfs" {
		t.Errorf("the tmpfs is gone: %v %v", m, ok)
	}
	if len(daemons(dir)) > 0 {
		t.Errorf("a daemon was left behind")
	}
}

// TestHostileSparseDirectory mounts an archive whose end record claims a
// central directory of 1 GiB (a hole in a sparse file after two real
// entries): it mounts, serves both members byte for byte, and the daemon
// stays under 256 MiB.
func TestHostileSparseDirectory(t *testing.T) {
	needFuse(t)
	archive := filepath.Join(t.TempDir(), "sparse.npz")
	good, err := hostile.WriteSparseDirectory(archive, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	dir := mount(t, archive)
	pid := theDaemon(t, dir)
	files := walkMount(t, dir)
	for p, want := range good {
		if w := files[p]; w.err != nil || !bytes.Equal(w.data, want) {
			t.Errorf("%s: %d bytes, %v", p, len(w.data), w.err)
		}
	}
	checkDaemon(t, pid)
}
