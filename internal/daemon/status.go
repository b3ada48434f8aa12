//go:build linux

package daemon

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/dataset"
	npzfs "github.com/npzfs/npzfs/fs"
	"github.com/npzfs/npzfs/internal/mountinfo"
	"github.com/npzfs/npzfs/npz"
	"golang.org/x/sys/unix"
)

// Status is what a daemon says of its mount: who it is, then what
// its dataset has done. It is what npzfs status --json prints, documented
// in the README and kept stable (cmd/npzfs's TestStatusJSONGolden).
type Status struct {
	Mountpoint string    `json:"mountpoint"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Uptime     float64   `json:"uptime_seconds"`
	Options    []string  `json:"options"`
	Log        string    `json:"log"`
	// Owner is the process the mount lives no longer than (--owner), or
	// 0.
	Owner int `json:"owner,omitempty"`
	// Served counts the reads answered with data, the small files put in
	// the kernel's page cache before their reads (pushes), and the bytes
	// of both; and the FUSE requests the kernel sent, by kind
	// (npzfs.Stats.Requests).
	Served struct {
		Reads    int64            `json:"reads"`
		Pushes   int64            `json:"pushes"`
		Bytes    int64            `json:"bytes"`
		Requests map[string]int64 `json:"requests,omitempty"`
	} `json:"served"`
	Dataset
	// Answering is false for a mount of this user's whose daemon did not
	// answer: only its mount point and source are known, its daemon's pid
	// where one was found, and Daemon says what became of it.
	Answering bool   `json:"answering"`
	Daemon    string `json:"daemon,omitempty"` // DaemonExited, ...
	// UID is the user a daemon of another user's runs as
	// (DaemonOtherUser); StatusFolder the status folder of a daemon of
	// this user's that keeps its status elsewhere (DaemonElsewhere).
	UID          int    `json:"uid,omitempty"`
	StatusFolder string `json:"status_folder,omitempty"`
	// Detached is set for a mount gone from the mount table (a lazy
	// unmount) whose daemon still serves the files open in it.
	Detached bool `json:"detached,omitempty"`
}

// Dataset is what a mount's dataset has done since it was opened
// (dataset.Stats, mapped to JSON here), how many of a folder's archives
// are open, and how far background indexing has got.
type Dataset struct {
	Source string `json:"source"`
	Kind   string `json:"kind"` // "archive", "npy" or "folder"
	// Members and Failing count an archive's (or a .npy's) members, and
	// those not served or whose reads fail; ArchivesOpen counts a
	// folder's archives open now, and ArchivesIdle those of them with
	// no file open and no request under way (--max-open bounds these).
	// Each is nil for the other kind.
	Members      *int `json:"members,omitempty"`
	Failing      *int `json:"members_failing,omitempty"`
	ArchivesOpen *int `json:"archives_open,omitempty"`
	ArchivesIdle *int `json:"archives_idle,omitempty"`
	// SpanCache is the cache of inflated spans of deflated members.
	SpanCache SpanCache `json:"span_cache"`
	// Indexes count the saved indexes loaded, refused and saved, when
	// there is an index folder.
	Indexes *SavedIndexes `json:"saved_indexes,omitempty"`
	// Remote is the remote sources', for a remote dataset.
	Remote *Remote `json:"remote,omitempty"`
	// Indexing is mount --index's progress, once it has started.
	Indexing *Indexing `json:"background_indexing,omitempty"`
	// Verification is what the mount verified (npz.VerifyStats), and
	// which members fail.
	Verification *Verification `json:"verification,omitempty"`
}

// Verification is what a mount's archives verified, and their members
// whose reads fail because of what they hold (npz.VerifyStats).
type Verification struct {
	Mode            string          `json:"mode"` // auto, strict or lazy
	Passes          int64           `json:"verified_by_pass"`
	Saved           int64           `json:"verified_by_saved_index"`
	Unverified      int64           `json:"served_unverified"`
	UnverifiedBytes int64           `json:"served_unverified_bytes"`
	FailingCount    int64           `json:"failing"`
	Failing         []FailingMember `json:"failing_members,omitempty"`
}

// FailingMember is a member whose reads fail (npz.MemberFailure).
type FailingMember struct {
	Archive string `json:"archive,omitempty"` // its archive's path in a folder
	Name    string `json:"member"`
	Reason  string `json:"reason"`
	Reads   int64  `json:"reads_failed"`
}

// verificationOf is vs as Status gives it, for mode.
func verificationOf(mode npz.VerifyMode, vs npz.VerifyStats) *Verification {
	v := &Verification{Mode: mode.String(), Passes: vs.Passes, Saved: vs.Saved,
		Unverified: vs.Unverified, UnverifiedBytes: vs.UnverifiedBytes, FailingCount: vs.FailingCount}
	for _, f := range vs.Failing {
		v.Failing = append(v.Failing, FailingMember(f))
	}
	return v
}

// SpanCache are the span cache's lookups and size (dataset.CacheStats).
type SpanCache struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	Bytes  int64 `json:"bytes"`
	Budget int64 `json:"budget"`
}

// SavedIndexes count what was done with the index folder
// (dataset.IndexesStats).
type SavedIndexes struct {
	Folder  string `json:"folder"`
	Loaded  int64  `json:"loaded"`
	Refused int64  `json:"refused"`
	Saved   int64  `json:"saved"`
}

// Remote count the remote sources' requests and blocks
// (dataset.RemoteStats).
type Remote struct {
	Requests       int64 `json:"requests"`
	Retries        int64 `json:"retries"`
	BytesFetched   int64 `json:"bytes_fetched"`
	BlockHits      int64 `json:"block_hits"`
	BlockMisses    int64 `json:"block_misses"`
	DiskHits       int64 `json:"disk_cache_hits"`
	MemoryBytes    int64 `json:"memory_cache_bytes"`
	DiskCacheBytes int64 `json:"disk_cache_bytes"`
	Listings       int64 `json:"listings,omitempty"`
}

// Indexing is background indexing's progress (indexer.BackgroundProgress).
type Indexing struct {
	Members     int     `json:"members"`
	MembersDone int     `json:"members_done"`
	Failed      int     `json:"members_failed"`
	Bytes       int64   `json:"bytes"`
	BytesDone   int64   `json:"bytes_done"`
	Rate        float64 `json:"bytes_per_second"`
	SecondsLeft float64 `json:"seconds_left"`
	Done        bool    `json:"done"`
}

// datasetStatus is the dataset's stats as Status gives them. The JSON
// types have the stats' fields, tagged: each converts from its own.
func datasetStatus(st dataset.Stats) Dataset {
	return Dataset{
		Source: st.Source, Kind: st.Kind, Members: st.Members, Failing: st.Failing,
		SpanCache: SpanCache(st.SpanCache), Indexes: (*SavedIndexes)(st.Indexes),
		Remote: (*Remote)(st.Remote),
	}
}

// sameMountNamespace reports whether process pid sees the mount table
// this process does, so that a mount missing from it is gone.
func sameMountNamespace(pid int) bool {
	theirs, err1 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	ours, err2 := os.Readlink("/proc/self/ns/mnt")
	return err1 == nil && err2 == nil && theirs == ours
}

// MarshalJSON gives a mount whose daemon did not answer as what is known
// of it alone (mountpoint, source, pid where one was found, daemon, and
// where it keeps its status when not here), not as zeros.
func (st Status) MarshalJSON() ([]byte, error) {
	var v any = struct {
		Mountpoint   string `json:"mountpoint"`
		Source       string `json:"source"`
		PID          int    `json:"pid,omitempty"`
		Answering    bool   `json:"answering"`
		Daemon       string `json:"daemon"`
		UID          int    `json:"uid,omitempty"`
		StatusFolder string `json:"status_folder,omitempty"`
	}{st.Mountpoint, st.Source, st.PID, false, st.Daemon, st.UID, st.StatusFolder}
	if st.Answering {
		type plain Status // without this method
		v = plain(st)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// What became of a daemon that does not answer (Status.Daemon).
const (
	DaemonExited  = "exited"  // no process serves the mount: it is dead
	DaemonStopped = "stopped" // stopped by a signal or a tracer
	DaemonSilent  = "silent"  // running, but with no status socket (an older npzfs)
	DaemonUnknown = "unknown" // none found, and the mount did not say it is dead
	// DaemonOtherUser runs as another user, whose status folder holds
	// its socket.
	DaemonOtherUser = "other-user"
	// DaemonElsewhere is this user's, but keeps its status in another
	// folder (started with another XDG_RUNTIME_DIR or TMPDIR), where it
	// could not be asked.
	DaemonElsewhere = "elsewhere"
)

// statusDir is the folder of this user's daemons' sockets:
// $XDG_RUNTIME_DIR/npzfs, else /tmp/npzfs-UID. With create it is made
// (mode 0700) if missing. A folder that another user owns or others may
// enter is refused: a socket there could be someone else's.
func statusDir(create bool) (string, error) {
	dir := statusDirFor(os.Getenv, os.Getuid())
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return dir, checkPrivate(dir)
}

// statusDirFor is the status folder of a process of the user uid whose
// environment getenv reads: $XDG_RUNTIME_DIR/npzfs, else
// $TMPDIR/npzfs-UID (TMPDIR by default /tmp, as os.TempDir).
func statusDirFor(getenv func(string) string, uid int) string {
	if x := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "npzfs")
	}
	return filepath.Join(cmp.Or(getenv("TMPDIR"), "/tmp"), "npzfs-"+strconv.Itoa(uid))
}

// checkPrivate refuses a status folder that another user owns or others
// may enter.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not a private folder of yours (it must be owned by you, mode 0700)", dir)
	}
	return nil
}

// serveStatus answers status requests on a socket of this user's status
// folder until the returned stop is called: each connection gets the
// JSON of what status says then, and is closed.
func serveStatus(status func() Status) (stop func(), err error) {
	dir, err := statusDir(true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	os.Remove(path) // a dead daemon's with this pid
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	os.Chmod(path, 0o600)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			json.NewEncoder(c).Encode(status())
			c.Close()
		}
	}()
	return func() {
		l.Close() // removes the socket file
		<-done
	}, nil
}

// Statuses are the statuses of this user's npzfs mounts, by mount point:
// each daemon's own answer, and what can be told of the mounts in the
// mount table whose daemon does not answer (Answering false).
func Statuses() []Status {
	live := myMounts()
	var list []Status
	for _, st := range askDaemons() {
		// A daemon serving a FUSE device it was handed names the
		// folder it is mounted on where it can find it, else
		// /dev/fd/N (a mount in another namespace): listed either way.
		_, inTable := live[st.Mountpoint]
		st.Detached = !inTable && !strings.HasPrefix(st.Mountpoint, "/dev/fd/") && sameMountNamespace(st.PID)
		list = append(list, st)
		delete(live, st.Mountpoint)
	}
	for _, m := range live {
		list = append(list, silentStatus(m))
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Mountpoint < list[j].Mountpoint })
	return list
}

// askDaemons asks every daemon of this user for its status; sockets no
// daemon answers on any more are removed.
func askDaemons() []Status {
	dir, err := statusDir(false)
	if err != nil {
		return nil
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	var out []Status
	for _, s := range socks {
		// A stopped daemon would take a connection and never answer
		// it; silentStatus tells of its mount.
		if pid, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(s), ".sock")); err == nil && isStopped(pid) {
			continue
		}
		if st, ok := ask(s); ok {
			out = append(out, st)
		}
	}
	return out
}

// ask asks the daemon on the socket sock for its status; a socket no
// daemon answers on any more is removed.
func ask(sock string) (Status, bool) {
	var st Status
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
			os.Remove(sock) // its daemon is gone
		}
		return st, false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if json.NewDecoder(c).Decode(&st) != nil {
		return st, false
	}
	st.Answering = true
	return st, true
}

// myMounts are the npzfs mounts of this user in the mount table, by mount
// point.
func myMounts() map[string]mountinfo.Entry {
	out := map[string]mountinfo.Entry{}
	uid := strconv.Itoa(os.Getuid())
	for _, m := range mountinfo.Read() {
		if u, _ := mountinfo.Option(m.Super, "user_id"); m.FSType == "fuse."+npzfs.FSType && u == uid {
			out[m.Dir] = m
		}
	}
	return out
}

// silentStatus is what can be told of mount m, whose daemon did not
// answer: the process serving its FUSE connection and its state, or,
// where there is none, whether the kernel says the mount is dead.
func silentStatus(m mountinfo.Entry) Status {
	st := Status{Mountpoint: m.Dir, Dataset: Dataset{Source: m.Source}, Daemon: DaemonUnknown}
	_, conn, _ := strings.Cut(m.Dev, ":")
	if pids := servers(conn); len(pids) > 0 {
		return silentDaemon(st, pids[0])
	}
	// A mount whose daemon is gone answers at once with ENOTCONN. One
	// whose daemon the scan could not see (a kernel that does not name
	// connections in fdinfo) might not answer at all: the look is given
	// up after a moment, left to finish in the background.
	done := make(chan error, 1)
	go func() {
		var sb unix.Statfs_t
		done <- unix.Statfs(m.Dir, &sb)
	}()
	select {
	case err := <-done:
		if err == unix.ENOTCONN {
			st.Daemon = DaemonExited
		}
	case <-time.After(time.Second):
	}
	return st
}
