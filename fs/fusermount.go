package fs

import (
	"errors"
	"os/exec"
)

// ErrNoFusermount means neither fusermount3 nor fusermount was found: an
// unprivileged user cannot mount or unmount without it.
var ErrNoFusermount = errors.New("fusermount3 not found (install the fuse3 package)")

// fusermount finds the setuid helper the way go-fuse does.
func fusermount() (string, error) {
	for _, name := range []string{"fusermount3", "/bin/fusermount3", "fusermount", "/bin/fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoFusermount
}

// HaveFusermount reports whether the fusermount helper can be found.
func HaveFusermount() bool {
	_, err := fusermount()
	return err == nil
}

func execOutput(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}
