// Package mountinfo reads the mount table of /proc/self/mountinfo, for
// the command line (is a folder mounted, by what) and the integration
// tests (is a mount left behind).
package mountinfo

import (
	"os"
	"strconv"
	"strings"
)

// Entry is one line of /proc/self/mountinfo.
type Entry struct {
	Dir     string // mount point
	Options string // per-mount options (ro, nosuid, ...)
	FSType  string // e.g. fuse.npzfs
	Source  string
	Dev     string // major:minor of the mounted file system
	Root    string // the folder of the file system mounted on Dir
	// Super are the file system's own options (for FUSE: fd, rootmode,
	// user_id, group_id, ...; for a cgroup v1 hierarchy, its
	// controllers: rw,memory).
	Super string
}

// Read returns the mount table, or nil when it cannot be read.
func Read() []Entry {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return Parse(string(b))
}

// Parse parses the text of a mountinfo file: fields 3 (major:minor), 4
// (root), 5 (mount point) and 6 (options), then, after the "-" that ends
// the optional fields, the file system type, source and super options.
func Parse(text string) []Entry {
	var out []Entry
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		e := Entry{Dir: unescape(f[4]), Options: f[5], Dev: f[2], Root: unescape(f[3])}
		for i := 6; i+2 < len(f); i++ {
			if f[i] == "-" {
				e.FSType, e.Source = f[i+1], unescape(f[i+2])
				if i+3 < len(f) {
					e.Super = f[i+3]
				}
				break
			}
		}
		out = append(out, e)
	}
	return out
}

// Find returns the last (topmost) mount on dir, if any.
func Find(dir string) (Entry, bool) {
	var found Entry
	ok := false
	for _, e := range Read() {
		if e.Dir == dir {
			found, ok = e, true
		}
	}
	return found, ok
}

// unescape undoes the kernel's octal escapes (\040 for a space...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Option returns the value of option name in a comma-separated list of
// options (Options or Super), and whether it is there.
func Option(opts, name string) (string, bool) {
	for _, o := range strings.Split(opts, ",") {
		if k, v, _ := strings.Cut(o, "="); k == name {
			return v, true
		}
	}
	return "", false
}
