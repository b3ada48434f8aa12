//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/hostile"
)

// unreadableArchive writes hostile.Unreadable: 3 members, one of which
// (LZMA) npzfs serves but cannot read and one of which ("../escape.txt")
// it does not serve.
func unreadableArchive(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "u.npz")
	if err := os.WriteFile(path, hostile.Unreadable(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMountSaysWhatCannotBeRead: npzfs mount still succeeds on an archive
// with members it cannot serve or read, and says so in one line naming
// the command that lists them. Without --log and with no syslog, the
// daemon's messages go to $XDG_STATE_HOME/npzfs/npzfs.log, and the mount
// that creates that file says where it is.
func TestMountSaysWhatCannotBeRead(t *testing.T) {
	needFuse(t)
	archive := unreadableArchive(t)
	dir := t.TempDir()
	clearLater(t, dir)
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mount", "u.npz", dir)
	cmd.Dir = filepath.Dir(archive) // a relative path: messages name the absolute one
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	r := run(t, cmd)
	if r.code != 0 {
		t.Fatalf("mount: exit %d: %s", r.code, r.stderr)
	}
	want := "npzfs mount: 2 of 3 members cannot be served or read: see npzfs ls " + archive + "\n"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("mount said %q, want the line %q", r.stderr, want)
	}
	logPath := filepath.Join(state, "npzfs", "npzfs.log")
	if _, err := os.Stat("/dev/log"); err == nil {
		// A syslog socket is there: the messages go to syslog, and no
		// file is made.
		if _, err := os.Stat(logPath); err == nil {
			t.Errorf("%s made although syslog answers", logPath)
		}
		return
	}
	if !strings.Contains(r.stderr, "the daemon's messages go to "+logPath) {
		t.Errorf("mount did not say where the messages go: %q", r.stderr)
	}
	clear(t, dir)
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"serving " + archive + " on " + dir, `"lzma.npy": every read fails`, `"../escape.txt": not served`, "unmounted " + dir} {
		if !strings.Contains(string(b), w) {
			t.Errorf("the log lacks %q:\n%s", w, b)
		}
	}
	// A second mount uses the same file and does not say so again.
	cmd = exec.CommandContext(ctx, bin, "mount", archive, dir)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	if r := run(t, cmd); r.code != 0 || strings.Contains(r.stderr, "messages go to") {
		t.Errorf("second mount: exit %d: %q", r.code, r.stderr)
	}
}

// TestForegroundQuitDumpGoesToLog: with -f --log, the goroutine dump of
// SIGQUIT goes to the log, not to the terminal the mount was started from.
func TestForegroundQuitDumpGoesToLog(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	dir := t.TempDir()
	clearLater(t, dir)
	logf := filepath.Join(t.TempDir(), "npzfs.log")
	var term bytes.Buffer
	cmd := exec.Command(bin, "mount", "-f", "--log", logf, archive, dir)
	cmd.Stdout, cmd.Stderr = &term, &term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The mount is live once the log says it serves (polled: the daemon
	// is a child, and the log is its only word).
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(logf); strings.Contains(string(b), "serving") {
			break
		}
		if i == 3000 {
			cmd.Process.Kill()
			<-done
			t.Fatal("the foreground mount never logged that it serves")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGQUIT)
	<-done // SIGQUIT ends a Go program after the dump
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "goroutine ") {
		t.Errorf("the log has no goroutine dump:\n%s", b)
	}
	if strings.Contains(term.String(), "goroutine ") {
		t.Errorf("the dump went to the terminal:\n%.500s", term.String())
	}
}

// TestMountWarnsOfHiddenFiles: mounting on a folder that holds files works
// and warns that they are hidden while mounted.
func TestMountWarnsOfHiddenFiles(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	dir := t.TempDir()
	clearLater(t, dir)
	for _, n := range []string{"a", "b"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	r := npzfs(t, "mount", archive, dir)
	want := "npzfs mount: warning: " + dir + " is not empty: what it holds (2 entries) is hidden while it is mounted\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("mount on a folder with files: exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
	}
	if !isMounted(dir) {
		t.Error("not mounted")
	}
}

// TestDiskUsageCountsMembersOnce: du of a mount adds up each member's
// compressed size once: the views made from it count nothing.
func TestDiskUsageCountsMembersOnce(t *testing.T) {
	archive, _ := testArchive(t)
	dir := mount(t, archive)
	out, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	if _, err := fmt.Sscan(string(out), &used); err != nil {
		t.Fatalf("du said %q", out)
	}
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var lo, hi int64
	for _, f := range zr.File {
		lo += int64(f.CompressedSize64)
		hi += (int64(f.CompressedSize64) + 511) / 512 * 512
	}
	if used < lo || used > hi {
		t.Errorf("du of the mount: %d bytes; the members take %d (%d in whole blocks)", used, lo, hi)
	}
}
