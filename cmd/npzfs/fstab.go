//go:build linux

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/internal/suggest"
)

// mount(8) runs "npzfs SOURCE MOUNTPOINT -o OPTIONS" for a file system of
// type fuse.npzfs (through fuse3's mount.fuse3), so that
//
//	mount -t fuse.npzfs /data/run.npz /mnt/run -o ro,allow_other
//
// and /etc/fstab lines and systemd mount units work as they do for sshfs.
// OPTIONS then holds mount(8)'s own options as well as the user's: its
// defaults ("rw", "dev", "suid") and fstab's ("noauto", "user", ...),
// which helperIgnored lists.

// isHelperCall reports whether args are mount.fuse3's call: a source and a
// mount point that are not a command, then -o and the options.
func isHelperCall(args []string) bool {
	if len(args) != 4 || args[2] != "-o" || strings.HasPrefix(args[0], "-") {
		return false
	}
	_, isCommand := lookup(args[0])
	return !isCommand
}

// helperIgnored are options mount(8) or fstab may hand to a helper that
// mean nothing to a read-only FUSE mount (or were acted on already by
// mount(8): "user" lets a user mount an fstab entry; "noauto", "_netdev"
// and "nofail" say when to mount it). "rw", "dev" and "suid" are
// mount(8)'s defaults, handed over whether or not the user wrote them: the
// mount is read-only whatever they say, and stays nosuid and nodev as
// npzfs mount makes it (it serves no device or set-user-ID files).
var helperIgnored = map[string]bool{
	"rw": true, "dev": true, "suid": true, "defaults": true, "auto": true, "noauto": true, "_netdev": true, "nofail": true,
	"user": true, "users": true, "nouser": true, "owner": true, "group": true,
	"sync": true, "async": true, "dirsync": true,
}

// runHelper runs mount.fuse3's call as "npzfs mount".
func runHelper(args []string, stdout, stderr io.Writer) int {
	return runMount(helperMountArgs(args), stdout, stderr)
}

// helperMountArgs are npzfs mount's arguments for mount.fuse3's call.
func helperMountArgs(args []string) []string {
	var kept []string
	for _, opt := range strings.Split(args[3], ",") {
		switch {
		case helperIgnored[opt], strings.HasPrefix(opt, "x-"), strings.HasPrefix(opt, "comment="), strings.HasPrefix(opt, "user="):
		default:
			kept = append(kept, opt)
		}
	}
	margs := []string{args[0], args[1]}
	if len(kept) > 0 {
		margs = append(margs, "-o", strings.Join(kept, ","))
	}
	return margs
}

// notOptions are the mount flags -o cannot set: -o itself, and those that
// would keep mount(8) waiting or are internal.
var notOptions = map[string]bool{"options": true, "foreground": true, "ready-fd": true, "help": true}

// flagOption finds the flag of fl a -o option names, with "_" for "-"
// as fstab lines often spell them (cache_mb=256, debug), and the value to
// set it to; ok is false for options that name no such flag.
func flagOption(fl *pflag.FlagSet, opt string) (name, value string, ok bool, err error) {
	name, value, hasValue := strings.Cut(opt, "=")
	name = strings.ReplaceAll(name, "_", "-")
	f := fl.Lookup(name)
	if f == nil || notOptions[name] || f.Hidden {
		return "", "", false, nil
	}
	if !hasValue {
		if f.NoOptDefVal == "" {
			return "", "", true, fmt.Errorf("mount option %q needs a value: %s=VALUE", opt, strings.ReplaceAll(name, "-", "_"))
		}
		value = f.NoOptDefVal
	}
	return name, value, true, nil
}

// mountOptionNames are the values -o completes to: the options passed to
// the mount and the flags that are options too, sorted.
func mountOptionNames() []string {
	return optionNames(flagsOf("mount"))
}

// optionNames are the -o options of a mount with the flags fl: those
// passed to the mount and the flags that are options too, as fstab
// spells them ("_" for "-", "=" after a flag that takes a value), sorted.
func optionNames(fl *pflag.FlagSet) []string {
	var out []string
	for o := range allowedOptions {
		out = append(out, o)
	}
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || notOptions[f.Name] {
			return
		}
		name := strings.ReplaceAll(f.Name, "-", "_")
		if f.Value.Type() != "bool" {
			name += "="
		}
		out = append(out, name)
	})
	sort.Strings(out)
	return out
}

// suggestOption is what follows "unsupported mount option": the -o
// option of a mount with the flags fl closest to the name of opt (before
// any "="), as fstab spells it: "; did you mean allow_other?", or "".
func suggestOption(fl *pflag.FlagSet, opt string) string {
	name, _, _ := strings.Cut(opt, "=")
	name = strings.ReplaceAll(name, "-", "_")
	var names []string
	for _, o := range optionNames(fl) {
		names = append(names, strings.TrimSuffix(o, "="))
	}
	if s := suggest.Closest(name, names); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}
