//go:build linux

// Package integration builds the npzfs binary once and drives it through
// its command line: every mount is a separate daemon process, never this
// test process (a process that touches its own FUSE mount can deadlock).
package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// bin is the npzfs binary built by TestMain; sharedDir holds it and the
// archives shared by all tests.
var bin, sharedDir string

// fuseProblem says why FUSE cannot be used here, "" when it can.
var fuseProblem string

func requireFuse() bool { return os.Getenv("NPZFS_REQUIRE_FUSE") == "1" }

func TestMain(m *testing.M) {
	if spec := os.Getenv(readerEnv); spec != "" {
		// A reader child of TestHostileLoad, not a test run.
		os.Exit(readerChild(spec))
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "npzfs-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	sharedDir = dir
	bin = filepath.Join(dir, "npzfs")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = "/usr/local/go/bin/go"
	}
	// NPZFS_RACE_DAEMON=1 builds npzfs with the race detector, whose
	// reports every npzfs process the tests run writes beside the binary
	// (GORACE's log_path, which they inherit); any fails the run.
	raceLogs := ""
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if os.Getenv("NPZFS_RACE_DAEMON") == "1" {
		args = append(args, "-race")
		raceLogs = filepath.Join(dir, "race")
		os.Setenv("GORACE", "log_path="+raceLogs)
	}
	build := exec.Command(gobin, append(args, "./cmd/npzfs")...)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building npzfs: %v\n%s", err, out)
		return 1
	}
	fuseProblem = checkFuse()
	// Daemons without --log log to syslog or, where none answers, to
	// $XDG_STATE_HOME/npzfs/npzfs.log: keep that in the suite's folder,
	// made in advance so that no mount says it created it (the test of
	// that message uses a folder of its own).
	state := filepath.Join(dir, "state")
	os.MkdirAll(filepath.Join(state, "npzfs"), 0o700)
	os.WriteFile(filepath.Join(state, "npzfs", "npzfs.log"), nil, 0o600)
	os.Setenv("XDG_STATE_HOME", state)
	// Mounts keep the indexes of deflated members in
	// $XDG_CACHE_HOME/npzfs/index: in the suite's folder too.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	code := m.Run()
	// Read-only is total: the archive every test mounted is unchanged.
	if shared.path != "" && shared.err == nil {
		if b, err := os.ReadFile(shared.path); err != nil || sha256.Sum256(b) != shared.sum {
			fmt.Fprintf(os.Stderr, "integration: %s changed during the tests (%v)\n", shared.path, err)
			code = 1
		}
	}
	if raceLogs != "" {
		reports, _ := filepath.Glob(raceLogs + ".*")
		for _, r := range reports {
			b, _ := os.ReadFile(r)
			fmt.Fprintf(os.Stderr, "integration: the race detector in npzfs (%s):\n%s\n", r, b)
			code = 1
		}
	}
	// Belt and braces: every folder any test mounted on must be clear now.
	for _, dir := range usedDirs() {
		if isMounted(dir) {
			fmt.Fprintf(os.Stderr, "integration: %s still mounted after the tests; detaching it\n", dir)
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				exec.Command("fusermount3", "-u", "-z", dir).Run()
			}
			code = 1
		}
		for _, pid := range daemons(dir) {
			fmt.Fprintf(os.Stderr, "integration: daemon %d for %s still running; killing it\n", pid, dir)
			syscall.Kill(pid, syscall.SIGKILL)
			code = 1
		}
	}
	return code
}

var used struct {
	sync.Mutex
	dirs []string
}

// clearLater clears dir when the test ends, and in TestMain's final sweep.
func clearLater(t *testing.T, dir string) {
	useDir(dir)
	t.Cleanup(func() { clear(t, dir) })
}

// useDir records a folder a test mounts on, for the final sweep.
func useDir(dir string) {
	used.Lock()
	used.dirs = append(used.dirs, dir)
	used.Unlock()
}

func usedDirs() []string {
	used.Lock()
	defer used.Unlock()
	return append([]string(nil), used.dirs...)
}

func checkFuse() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Sprintf("cannot open /dev/fuse: %v", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "fusermount3 not found and not root"
		}
	}
	return ""
}

// needFuse skips the test when FUSE is unusable, or fails it when
// NPZFS_REQUIRE_FUSE=1.
func needFuse(t *testing.T) {
	t.Helper()
	if fuseProblem == "" {
		return
	}
	if requireFuse() {
		t.Fatalf("FUSE unusable: %s (NPZFS_REQUIRE_FUSE=1)", fuseProblem)
	}
	t.Skipf("FUSE unusable: %s (set NPZFS_REQUIRE_FUSE=1 to fail instead)", fuseProblem)
}

// needTool skips (or fails under NPZFS_REQUIRE_FUSE=1) without a program.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if requireFuse() {
			t.Fatalf("%s not found (NPZFS_REQUIRE_FUSE=1)", name)
		}
		t.Skipf("%s not found", name)
	}
	return p
}

// python is Debian's interpreter, which has numpy; the one on PATH may not.
const python = "/usr/bin/python3"

func needNumpy(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import numpy; print(numpy.__version__)").CombinedOutput()
	if err != nil {
		if requireFuse() {
			t.Fatalf("numpy unavailable in %s: %v %s (NPZFS_REQUIRE_FUSE=1)", python, err, out)
		}
		t.Skipf("numpy unavailable in %s: %v", python, err)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// npzfs runs the binary and waits for it. The context only guards against
// a hang leaving the suite stuck; no test depends on how long anything takes.
func npzfs(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return run(t, exec.CommandContext(ctx, bin, args...))
}

// run runs cmd and collects its output and exit status.
func run(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	return r
}

// mountOf returns the mount on dir, if any.
func mountOf(dir string) (mountinfo.Entry, bool) { return mountinfo.Find(dir) }

func isMounted(dir string) bool { _, ok := mountOf(dir); return ok }

// daemons lists the pids of live npzfs processes whose arguments name dir.
func daemons(dir string) []int { return processesOf(bin, dir) }

// processesOf lists the live processes of program prog with arg among
// their arguments.
func processesOf(prog, arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) < 2 || args[0] != prog || !processAlive(pid) {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// processAlive is false for a process that is gone, or whose every
// thread has finished exiting. A zombie thread-group leader is not enough:
// the leader of a killed Go process turns zombie while its other threads
// are still exiting, and until the last of them closes /dev/fuse the
// kernel keeps the connection, so a stat then fails with EIO, not ENOTCONN.
// The zombie's thread count (the 20th field of /proc/PID/stat) falls to one
// once the others are released, after their files were closed.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, the state
	if len(f) < 18 {
		return true
	}
	if f[0] != "Z" && f[0] != "X" {
		return true
	}
	return f[17] != "1"
}

// waitGone waits for pid to exit. It polls: the daemon is not our child.
func waitGone(pid int) bool {
	for i := 0; i < 1000; i++ {
		if !processAlive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// clear removes any mount on dir and any daemon serving it, reporting
// what it had to force. It is every mounting test's cleanup.
func clear(t *testing.T, dir string) {
	t.Helper()
	if isMounted(dir) {
		if r := npzfs(t, "unmount", dir); r.code != 0 {
			t.Errorf("cleanup: npzfs unmount %s: exit %d: %s", dir, r.code, r.stderr)
			npzfs(t, "unmount", "--lazy", dir)
		}
	}
	if isMounted(dir) {
		t.Errorf("cleanup: %s still mounted; detaching it", dir)
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			exec.Command("fusermount3", "-u", "-z", dir).Run()
		}
	}
	for _, pid := range daemons(dir) {
		if !waitGone(pid) {
			t.Errorf("cleanup: daemon %d for %s did not exit after unmount; killing it", pid, dir)
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid)
		}
	}
}

// unreadableLine is the one line a mount prints when some members cannot
// be served or read.
var unreadableLine = regexp.MustCompile(`^npzfs mount: \d+ of \d+ members cannot be served or read: see npzfs ls \S+\n$`)

// unindexedLine is the note a mount prints for large deflated members
// without a saved index.
var unindexedLine = regexp.MustCompile(`^npzfs mount: note: .* has no saved index: .*\n$`)

// mount mounts archive with the real command (in the background, the
// default) on a fresh folder and returns it; cleanup unmounts.
func mount(t *testing.T, archive string, flags ...string) string {
	t.Helper()
	return mountVia(t, nil, archive, flags...)
}

// mountVia is mount with the command run through the program and
// arguments via, which exec npzfs mount and the arguments after them.
func mountVia(t *testing.T, via []string, archive string, flags ...string) string {
	t.Helper()
	needFuse(t)
	dir := t.TempDir()
	clearLater(t, dir)
	args := append(append([]string{"mount"}, flags...), archive, dir)
	var r result
	if via == nil {
		r = npzfs(t, args...)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r = run(t, exec.CommandContext(ctx, via[0], append(append(via[1:], bin), args...)...))
	}
	if r.code != 0 {
		t.Fatalf("npzfs mount %s %s: exit %d\nstderr: %s", archive, dir, r.code, r.stderr)
	}
	if r.stdout != "" || (r.stderr != "" && !unreadableLine.MatchString(r.stderr) && !unindexedLine.MatchString(r.stderr)) {
		t.Errorf("npzfs mount printed: stdout %q stderr %q", r.stdout, r.stderr)
	}
	m, ok := mountOf(dir)
	if !ok {
		t.Fatalf("npzfs mount exited 0 but %s is not mounted", dir)
	}
	if m.FSType != "fuse.npzfs" {
		t.Fatalf("%s is mounted as %s", dir, m.FSType)
	}
	return dir
}

// sessionOf reads a process's session id from /proc.
func sessionOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	// After the command: state ppid pgrp session ...
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return -1
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}
