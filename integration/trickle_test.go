//go:build linux

package integration

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/testserver"
)

// guard is how long a command given up on (a read interrupted, a mount
// told to stop) may take to end before the test calls it hung: a bound
// on a hang, far above what ending takes, not a timing.
const guard = 30 * time.Second

// waitFor waits for cmd to exit, at most guard; it reports whether it
// did (and kills it if not).
func waitFor(t *testing.T, cmd *exec.Cmd) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(guard):
		cmd.Process.Kill()
		<-done
		return false
	}
}

// untilRequested waits until the proxy has had more than n requests.
func untilRequested(t *testing.T, p *faultproxy.Proxy, n int64) {
	t.Helper()
	eventually(t, "a request reaches the server", func() bool { return p.Requests() > n })
}

// trickles answers every request a few bytes a second.
func trickles(int64, *http.Request) faultproxy.Fault { return faultproxy.Trickle }

// TestTrickle: a server that sends a few bytes a second (never silent,
// never done) holds nothing for good. A read of a mounted archive fails
// with EIO once --remote-timeout has passed; a reader killed while it
// waits ends at once (the daemon answers the kernel's interrupt), however
// long the timeout; a request that gives too few bytes in --stall-timeout
// is tried again, so once the server mends the mount reads on; npzfs
// mount, ls and inspect of such a server end at SIGINT, leaving nothing
// mounted.
func TestTrickle(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	want, err := os.ReadFile(filepath.Join(mount(t, archive), "stored", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ng := testserver.StartNginx(t, www)
	p, err := faultproxy.Start(ng.URL, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url := p.URL + "/remote.npz"

	short := mount(t, url, "--remote-timeout", "2s")
	p.SetFaults(trickles)
	if _, err := os.ReadFile(filepath.Join(short, "stored", "raw.bin")); !failsForNow(err) {
		t.Errorf("a read of a trickling archive: %v, want EIO after --remote-timeout", err)
	}

	// Killed while it waits: ended by the interrupt, not the timeout.
	p.SetFaults(nil)
	long := mount(t, url, "--remote-timeout", "1h", "--stall-timeout", "2s")
	p.SetFaults(trickles)
	n := p.Requests()
	cat := exec.Command("cat", filepath.Join(long, "noise.npy"))
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	untilRequested(t, p, n)
	cat.Process.Signal(syscall.SIGKILL)
	if !waitFor(t, cat) {
		t.Error("a reader killed while its read waited on a trickling server did not end")
	}

	// Once the server mends, the same mounts read the same bytes.
	p.SetFaults(nil)
	for _, dir := range []string{short, long} {
		if got, err := os.ReadFile(filepath.Join(dir, "stored", "raw.bin")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/stored/raw.bin after the server mends: %d bytes, %v", dir, len(got), err)
		}
	}

	// Commands that open a trickling archive end at SIGINT.
	p.SetFaults(trickles)
	dir := t.TempDir()
	clearLater(t, dir)
	for _, args := range [][]string{{"mount", url, dir}, {"ls", url}, {"inspect", url}} {
		n := p.Requests()
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		untilRequested(t, p, n)
		cmd.Process.Signal(syscall.SIGINT)
		if !waitFor(t, cmd) {
			t.Errorf("npzfs %s of a trickling archive did not end at SIGINT", args[0])
			continue
		}
		msg := stderr.String()
		if cmd.ProcessState.ExitCode() != 1 || strings.Count(msg, "\n") > 2 || !strings.Contains(msg, "interrupted") {
			t.Errorf("npzfs %s given up: exit %d, %q", args[0], cmd.ProcessState.ExitCode(), msg)
		}
	}
	if isMounted(dir) || len(daemons(dir)) > 0 {
		t.Errorf("a mount given up left %s mounted or a daemon serving it", dir)
	}
}
