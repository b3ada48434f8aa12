package main

import (
	"runtime/debug"
	"strings"
)

// versionString is what "npzfs version" prints after "npzfs ": the
// -ldflags override if there is one, else the module version Go recorded
// ("(devel)" for a build from a checkout) with the VCS revision and time
// it recorded, and "+dirty" for a build from a modified tree.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information in the binary)"
	}
	return describeBuild(bi)
}

func describeBuild(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	var extra []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		extra = append(extra, "commit "+rev)
	}
	if when != "" {
		extra = append(extra, when)
	}
	extra = append(extra, bi.GoVersion)
	return v + " (" + strings.Join(extra, ", ") + ")"
}
