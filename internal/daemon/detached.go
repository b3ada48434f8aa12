//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/syslog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/npzfs/npzfs/dataset"
)

// Detached is the daemon's side of Start: where it logs, and the pipe
// on which it reports how the mount went.
type Detached struct {
	// Logger takes the daemon's messages; Target says where they go,
	// for Status.Log.
	Logger *log.Logger
	Target string
	// created is the state log file, when the daemon made it.
	created string
	ready   *os.File
	closers []io.Closer
}

// Detach takes the daemon's side of what Start set up: the report pipe
// (the descriptor fd: ReadyFD), SIGHUP ignored (the daemon outlives its terminal), and a
// log: the file logFile when given (Start made it the daemon's output),
// else syslog, else npzfs.log in the state folder
// ($XDG_STATE_HOME/npzfs, by default ~/.local/state/npzfs; the Go
// runtime's own output, a panic or SIGQUIT's goroutine dump, goes there
// too), else nowhere.
func Detach(fd int, logFile string) *Detached {
	syscall.CloseOnExec(fd)
	d := &Detached{ready: os.NewFile(uintptr(fd), "ready")}
	signal.Ignore(syscall.SIGHUP)
	prefix := fmt.Sprintf("npzfs[%d]: ", os.Getpid())
	if logFile != "" {
		d.Logger, d.Target = log.New(os.Stderr, prefix, log.LstdFlags), logFile
	} else if sl, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "npzfs"); err == nil {
		d.closers = append(d.closers, sl)
		d.Logger, d.Target = log.New(sl, "", 0), "syslog (daemon facility, tag npzfs)"
	} else if f, created, err := openStateLog(); err == nil {
		d.closers = append(d.closers, f)
		d.Logger, d.Target = log.New(f, prefix, log.LstdFlags), f.Name()
		RedirectStderr(f) // a panic or SIGQUIT's dump lands there too
		if created {
			d.created = f.Name()
		}
	} else {
		d.Logger = log.New(io.Discard, "", 0)
	}
	return d
}

// CheckLog writes a mount's first message to logger, whose messages go
// to target (a file, syslog), and says why the mount is refused where the
// log does not take it (a full disk, /dev/full): every later message
// would be lost, unseen.
func CheckLog(logger *log.Logger, target, source, mountpoint string) error {
	err := logger.Output(2, fmt.Sprintf("mounting %s on %s", dataset.Redact(source), mountpoint))
	if err == nil {
		return nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot write to the log %s: %v", target, err)
}

// Live reports the mount live, as st says (and the state log file, when
// Detach made it).
func (d *Detached) Live(st Ready) {
	st.LogCreated = d.created
	fmt.Fprintln(d.ready, st.line())
	d.ready.Close()
}

// Failed reports why there is no mount, in one line.
func (d *Detached) Failed(err error) {
	fmt.Fprintln(d.ready, oneLine(err.Error()))
	d.ready.Close()
}

// Close closes the log.
func (d *Detached) Close() {
	for _, c := range d.closers {
		c.Close()
	}
}

// line is what the daemon writes on the report pipe once the mount is
// live: "ok", then tab-separated counts and the log it created.
func (st Ready) line() string {
	return fmt.Sprintf("ok\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s", st.Members, st.Unreadable, st.Hidden, st.Unindexed, st.UnindexedBytes, st.Source, st.Mountpoint, st.LogCreated)
}

// parseReady reads a line; ok is false for anything else (the daemon's
// one-line reason for failing).
func parseReady(line string) (st Ready, ok bool) {
	f := strings.Split(line, "\t")
	if len(f) != 9 || f[0] != "ok" {
		return st, false
	}
	var errs [5]error
	st.Members, errs[0] = strconv.Atoi(f[1])
	st.Unreadable, errs[1] = strconv.Atoi(f[2])
	st.Hidden, errs[2] = strconv.Atoi(f[3])
	st.Unindexed, errs[3] = strconv.Atoi(f[4])
	st.UnindexedBytes, errs[4] = strconv.ParseInt(f[5], 10, 64)
	st.Source, st.Mountpoint, st.LogCreated = f[6], f[7], f[8]
	return st, errors.Join(errs[:]...) == nil
}

// stateDir is where a daemon logs when it has neither a log file nor
// syslog: $XDG_STATE_HOME/npzfs, by default ~/.local/state/npzfs.
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "npzfs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "npzfs"), nil
}

// openStateLog opens (appending) npzfs.log in stateDir, and reports
// whether it made the file.
func openStateLog() (f *os.File, created bool, err error) {
	dir, err := stateDir()
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, "npzfs.log")
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		return f, true, nil
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	return f, false, err
}

// RedirectStderr makes f the process's standard error (file descriptor
// 2), where the Go runtime writes a panic and the goroutine dump of
// SIGQUIT.
func RedirectStderr(f *os.File) {
	syscall.Dup3(int(f.Fd()), 2, 0)
}
