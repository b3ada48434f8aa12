package main

import (
	"runtime/debug"
	"slices"
	"strings"
)

// commit, when set at build time with -ldflags "-X main.commit=...",
// names the commit built where Go records none (a build in a git
// worktree, whose .git is a file Go does not take for a repository).
var commit = ""

// versionString is what "npzfs version" prints after "npzfs ": the
// version set at build time with -ldflags "-X main.version=..." (as
// scripts/package.sh does, from scripts/version.sh), else the module
// version Go recorded ("(devel)" for a build from a checkout); then the
// VCS revision and time Go recorded (else the commit set at build time),
// "+dirty" for a build from a modified tree, and the Go version.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if version != "" {
			return version
		}
		return "unknown (no build information in the binary)"
	}
	if commit != "" && !slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }) {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: commit})
	}
	return describeBuild(bi, version)
}

// describeBuild describes the build bi; version, when set, overrides the
// module version.
func describeBuild(bi *debug.BuildInfo, version string) string {
	v := bi.Main.Version
	if version != "" {
		v = version
	}
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
