package npz

import (
	"strings"
)

// maxComponent is the longest file name a Linux filesystem serves.
const maxComponent = 255

// maxPath is the longest path served: Linux's PATH_MAX less its NUL. A
// longer one could not be opened by its full name, and a name of 64 KiB
// of "a/" would make a folder of every two bytes.
const maxPath = 4095

// sanitize turns a member name into the slash-separated path it is served
// at. It drops a leading "/", empty components and "." components; it
// refuses (reason non-empty) a name with a NUL byte, a ".." component, a
// component longer than 255 bytes, a path longer than 4,095 bytes, or no
// component left. dir reports a
// name ending in "/" (a directory entry). Backslash is an ordinary
// character: it is not a separator in zip names, nor on Linux.
func sanitize(name string) (path string, dir bool, reason string) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", false, "name contains a NUL byte"
	}
	dir = strings.HasSuffix(name, "/")
	trimmed := strings.TrimSuffix(name, "/")
	clean := true // trimmed is already the path
	n := 0        // components kept
	rest := trimmed
	for {
		i := strings.IndexByte(rest, '/')
		c := rest
		if i >= 0 {
			c = rest[:i]
		}
		switch {
		case c == "" || c == ".":
			clean = false
		case c == "..":
			return "", dir, "name has a '..' component"
		case len(c) > maxComponent:
			return "", dir, "name has a component longer than 255 bytes"
		default:
			n++
		}
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	if n == 0 {
		return "", dir, "name has no component left once '/', '.' and empty components are dropped"
	}
	if clean {
		path = trimmed
	} else {
		parts := make([]string, 0, n)
		for _, c := range strings.Split(trimmed, "/") {
			if c != "" && c != "." {
				parts = append(parts, c)
			}
		}
		path = strings.Join(parts, "/")
	}
	if len(path) > maxPath {
		return "", dir, "path is longer than 4,095 bytes"
	}
	return path, dir, ""
}
