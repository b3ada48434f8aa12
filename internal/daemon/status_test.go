//go:build linux

package daemon

import (
	"bytes"
	"encoding/json"
	"os"
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
		{Status{Mountpoint: "/mnt/a&b", PID: 77, Stats: dataset.Stats{Source: "/data/<a>.npz"}, Daemon: DaemonStopped},
			`{"mountpoint":"/mnt/a&b","source":"/data/<a>.npz","pid":77,"answering":false,"daemon":"stopped"}`},
		{Status{Mountpoint: "/mnt/x", Stats: dataset.Stats{Source: "/data/x.npz"}, Daemon: DaemonExited},
			`{"mountpoint":"/mnt/x","source":"/data/x.npz","answering":false,"daemon":"exited"}`},
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
