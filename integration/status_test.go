//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	Idle       int                          `json:"archives_idle"`
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

// statusWith runs npzfs status --json on dir with the environment
// variable XDG_RUNTIME_DIR set to runtime, and returns its one mount, its
// UID and status folder too, and what npzfs status prints for people.
func statusWith(t *testing.T, runtime, dir string) (st statusOf, uid int, folder, text string) {
	t.Helper()
	run1 := func(args ...string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
		return run(t, cmd)
	}
	r := run1("status", "--json", dir)
	var doc struct {
		Mounts []json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil || len(doc.Mounts) != 1 {
		t.Fatalf("npzfs status --json %s: exit %d, %v, stdout %q, stderr %q", dir, r.code, err, r.stdout, r.stderr)
	}
	var extra struct {
		UID    int
		Folder string `json:"status_folder"`
	}
	json.Unmarshal(doc.Mounts[0], &st)
	json.Unmarshal(doc.Mounts[0], &extra)
	return st, extra.UID, extra.Folder, run1("status", dir).stdout
}

// TestStatusOfADaemonElsewhere: a daemon of this user's started with
// another XDG_RUNTIME_DIR keeps its status socket there: npzfs status run
// with this one finds it there and shows its status; where that folder
// is not a private one of the user's, it is not asked, and status says
// where the daemon's status is instead of guessing at an older npzfs.
func TestStatusOfADaemonElsewhere(t *testing.T) {
	needFuse(t)
	theirs := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", theirs) // the daemon's
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	mine := t.TempDir()
	st, _, _, text := statusWith(t, mine, dir)
	if !st.Answering || st.PID == 0 || st.Source != archive || !strings.Contains(text, "), pid "+strconv.Itoa(st.PID)) {
		t.Errorf("a daemon started with another XDG_RUNTIME_DIR: %+v\n%s", st, text)
	}
	pid := st.PID

	folder := filepath.Join(theirs, "npzfs")
	if err := os.Chmod(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(folder, 0o700)
	st, _, got, text := statusWith(t, mine, dir)
	if st.Answering || st.Daemon != "elsewhere" || st.PID != pid || got != folder {
		t.Errorf("its folder not private: %+v, status_folder %q", st, got)
	}
	want := dir + ": " + archive + ": its daemon (pid " + strconv.Itoa(pid) + ") was started with another XDG_RUNTIME_DIR or TMPDIR: its status is in " + folder
	if !strings.HasPrefix(text, want) || strings.Contains(text, "before npzfs status") {
		t.Errorf("npzfs status says %q; want it to start %q", text, want)
	}
}

// TestStatusOfAnotherUsersDaemon: a mount of root's served by a daemon
// of another user's (a FUSE device handed to npzfs run as nobody) is
// said to be served by that user's daemon, whose status is that user's,
// not guessed to be an older npzfs.
func TestStatusOfAnotherUsersDaemon(t *testing.T) {
	needHanding(t)
	shared, _ := testArchive(t)
	// nobody's temporary folder, in the folder of the copies.
	base, prog, archive := handedCopies(t, shared, "otheruser")
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil || os.Chown(tmp, nobody, nobody) != nil {
		t.Fatalf("nobody's temporary folder: %v", err)
	}
	dir := t.TempDir()
	dev := handFUSE(t, archive, dir)
	cmd := exec.Command(prog, "mount", "--log", filepath.Join(tmp, "log"), archive, "/dev/fd/3")
	cmd.ExtraFiles = []*os.File{dev}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "TMPDIR=" + tmp}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("npzfs mount as nobody: %v: %s", err, stderr.String())
	}
	dev.Close()
	pids := processesOf(prog, archive)
	if len(pids) != 1 {
		t.Fatalf("daemons serving %s: %v", archive, pids)
	}
	defer func() {
		npzfs(t, "unmount", dir)
		if !waitGone(pids[0]) {
			t.Errorf("daemon %d still serving after its folder was unmounted", pids[0])
		}
	}()
	st, uid, _, text := statusWith(t, t.TempDir(), dir)
	if st.Answering || st.Daemon != "other-user" || st.PID != pids[0] || uid != nobody {
		t.Errorf("another user's daemon: %+v, uid %d", st, uid)
	}
	want := dir + ": " + archive + ": its daemon (pid " + strconv.Itoa(pids[0]) + ") runs as another user (uid " + strconv.Itoa(nobody) + "): its status is in that user's status folder"
	if !strings.HasPrefix(text, want) {
		t.Errorf("npzfs status says %q; want it to start %q", text, want)
	}
}
