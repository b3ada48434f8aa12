//go:build linux

package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// silentDaemon is what can be told of the mount st, served by the
// daemon pid, which did not answer in this user's status folder: that it
// is stopped; that it runs as another user, whose status folder holds
// its socket; that it is this user's but keeps its status in another
// folder (started with another XDG_RUNTIME_DIR or TMPDIR), where it is
// asked, and answers, or not (a folder that is not private is not
// asked); else that it is silent (an npzfs from before status).
func silentDaemon(st Status, pid int) Status {
	st.PID, st.Daemon = pid, DaemonSilent
	if isStopped(pid) {
		st.Daemon = DaemonStopped
		return st
	}
	uid, ok := processUID(pid)
	if ok && uid != os.Getuid() {
		st.Daemon, st.UID = DaemonOtherUser, uid
		return st
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if !ok || err != nil {
		return st
	}
	dir := statusDirFor(func(name string) string { return environValue(env, name) }, uid)
	if dir == statusDirFor(os.Getenv, os.Getuid()) {
		return st // asked there already
	}
	if checkPrivate(dir) == nil {
		if answer, ok := ask(filepath.Join(dir, strconv.Itoa(pid)+".sock")); ok {
			return answer
		}
	}
	st.Daemon, st.StatusFolder = DaemonElsewhere, dir
	return st
}

// processUID is the real user ID the process pid runs as.
func processUID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			uid, err := strconv.Atoi(f[0])
			return uid, err == nil
		}
	}
	return 0, false
}

// environValue is the value of the variable name in env, the text of a
// process's /proc/PID/environ (NAME=VALUE strings, each ended by a NUL),
// or "".
func environValue(env []byte, name string) string {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
			return string(v)
		}
	}
	return ""
}
