//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/npzfs/npzfs/internal/testserver"
)

// statusOf is one mount in npzfs status --json, the fields this test
// reads.
type statusOf struct {
	Mountpoint string
	PID        int
	Source     string
	Kind       string
	Members    int
	Answering  bool
	Daemon     string
	Log        string
	Served     struct{ Reads, Bytes int64 }
	SpanCache  struct{ Hits, Misses int64 } `json:"span_cache"`
	Archives   int                          `json:"archives_open"`
	Remote     *struct {
		Requests     int64
		BytesFetched int64 `json:"bytes_fetched"`
	}
	Indexes  *struct{ Loaded int64 } `json:"saved_indexes"`
	Indexing *struct {
		Members     int
		MembersDone int   `json:"members_done"`
		BytesDone   int64 `json:"bytes_done"`
		Done        bool
	} `json:"background_indexing"`
}

// status runs npzfs status --json on dir and returns its one mount.
func status(t *testing.T, dir string) statusOf {
	t.Helper()
	r := npzfs(t, "status", "--json", dir)
	var doc struct{ Mounts []statusOf }
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil || len(doc.Mounts) != 1 {
		t.Fatalf("npzfs status --json %s: exit %d, %v, stdout %q, stderr %q", dir, r.code, err, r.stdout, r.stderr)
	}
	return doc.Mounts[0]
}

// TestStatus: npzfs status sees a local, a remote and a folder mount,
// its counters move as reads happen, and mount --index's progress
// advances to done; a folder that is not a mount of this user is said
// to be so.
func TestStatus(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // this test's daemons alone
	archive, files := bigArchive(t, 8)

	dir := mount(t, archive, "--index", "--index-dir", t.TempDir())
	st := status(t, dir)
	if !st.Answering || st.Mountpoint != dir || st.Source != archive || st.Kind != "archive" || st.Members != 2 || st.PID == 0 || st.Log == "" || st.Indexing == nil {
		t.Fatalf("status of a fresh mount: %+v", st)
	}
	sameFiles(t, dir, map[string][]byte{"deflated/raw.bin": files["deflated/raw.bin"]})
	after := status(t, dir)
	if after.Served.Bytes < int64(len(files["deflated/raw.bin"])) || after.Served.Reads == 0 || after.SpanCache.Hits+after.SpanCache.Misses == 0 {
		t.Errorf("after reading the deflated member: %+v", after)
	}
	eventually(t, "background indexing is done", func() bool {
		ix := status(t, dir).Indexing
		return ix != nil && ix.Done && ix.MembersDone == ix.Members && ix.BytesDone > 0
	})
	if r := npzfs(t, "status"); r.code != 0 || !strings.Contains(r.stdout, dir+": "+archive+" (archive)") {
		t.Errorf("npzfs status: exit %d, %q", r.code, r.stdout)
	}
	clear(t, dir)
	if r := npzfs(t, "status", dir); r.code != 1 || !strings.Contains(r.stderr, "is not an npzfs mount of yours") {
		t.Errorf("status of an unmounted folder: exit %d, %q", r.code, r.stderr)
	}

	// Remote: requests and bytes fetched move.
	www := t.TempDir()
	b, _ := os.ReadFile(archive)
	os.WriteFile(filepath.Join(www, "big.npz"), b, 0o644)
	ng := testserver.StartNginx(t, www)
	rdir := mount(t, ng.URL+"/big.npz", "--no-index")
	before := status(t, rdir)
	sameFiles(t, rdir, map[string][]byte{"stored/raw.bin": files["stored/raw.bin"]})
	now := status(t, rdir)
	if before.Remote == nil || now.Remote.Requests <= before.Remote.Requests || now.Remote.BytesFetched <= before.Remote.BytesFetched {
		t.Errorf("remote counters: before %+v, after %+v", before.Remote, now.Remote)
	}
	clear(t, rdir)

	// A folder: an archive opens when read.
	folder := t.TempDir()
	os.WriteFile(filepath.Join(folder, "a.npz"), b, 0o644)
	os.WriteFile(filepath.Join(folder, "b.npz"), b, 0o644)
	fdir := mount(t, folder, "--no-index")
	if st := status(t, fdir); st.Kind != "folder" || st.Archives != 0 {
		t.Errorf("a fresh folder mount: %+v", st)
	}
	// A folder's document counts its open archives, even none, and has
	// no members of its own.
	if r := npzfs(t, "status", "--json", fdir); !strings.Contains(r.stdout, `"archives_open": 0,`) || strings.Contains(r.stdout, `"members`) {
		t.Errorf("npzfs status --json of a folder mount:\n%s", r.stdout)
	}
	sameFiles(t, fdir, map[string][]byte{"a.npz/stored/raw.bin": files["stored/raw.bin"]})
	if st := status(t, fdir); st.Archives != 1 {
		t.Errorf("after reading one archive of the folder: %+v", st)
	}
	clear(t, fdir)
}

// TestStatusOfASilentDaemon: a mount whose daemon is stopped is named
// with its daemon's pid, and npzfs status does not wait on it; once the
// daemon is killed, the mount is said to be dead, and npzfs unmount
// removes it.
func TestStatusOfASilentDaemon(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	archive, _ := bigArchive(t, 1)
	dir := mount(t, archive)
	pid := status(t, dir).PID
	if pid == 0 {
		t.Fatal("no pid")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // before the unmount

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the daemon shows as stopped", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := strings.LastIndexByte(string(b), ')')
		return i > 0 && i+2 < len(b) && b[i+2] == 'T'
	})
	if st := status(t, dir); st.Answering || st.Daemon != "stopped" || st.PID != pid || st.Source != archive {
		t.Errorf("a stopped daemon: %+v", st)
	}
	want := dir + ": " + archive + ": its daemon (pid " + strconv.Itoa(pid) + ") is stopped"
	if r := npzfs(t, "status", dir); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("npzfs status: exit %d, %q; want it to start %q", r.code, r.stdout, want)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if st := status(t, dir); !st.Answering || st.PID != pid {
		t.Errorf("the daemon continued: %+v", st)
	}

	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid) {
		t.Fatalf("daemon %d still running after SIGKILL", pid)
	}
	if st := status(t, dir); st.Answering || st.Daemon != "exited" || st.Source != archive {
		t.Errorf("a killed daemon: %+v", st)
	}
	want = dir + ": " + archive + ": its daemon has exited, and every access to the mount fails; npzfs unmount " + dir + " removes it\n"
	if r := npzfs(t, "status", dir); r.code != 0 || r.stdout != want {
		t.Errorf("npzfs status: exit %d, %q; want %q", r.code, r.stdout, want)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 || isMounted(dir) {
		t.Errorf("npzfs unmount of a dead mount: exit %d, %q; mounted: %v", r.code, r.stderr, isMounted(dir))
	}
}
