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
	quiet(t, short, long)
	p.SetFaults(trickles)
	endAtSIGINT(t, p, "archive", url, "ls", "inspect")
}

// quiet unmounts the mounts dirs and waits for their daemons to end, so
// that the requests a proxy counts next are those of the commands under
// test alone.
func quiet(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		pids := daemons(dir)
		if r := npzfs(t, "unmount", dir); r.code != 0 {
			t.Fatalf("unmount %s: exit %d: %s", dir, r.code, r.stderr)
		}
		for _, pid := range pids {
			if !waitGone(pid) {
				t.Fatalf("the daemon of %s did not end", dir)
			}
		}
	}
}

// endAtSIGINT checks that npzfs mount of url, and each of the commands
// given (npzfs CMD url), end at SIGINT while they wait on the proxy p,
// in one line saying so, leaving nothing mounted; what says what url is.
func endAtSIGINT(t *testing.T, p *faultproxy.Proxy, what, url string, cmds ...string) {
	t.Helper()
	dir := t.TempDir()
	clearLater(t, dir)
	runs := [][]string{{"mount", url, dir}}
	for _, c := range cmds {
		runs = append(runs, []string{c, url})
	}
	for _, args := range runs {
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
			t.Errorf("npzfs %s of a trickling %s did not end at SIGINT", args[0], what)
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

// tricklesPath answers every request for a path ending in suffix a few
// bytes a second, and the others well.
func tricklesPath(suffix string) func(int64, *http.Request) faultproxy.Fault {
	return func(_ int64, r *http.Request) faultproxy.Fault {
		if strings.HasSuffix(r.URL.Path, suffix) {
			return faultproxy.Trickle
		}
		return faultproxy.None
	}
}

// killedWhileWaiting starts name with args, waits until the proxy has
// had a request more, kills it and reports whether it ended.
func killedWhileWaiting(t *testing.T, p *faultproxy.Proxy, name string, args ...string) bool {
	t.Helper()
	n := p.Requests()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	untilRequested(t, p, n)
	cmd.Process.Signal(syscall.SIGKILL)
	return waitFor(t, cmd)
}

// TestTrickleShard: a shard of a mounted HTTP folder whose server
// trickles (its end, fetched when the shard is first looked into)
// holds nothing for good, and nothing else: looking into it fails with
// EIO once --remote-timeout has passed while its neighbours read; ls and
// cat of it killed while they wait end at once, however long the
// timeout; the mount then unmounts while the shard still trickles, its
// daemon ending; once the server mends, the shard reads right. npzfs
// mount and ls of a folder whose listing trickles end at SIGINT, leaving
// nothing mounted.
func TestTrickleShard(t *testing.T) {
	needFuse(t)
	src := shardFolder(t, 4)
	ng := testserver.StartNginx(t, filepath.Dir(src), "autoindex on;", "autoindex_format json;")
	p, err := faultproxy.Start(ng.URL, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url := p.URL + "/" + filepath.Base(src) + "/"
	shard := "shard0002.npz"

	short := mount(t, url, "--remote-timeout", "2s")
	long := mount(t, url, "--remote-timeout", "1h", "--stall-timeout", "2s")
	p.SetFaults(tricklesPath("/" + shard))
	if ents, err := os.ReadDir(filepath.Join(short, shard)); !failsForNow(err) {
		t.Errorf("listing a trickling shard: %d entries, %v; want EIO after --remote-timeout", len(ents), err)
	}
	if b, err := os.ReadFile(filepath.Join(short, "shard0000.npz", "y", "raw.bin")); err != nil || len(b) != 56 {
		t.Errorf("a neighbour of a trickling shard: %d bytes, %v", len(b), err)
	}
	if !killedWhileWaiting(t, p, "ls", filepath.Join(long, shard)) {
		t.Error("ls of a trickling shard, killed while it waited, did not end")
	}
	if !killedWhileWaiting(t, p, "cat", filepath.Join(long, shard, "x.npy")) {
		t.Error("cat of a trickling shard, killed while it waited, did not end")
	}
	if r := npzfs(t, "unmount", long); r.code != 0 || isMounted(long) {
		t.Errorf("unmount while a shard trickles: exit %d, %q", r.code, r.stderr)
	}
	for _, pid := range daemons(long) {
		if !waitGone(pid) {
			t.Errorf("the daemon of a mount unmounted while a shard trickles did not end")
		}
	}

	p.SetFaults(nil)
	eventually(t, "the shard read right once the server mends", func() bool {
		_, diffs := differences(src, short)
		return len(diffs) == 0
	})

	// Commands that list a trickling folder end at SIGINT.
	quiet(t, short)
	p.SetFaults(tricklesPath("/"))
	endAtSIGINT(t, p, "folder", url, "ls")
}
