//go:build linux

package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	npzfs "github.com/npzfs/npzfs/fs"
)

// ReadyFD is the descriptor on which a daemon Start started reports how
// its mount went (Report): the write end of a pipe, its first extra
// file.
const ReadyFD = 3

// StillOpening is how long Started.Wait waits before it calls its slow
// function: long enough for a mount that is not waiting on a server.
const StillOpening = 5 * time.Second

// Started is a daemon Start started, until it reports.
type Started struct {
	cmd         *exec.Cmd
	ready       *os.File // the pipe's read end
	out         *os.File // the log file, the daemon's output
	sig         chan os.Signal
	interrupted atomic.Bool
}

// Start starts a daemon: the program exe run with args (and env added to
// this process's environment) in a session of its own (setsid), its
// output appended to the file logFile ("" for none), the write end of a
// pipe as its descriptor ReadyFD. A FUSE device handed over as the mount
// point (/dev/fd/N, checked by CheckHanded) is handed on: the last
// argument naming it is renamed to the descriptor the daemon gets. Until
// Wait returns, a SIGINT or SIGTERM to this process is passed on to the
// daemon (a SIGTERM), which then gives up or unmounts at once.
func Start(exe string, args, env []string, logFile, mountpoint string) (*Started, error) {
	s := &Started{cmd: exec.Command(exe, args...)}
	if logFile != "" {
		out, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot open the log file: %v", err)
		}
		s.out = out
		s.cmd.Stdout, s.cmd.Stderr = out, out
	}
	r, w, err := os.Pipe()
	if err != nil {
		s.close()
		return nil, err
	}
	defer w.Close()
	s.ready = r
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.ExtraFiles = []*os.File{w}
	if err := handOn(s.cmd, mountpoint); err != nil {
		s.close()
		return nil, err
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Ctrl-C while waiting reaches only us (the daemon has its own
	// session): it is passed on.
	s.sig = make(chan os.Signal, 1)
	signal.Notify(s.sig, syscall.SIGINT, syscall.SIGTERM)
	if err := s.cmd.Start(); err != nil {
		s.close()
		return nil, fmt.Errorf("cannot start the daemon: %v", err)
	}
	go func() {
		if _, ok := <-s.sig; ok {
			s.interrupted.Store(true)
			s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}()
	return s, nil
}

// close releases what Start holds, and stops passing signals on.
func (s *Started) close() {
	if s.sig != nil {
		signal.Stop(s.sig)
		close(s.sig)
	}
	for _, f := range []*os.File{s.ready, s.out} {
		if f != nil {
			f.Close()
		}
	}
	for _, f := range s.cmd.ExtraFiles[min(1, len(s.cmd.ExtraFiles)):] {
		f.Close() // a handed FUSE device's duplicate
	}
}

// Wait waits for the daemon's report, calling slow once if it takes
// StillOpening or more (a server slow to answer). It returns how the
// mount went once it is live, the daemon left running; or why there is
// no mount: the daemon's one line, an interruption (passed on, and the
// daemon gone), or its exit.
func (s *Started) Wait(slow func()) (Ready, error) {
	defer s.close()
	timer := time.AfterFunc(StillOpening, slow)
	line, _ := bufio.NewReader(s.ready).ReadString('\n')
	timer.Stop()
	line = strings.TrimSuffix(line, "\n")
	if st, ok := parseReady(line); ok && !s.interrupted.Load() {
		s.cmd.Process.Release()
		return st, nil
	}
	werr := s.cmd.Wait()
	switch {
	case s.interrupted.Load():
		return Ready{}, errors.New("interrupted; nothing was left mounted")
	case line == "":
		return Ready{}, fmt.Errorf("the daemon exited before mounting (%v); run with -f to see why", werr)
	}
	return Ready{}, errors.New(line)
}

// handOn passes a handed FUSE device (mount point /dev/fd/N, see
// fs/fdmount.go) on to the daemon cmd starts: as its next extra file,
// with the mount point argument renamed to match (CheckHanded has
// checked the descriptor). Any other mount point is left alone.
func handOn(cmd *exec.Cmd, mountpoint string) error {
	fd, ok := npzfs.FDMountpoint(mountpoint)
	if !ok {
		return nil
	}
	// The mount point is the last argument that names it.
	for i := len(cmd.Args) - 1; i > 0; i-- {
		if cmd.Args[i] != mountpoint {
			continue
		}
		// A duplicate, which the caller may close like its other files.
		dup, err := syscall.Dup(fd)
		if err != nil {
			return fmt.Errorf("%s: %v", mountpoint, err)
		}
		syscall.CloseOnExec(dup)
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(dup), mountpoint))
		cmd.Args[i] = fmt.Sprintf("/dev/fd/%d", 2+len(cmd.ExtraFiles))
		return nil
	}
	return fmt.Errorf("the mount point %s is not among the daemon's arguments", mountpoint)
}
