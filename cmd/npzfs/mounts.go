package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	dir    string // mount point
	fstype string // e.g. fuse.npzfs
	source string
	dev    string // major:minor of the mounted file system
}

// findMount returns the last (topmost) mount on dir, if any.
func findMount(dir string) (mountEntry, bool) {
	var found mountEntry
	ok := false
	for _, m := range readMounts() {
		if m.dir == dir {
			found, ok = m, true
		}
	}
	return found, ok
}

func readMounts() []mountEntry {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := mountEntry{dir: unescapeMount(f[4]), dev: f[2]}
		for i := 5; i < len(f); i++ {
			if f[i] == "-" && i+2 < len(f) {
				m.fstype, m.source = f[i+1], unescapeMount(f[i+2])
				break
			}
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
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

// setReadAhead sets the kernel's readahead for the mount on dir, so large
// sequential reads and mmap faults arrive as requests of up to kb KiB
// instead of the kernel default (128 KiB). Only root may; others keep the
// default.
func setReadAhead(dir string, kb int) error {
	m, ok := findMount(dir)
	if !ok || m.dev == "" {
		return fmt.Errorf("%s is not in the mount table", dir)
	}
	return os.WriteFile("/sys/class/bdi/"+m.dev+"/read_ahead_kb", []byte(strconv.Itoa(kb)+"\n"), 0)
}
