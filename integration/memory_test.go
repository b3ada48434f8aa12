//go:build linux

package integration

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// period is the length of the block periodicArchive's data repeats.
const period = 20 << 10

// periodicArchive writes an archive of one deflated uint8 array a.npy
// of size bytes (header included): a random block of period bytes,
// repeated, which it returns. Every checkpoint's window is then period
// bytes of noise that do not pack, so its index is as large as indexes
// get (about period bytes every 512 KiB). The stream is made as zlib would make it, in
// dynamic blocks, without deflating all of it: the data after the first
// two periods is the same chunk over and over, and so is its stream, a
// chunk deflated with the 32 KiB before it as its dictionary and flushed
// to a byte boundary.
func periodicArchive(t *testing.T, path string, size int64) []byte {
	t.Helper()
	block := make([]byte, period)
	rng := rand.New(rand.NewPCG(uint64(size), uint64(period)))
	for i := range block {
		block[i] = byte(rng.Uint32())
	}
	header := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }", size-128)
	header += strings.Repeat(" ", 128-10-1-len(header)) + "\n"
	head := append([]byte("\x93NUMPY\x01\x00\x76\x00"), header...)
	// data(off, n) is n bytes of the array from off.
	data := func(off int64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = block[(off+int64(i))%period]
		}
		return b
	}
	var comp bytes.Buffer
	deflated := func(dict, p []byte, last bool) []byte {
		comp.Reset()
		w, err := flate.NewWriterDict(&comp, 6, dict)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p)
		if last {
			w.Close()
		} else {
			w.Flush()
		}
		return bytes.Clone(comp.Bytes())
	}
	first := int64(2 * period)
	dict := data(first-32<<10, 32<<10) // what precedes every chunk
	const chunkLen = period * 400
	plain := data(first, chunkLen)
	chunk := deflated(dict, plain, false)
	n := (size - 128 - first) / chunkLen
	rest := data(first+n*chunkLen, int(size-128-first-n*chunkLen))
	start := deflated(nil, append(bytes.Clone(head), data(0, int(first))...), false)
	last := deflated(dict, rest, true)
	crc := crc32.Update(crc32.ChecksumIEEE(head), crc32.IEEETable, data(0, int(first)))
	for range n {
		crc = crc32.Update(crc, crc32.IEEETable, plain)
	}
	crc = crc32.Update(crc, crc32.IEEETable, rest)
	csize := int64(len(start)) + n*int64(len(chunk)) + int64(len(last))

	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(bw)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "a.npy", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(csize), UncompressedSize64: uint64(size)})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(start)
	for range n {
		w.Write(chunk)
	}
	w.Write(last)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return block
}

// TestPeriodicArchive: the archive the memory test serves is what it
// says, as archive/zip reads it (at a small size).
func TestPeriodicArchive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.npz")
	const size = 9<<20 + 12345
	block := periodicArchive(t, path, size)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc) // checks the CRC-32 and the size
	if err != nil || len(b) != size {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	for i, c := range b[128:] {
		if c != block[i%period] {
			t.Fatalf("byte %d of the data differs", i)
		}
	}
}

// testCgroup is a memory cgroup a test made (memoryCgroup).
type testCgroup struct {
	dir    string
	v2     bool
	events string // the file whose oom_kill line counts OOM kills
}

// memoryCgroup makes a memory cgroup limited to limit bytes (cgroup v2
// or v1, whichever the machine has). It is removed when the test ends,
// after its processes (the test's mounts are cleared first).
func memoryCgroup(t *testing.T, limit int64) *testCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		if requireFuse() {
			t.Fatal("a memory cgroup needs root (NPZFS_REQUIRE_FUSE=1)")
		}
		t.Skip("a memory cgroup needs root")
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	var dir string
	cg := &testCgroup{}
	for _, m := range mountinfo.Read() {
		if m.FSType == "cgroup2" {
			ctl, _ := os.ReadFile(filepath.Join(m.Dir, "cgroup.controllers"))
			if slices.Contains(strings.Fields(string(ctl)), "memory") {
				// Under the top, whose children processes may join.
				os.WriteFile(filepath.Join(m.Dir, "cgroup.subtree_control"), []byte("+memory"), 0)
				dir, cg.v2, cg.events = m.Dir, true, "memory.events"
				break
			}
		}
		if m.FSType == "cgroup" && hasWord(m.Super, "memory") {
			// Under the process's own cgroup of the hierarchy.
			dir, cg.events = m.Dir, "memory.oom_control"
			for _, line := range strings.Split(string(self), "\n") {
				if f := strings.SplitN(line, ":", 3); len(f) == 3 && hasWord(f[1], "memory") && m.Root == "/" {
					dir = filepath.Join(m.Dir, f[2])
				}
			}
			break
		}
	}
	if dir == "" {
		if requireFuse() {
			t.Fatal("no memory cgroup controller (NPZFS_REQUIRE_FUSE=1)")
		}
		t.Skip("no memory cgroup controller")
	}
	cg.dir = filepath.Join(dir, fmt.Sprintf("npzfs-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")))
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatalf("making a cgroup: %v", err)
	}
	t.Cleanup(func() {
		b, _ := os.ReadFile(cg.procs())
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			t.Errorf("process %d still in the test's cgroup; killing it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid)
		}
		if err := os.Remove(cg.dir); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	limitFile := "memory.limit_in_bytes"
	if cg.v2 {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		t.Fatalf("limiting the cgroup: %v", err)
	}
	// No swap to escape to, where the machine has some.
	os.WriteFile(filepath.Join(cg.dir, "memory.swap.max"), []byte("0"), 0)
	os.WriteFile(filepath.Join(cg.dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0)
	return cg
}

// procs is the file a process joins the cgroup through.
func (cg *testCgroup) procs() string { return filepath.Join(cg.dir, "cgroup.procs") }

// via is what mountVia runs npzfs mount through for the daemon to be
// in the cgroup from its start.
func (cg *testCgroup) via() []string {
	return []string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procs()}
}

// join moves the process pid into the cgroup.
func (cg *testCgroup) join(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(cg.procs(), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("moving %d into the test's cgroup: %v", pid, err)
	}
}

// ooms counts the OOM kills in the cgroup.
func (cg *testCgroup) ooms() int {
	b, _ := os.ReadFile(filepath.Join(cg.dir, cg.events))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// check checks that no process of the cgroup, of limit bytes, was
// OOM-killed and that the daemon pid still runs, and logs its peak
// resident memory and the cgroup's peak.
func (cg *testCgroup) check(t *testing.T, pid int, limit int64) {
	t.Helper()
	if n := cg.ooms(); n != 0 {
		t.Errorf("%d processes OOM-killed in the daemon's cgroup", n)
	}
	if !processAlive(pid) {
		t.Fatalf("daemon %d died", pid)
	}
	t.Logf("daemon peak resident memory %d MiB, the cgroup's peak %d MiB, in a cgroup of %d MiB", vmHWM(t, pid)>>20, cg.peak()>>20, limit>>20)
}

// peak is the most memory charged to the cgroup (its processes' and the
// page cache of what they read), in bytes, or 0 where the kernel does
// not say (memory.peak came in Linux 5.19).
func (cg *testCgroup) peak() int64 {
	name := "memory.max_usage_in_bytes"
	if cg.v2 {
		name = "memory.peak"
	}
	b, _ := os.ReadFile(filepath.Join(cg.dir, name))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// hasWord reports whether the comma-separated list s holds w.
func hasWord(s, w string) bool {
	for _, x := range strings.Split(s, ",") {
		if x == w {
			return true
		}
	}
	return false
}

// periodicInCgroup makes a memory cgroup of limit bytes, a
// periodicArchive of 4 GiB and its block, and names a log file, for a
// test of a daemon in the cgroup reading the archive.
func periodicInCgroup(t *testing.T, limit int64) (cg *testCgroup, archive string, block []byte, logFile string) {
	t.Helper()
	needFuse(t)
	cg = memoryCgroup(t, limit)
	archive = filepath.Join(t.TempDir(), "periodic.npz")
	block = periodicArchive(t, archive, 4<<30)
	return cg, archive, block, filepath.Join(t.TempDir(), "npzfs.log")
}

// TestMemoryTargetInCgroup: a 4 GiB deflated member of a random 20 KiB
// block repeated (whose index is as large as indexes get) read by 8
// readers at once, each from deeper in it, by a daemon in a cgroup of
// 256 MiB with the default flags: the daemon takes its memory target
// from the cgroup's limit and keeps to it, so it is never OOM-killed, and
// every byte read is right.
func TestMemoryTargetInCgroup(t *testing.T) {
	const limit = 256 << 20
	cg, archive, block, logFile := periodicInCgroup(t, limit)
	mnt := mountVia(t, cg.via(), archive, "--log", logFile)
	pid := theDaemon(t, mnt)

	readPeriodic(t, mnt, block)
	cg.check(t, pid, limit)
	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "memory target 224 MiB (7/8 of the cgroup's limit of 256 MiB)") {
		t.Errorf("the log does not give the target from the cgroup:\n%s", log)
	}
}

// TestMemoryTargetFollowsTheCgroup: a daemon started with the default
// flags outside any limit, then moved into a memory cgroup of 256 MiB,
// follows the cgroup's limit: it logs the target it takes from it and
// keeps to it, its caches shrunk, so that 8 readers of a 4 GiB deflated
// member (as TestMemoryTargetInCgroup's) get every byte right and it is
// never OOM-killed.
func TestMemoryTargetFollowsTheCgroup(t *testing.T) {
	const limit = 256 << 20
	cg, archive, block, logFile := periodicInCgroup(t, limit)
	// An index folder of its own: no index saved by another test.
	mnt := mountVia(t, []string{"env", "XDG_CACHE_HOME=" + t.TempDir()}, archive, "--log", logFile)
	pid := theDaemon(t, mnt)
	cg.join(t, pid)
	const followed = "the cgroup's memory limit changed: memory target 224 MiB (7/8 of the cgroup's limit of 256 MiB)"
	eventually(t, "the daemon logs the cgroup's limit", func() bool {
		log, _ := os.ReadFile(logFile)
		return strings.Contains(string(log), followed)
	})
	readPeriodic(t, mnt, block)
	cg.check(t, pid, limit)
}

// readPeriodic reads 256 MiB of a/raw.bin under mnt, a mount of a
// periodicArchive made of block, with 8 readers at once, each from 512
// MiB deeper than the one before (the deepest starts first: its first
// read indexes most of the member), and checks every byte.
func readPeriodic(t *testing.T, mnt string, block []byte) {
	t.Helper()
	twice := append(bytes.Clone(block), block...) // the data from any offset, for a period
	const readers, each = 8, 256 << 20
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			f, err := os.Open(filepath.Join(mnt, "a", "raw.bin"))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			off := int64(readers-1-i) * 512 << 20
			buf := make([]byte, 1<<20)
			for done := 0; done < each; done += len(buf) {
				at := off + int64(done)
				if _, err := f.ReadAt(buf, at); err != nil {
					t.Errorf("reader %d at %d: %v", i, at, err)
					return
				}
				for j := 0; j < len(buf); j += period {
					k := min(len(buf), j+period)
					p := (at + int64(j)) % period
					if !bytes.Equal(buf[j:k], twice[p:p+int64(k-j)]) {
						t.Errorf("reader %d: wrong bytes at %d", i, at+int64(j))
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// listingServer serves a folder /d/ of n copies of the archive data on
// 127.0.0.1, listed as nginx's JSON autoindex lists (shard-0000000.npz
// ...), the listing written as it is sent (about 95 bytes an entry),
// never held whole.
func listingServer(t *testing.T, n int, data []byte) string {
	t.Helper()
	mod := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/d/" {
			http.ServeContent(w, r, "x.npz", mod, bytes.NewReader(data))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 1<<20)
		defer bw.Flush()
		bw.WriteString("[\n")
		for i := range n {
			sep := ",\n"
			if i == n-1 {
				sep = "\n]\n"
			}
			fmt.Fprintf(bw, `{ "name":"shard-%07d.npz", "type":"file", "mtime":"%s", "size":%d }%s`, i, mod.Format(http.TimeFormat), len(data), sep)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/d/"
}

// TestMillionEntryListingInCgroup: an HTTP folder of 1,000,000 archives
// (a JSON listing of 95 MB) mounts with the default flags in a memory
// cgroup of 256 MiB: the listing is read as it comes and kept compactly,
// within the memory for remote data; an archive of it then reads right.
func TestMillionEntryListingInCgroup(t *testing.T) {
	needFuse(t)
	const limit = 256 << 20
	cg := memoryCgroup(t, limit)
	archive, arrays := testArchive(t)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	url := listingServer(t, 1000000, data)
	logFile := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mountVia(t, cg.via(), url, "--log", logFile)
	pid := theDaemon(t, mnt)
	got, err := os.ReadFile(filepath.Join(mnt, "shard-0765432.npz", arrays[0].name))
	if want := append(bytes.Clone(arrays[0].header), arrays[0].raw...); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s of an archive of the folder: %d bytes, %v", arrays[0].name, len(got), err)
	}
	cg.check(t, pid, limit)
}
