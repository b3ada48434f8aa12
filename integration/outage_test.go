//go:build linux

package integration

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/testserver"
)

// failsForNow reports an error that says the file could not be had now
// (EIO), as a failure that may pass must be: not absence.
func failsForNow(err error) bool { return errors.Is(err, syscall.EIO) }

// TestPrefixOutage: while the server behind a mounted S3 prefix answers
// every request with 503 SlowDown, no lookup says a shard is not there
// and no listing comes back short: each fails with EIO, and the log says
// why; nothing of the outage is kept, so once it ends every shard is
// found and every byte is right, without a remount.
func TestPrefixOutage(t *testing.T) {
	needFuse(t)
	src := shardFolder(t, 6)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "out")
	putFolder(t, s3, "out", "ds/", src)
	p, err := faultproxy.Start(s3.Endpoint, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := filepath.Join(t.TempDir(), "npzfs.log")
	// Short bounds, so that each request of the outage gives up soon.
	mnt := mount(t, "s3://out/ds/", "--endpoint", p.URL, "--remote-timeout", "2s", "--stall-timeout", "1s", "--log", log)

	p.SetFaults(func(int64, *http.Request) faultproxy.Fault { return faultproxy.SlowDown })
	// The top level was listed at mount (and is kept): its shards are
	// there, and what is in them cannot be had for now.
	if _, err := os.Stat(filepath.Join(mnt, "shard0000.npz")); err != nil {
		t.Errorf("a shard listed before the outage: %v", err)
	}
	if ents, err := os.ReadDir(filepath.Join(mnt, "shard0000.npz")); !failsForNow(err) {
		t.Errorf("listing a shard in the outage: %d entries, %v; want EIO", len(ents), err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "shard0002.npz", "x.npy")); !failsForNow(err) {
		t.Errorf("a member of a shard in the outage: %v; want EIO", err)
	}
	// A sub-prefix not listed yet: its listing fails, and so do the
	// lookups in it.
	if ents, err := os.ReadDir(filepath.Join(mnt, "part1")); !failsForNow(err) {
		t.Errorf("listing a sub-prefix in the outage: %d entries, %v; want EIO", len(ents), err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "part0", "shard0003.npz")); !failsForNow(err) {
		t.Errorf("a shard of a sub-prefix in the outage: %v; want EIO", err)
	}
	if p.Faults() == 0 {
		t.Fatal("no request reached the server in the outage")
	}

	p.SetFaults(nil)
	var diffs []string
	eventually(t, "every shard found and right after the outage", func() bool {
		var files int
		files, diffs = differences(src, mnt)
		return files == 6*2+1 && len(diffs) == 0
	})
	for _, d := range diffs {
		t.Error(d)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "answered EIO") && !strings.Contains(string(b), "EIO until it is opened") {
		t.Errorf("the log does not say why lookups failed:\n%s", b)
	}
	if strings.Contains(string(b), fs.ErrNotExist.Error()) {
		t.Errorf("the log calls a shard of the outage absent:\n%s", b)
	}
}
