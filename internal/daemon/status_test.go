//go:build linux

package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/dataset"
)

// TestStatusDirIsPrivate: the status folder is made mode 0700, and one
// that others may enter is refused.
func TestStatusDirIsPrivate(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir, err := statusDir(true)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", dir, fi.Mode(), err)
	}
	os.Chmod(dir, 0o755)
	if _, err := statusDir(false); err == nil || !strings.Contains(err.Error(), "not a private folder") {
		t.Errorf("a folder others may enter: %v", err)
	}
}

// TestStatusDirFor: a process's status folder follows its environment
// as statusDir follows this process's: $XDG_RUNTIME_DIR/npzfs when that
// is absolute, else $TMPDIR (or /tmp)/npzfs-UID; and the environment is
// read from a /proc/PID/environ text.
func TestStatusDirFor(t *testing.T) {
	for env, want := range map[string]string{
		"XDG_RUNTIME_DIR=/run/user/7\x00TMPDIR=/scratch\x00": "/run/user/7/npzfs",
		"XDG_RUNTIME_DIR=relative\x00TMPDIR=/scratch\x00":    "/scratch/npzfs-7",
		"HOME=/home/u\x00":             "/tmp/npzfs-7",
		"OTHER_XDG_RUNTIME_DIR=/x\x00": "/tmp/npzfs-7",
	} {
		getenv := func(name string) string { return environValue([]byte(env), name) }
		if got := statusDirFor(getenv, 7); got != want {
			t.Errorf("%q: %s, want %s", env, got, want)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir, err := statusDir(true)
	if err != nil || dir != statusDirFor(os.Getenv, os.Getuid()) {
		t.Errorf("statusDir %q, %v; statusDirFor this process %q", dir, err, statusDirFor(os.Getenv, os.Getuid()))
	}
}

// TestServeStatus: a daemon's socket answers with its status, and is gone
// once stopped.
func TestServeStatus(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	stop, err := serveStatus(func() Status { return Status{Mountpoint: "/x", PID: os.Getpid(), Answering: true} })
	if err != nil {
		t.Fatal(err)
	}
	got := askDaemons()
	if len(got) != 1 || got[0].Mountpoint != "/x" || !got[0].Answering {
		t.Errorf("askDaemons: %+v", got)
	}
	stop()
	if got := askDaemons(); len(got) != 0 {
		t.Errorf("after stop: %+v", got)
	}
}

// TestSilentStatusJSON: a mount whose daemon did not answer is given in
// --json by what is known of it alone, not with zeros for the rest.
func TestSilentStatusJSON(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		want string
	}{
		{Status{Mountpoint: "/mnt/a&b", PID: 77, Dataset: Dataset{Source: "/data/<a>.npz"}, Daemon: DaemonStopped},
			`{"mountpoint":"/mnt/a&b","source":"/data/<a>.npz","pid":77,"answering":false,"daemon":"stopped"}`},
		{Status{Mountpoint: "/mnt/x", Dataset: Dataset{Source: "/data/x.npz"}, Daemon: DaemonExited},
			`{"mountpoint":"/mnt/x","source":"/data/x.npz","answering":false,"daemon":"exited"}`},
		{Status{Mountpoint: "/mnt/o", PID: 9, Dataset: Dataset{Source: "/o.npz"}, Daemon: DaemonOtherUser, UID: 1001},
			`{"mountpoint":"/mnt/o","source":"/o.npz","pid":9,"answering":false,"daemon":"other-user","uid":1001}`},
		{Status{Mountpoint: "/mnt/e", PID: 8, Dataset: Dataset{Source: "/e.npz"}, Daemon: DaemonElsewhere, StatusFolder: "/run/user/1/npzfs"},
			`{"mountpoint":"/mnt/e","source":"/e.npz","pid":8,"answering":false,"daemon":"elsewhere","status_folder":"/run/user/1/npzfs"}`},
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tc.st); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(b.String()); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestDatasetStatus: every count of a dataset's stats is in its status.
func TestDatasetStatus(t *testing.T) {
	st := dataset.Stats{
		Source: "s3://b/a.npz", Kind: "archive", Members: ptr(3), Failing: ptr(1),
		SpanCache: dataset.CacheStats{Hits: 1, Misses: 2, Bytes: 3, Budget: 4},
		Indexes:   &dataset.IndexesStats{Folder: "/x", Loaded: 1, Refused: 2, Saved: 3},
		Remote: &dataset.RemoteStats{Requests: 1, Retries: 2, BytesFetched: 3, BlockHits: 4, BlockMisses: 5,
			DiskHits: 6, MemoryBytes: 7, DiskCacheBytes: 8, Listings: 9},
	}
	var zeros []string
	var walk func(v reflect.Value, name string)
	walk = func(v reflect.Value, name string) {
		switch {
		case v.Kind() == reflect.Pointer && !v.IsNil():
			walk(v.Elem(), name)
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), name+"."+v.Type().Field(i).Name)
			}
		case v.IsZero():
			zeros = append(zeros, name)
		}
	}
	walk(reflect.ValueOf(datasetStatus(st)), "Dataset")
	if want := []string{"Dataset.ArchivesOpen", "Dataset.ArchivesIdle", "Dataset.Indexing", "Dataset.Verification"}; !slices.Equal(zeros, want) {
		t.Errorf("fields left zero: %v, want %v (the tree's and the indexer's, not the dataset's)", zeros, want)
	}
}

func ptr[T any](v T) *T { return &v }
