//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestUnmountWhenNotMounted(t *testing.T) {
	dir := t.TempDir()
	r := npzfs(t, "unmount", dir)
	oneLine(t, "unmount of a plain folder", r, 1)
	if !strings.Contains(r.stderr, "not mounted") {
		t.Errorf("message: %q", r.stderr)
	}
	r = npzfs(t, "umount", filepath.Join(dir, "missing"))
	oneLine(t, "umount of a missing folder", r, 1)
}

func TestUnmountAndDaemonExit(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	pids := daemons(dir)
	if len(pids) != 1 {
		t.Fatalf("daemons for %s: %v, want one", dir, pids)
	}
	// The daemon is detached: its own session.
	if sid := sessionOf(pids[0]); sid != pids[0] {
		t.Errorf("daemon %d is in session %d, not its own", pids[0], sid)
	}
	// Busy: a file open in the mount.
	f, err := os.Open(filepath.Join(dir, "images.npy"))
	if err != nil {
		t.Fatal(err)
	}
	r := npzfs(t, "unmount", dir)
	f.Close()
	if r.code == 0 {
		// Some kernels let FUSE unmount succeed with open files; then
		// it is simply unmounted.
		t.Logf("unmount with an open file succeeded")
	} else {
		oneLine(t, "unmount while busy", r, 1)
		if !strings.Contains(r.stderr, "busy") {
			t.Errorf("busy message: %q", r.stderr)
		}
		if r := npzfs(t, "unmount", dir); r.code != 0 {
			t.Fatalf("unmount after closing: exit %d %s", r.code, r.stderr)
		}
	}
	if isMounted(dir) {
		t.Fatalf("%s still mounted", dir)
	}
	if !waitGone(pids[0]) {
		t.Errorf("daemon %d still running after unmount", pids[0])
	}
}

func TestForegroundSignalsUnmountCleanly(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			clearLater(t, dir)
			cmd := exec.Command(bin, "mount", "-f", archive, dir)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			lines := bufio.NewReader(stderr)
			first, _ := lines.ReadString('\n')
			go func() {
				io.Copy(io.Discard, lines)
				done <- cmd.Wait()
			}()
			if !strings.Contains(first, "serving") || !isMounted(dir) {
				cmd.Process.Kill()
				<-done
				t.Fatalf("foreground mount not ready: %q", first)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "labels", "raw.bin")); err != nil || len(b) != 8000 {
				t.Errorf("read through the foreground mount: %d bytes, %v", len(b), err)
			}
			cmd.Process.Signal(sig)
			if err := <-done; err != nil {
				t.Errorf("after %v: %v, want exit 0", sig, err)
			}
			if isMounted(dir) {
				t.Errorf("after %v: %s still mounted", sig, dir)
			}
		})
	}
}

func TestKilledDaemonIsClearedByUnmount(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	pids := daemons(dir)
	if len(pids) != 1 {
		t.Fatalf("daemons for %s: %v, want one", dir, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(pids[0]) {
		t.Fatalf("daemon %d survived SIGKILL", pids[0])
	}
	_, err := os.Stat(dir)
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Errorf("stat of the dead mount: %v, want ENOTCONN", err)
	}
	if !isMounted(dir) {
		t.Fatalf("%s vanished from the mount table on its own", dir)
	}
	// Mounting on it again says how to clear it.
	r := npzfs(t, "mount", archive, dir)
	oneLine(t, "mount on a dead mount", r, 1)
	if !strings.Contains(r.stderr, "npzfs unmount") {
		t.Errorf("message does not say how to clear it: %q", r.stderr)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("npzfs unmount of a dead mount: exit %d: %s", r.code, r.stderr)
	}
	if isMounted(dir) {
		t.Errorf("%s still mounted", dir)
	}
	// And the folder is usable again.
	if r := npzfs(t, "mount", archive, dir); r.code != 0 || !isMounted(dir) {
		t.Fatalf("mount again on %s: exit %d: %s", dir, r.code, r.stderr)
	}
}

func TestLogFileAndDebug(t *testing.T) {
	archive, _ := testArchive(t)
	logf := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, archive, "--debug", "--log", logf)
	if _, err := os.ReadFile(filepath.Join(dir, "big", "raw.bin")); err != nil {
		t.Fatal(err)
	}
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("unmount: %s", r.stderr)
	}
	for _, pid := range daemons(dir) {
		waitGone(pid)
	}
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"serving " + archive, "READ", "LOOKUP", "unmounted"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// TestDaemonSIGTERM: SIGTERM to the background daemon unmounts and it
// exits; with a file open, the mount is detached at once and the daemon
// keeps serving the open file until it is closed.
func TestDaemonSIGTERM(t *testing.T) {
	archive, arrays := testArchive(t)
	t.Run("idle", func(t *testing.T) {
		dir := mount(t, archive)
		pids := daemons(dir)
		if len(pids) != 1 {
			t.Fatalf("daemons: %v", pids)
		}
		syscall.Kill(pids[0], syscall.SIGTERM)
		if !waitGone(pids[0]) {
			t.Fatalf("daemon %d still running after SIGTERM", pids[0])
		}
		if isMounted(dir) {
			t.Errorf("%s still mounted after SIGTERM", dir)
		}
	})
	t.Run("busy", func(t *testing.T) {
		dir := mount(t, archive)
		pids := daemons(dir)
		if len(pids) != 1 {
			t.Fatalf("daemons: %v", pids)
		}
		f, err := os.Open(filepath.Join(dir, "big", "raw.bin"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		syscall.Kill(pids[0], syscall.SIGTERM)
		for i := 0; i < 1000 && isMounted(dir); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if isMounted(dir) {
			t.Fatalf("%s still mounted after SIGTERM with a file open", dir)
		}
		// The open file still reads, from anywhere.
		want := arrays[2].raw
		buf := make([]byte, 4096)
		if n, err := f.ReadAt(buf, int64(len(want))-4096); err != nil || !bytes.Equal(buf[:n], want[len(want)-4096:]) {
			t.Errorf("read from the detached mount: %d bytes, %v", n, err)
		}
		f.Close()
		if !waitGone(pids[0]) {
			t.Errorf("daemon %d still running after the last file closed", pids[0])
		}
	})
	t.Run("detached", func(t *testing.T) {
		// Detached by another hand while a file is open, the mount has
		// nothing left to unmount: SIGTERM stops the daemon.
		fusermount := needTool(t, "fusermount3")
		logFile := filepath.Join(t.TempDir(), "npzfs.log")
		dir := mount(t, archive, "--log", logFile)
		pid := theDaemon(t, dir)
		f, err := os.Open(filepath.Join(dir, "labels.npy"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if out, err := exec.Command(fusermount, "-u", "-z", dir).CombinedOutput(); err != nil {
			t.Fatalf("fusermount3 -u -z: %v: %s", err, out)
		}
		if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, arrays[1].data) {
			t.Errorf("reading the detached file: %d bytes, %v", len(got), err)
		}
		syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid) {
			t.Fatalf("daemon %d still running after SIGTERM to a detached mount", pid)
		}
		log, _ := os.ReadFile(logFile)
		if !strings.Contains(string(log), "was detached (lazy unmount): the files still open on it are served no more") {
			t.Errorf("the log does not say why the daemon stopped:\n%s", log)
		}
		checkLogLines(t, log)
	})
}

// checkLogLines checks that every line of a daemon's log file is an
// entry of its own: none is the rest of one split over lines.
func checkLogLines(t *testing.T, log []byte) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
		if !strings.HasPrefix(line, "npzfs[") {
			t.Errorf("a log line that is not an entry of its own: %q", line)
		}
	}
}

// TestUnmountLazy: --lazy detaches a busy mount at once; status says so
// while the open file keeps reading, and the daemon exits when it is
// closed.
func TestUnmountLazy(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // this test's daemon alone
	archive, arrays := testArchive(t)
	dir := mount(t, archive)
	pids := daemons(dir)
	if len(pids) != 1 {
		t.Fatalf("daemons: %v", pids)
	}
	f, err := os.Open(filepath.Join(dir, "labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := npzfs(t, "unmount", "--lazy", dir); r.code != 0 || r.stderr != "" {
		t.Fatalf("unmount --lazy: exit %d: %s", r.code, r.stderr)
	}
	if isMounted(dir) {
		t.Fatalf("%s still in the mount table after unmount --lazy", dir)
	}
	if r := npzfs(t, "status", dir); r.code != 0 || !strings.Contains(r.stdout, "\n  detached    unmounted lazily") {
		t.Errorf("status of the detached mount: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, arrays[1].data) {
		t.Errorf("reading the detached file: %d bytes, %v", len(got), err)
	}
	f.Close()
	if !waitGone(pids[0]) {
		t.Errorf("daemon %d still running after the last file closed", pids[0])
	}
}
