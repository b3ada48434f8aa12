package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// The help of every command is written once, here and in each flag's
// definition, and shown in two forms:
//
//   - "npzfs COMMAND --help" prints the short form, which fits a screen
//     (helpLines lines of at most helpWidth columns): usage, summary, each
//     flag on one line (its shortUsage), one or two examples, and where
//     the rest is: the man page.
//   - the man page (npzfs help --man, man.go) carries everything: each
//     command's description (command.help), each flag's whole usage, the
//     examples, exit codes and environment.

// Bounds of the short form, checked by TestHelpFitsAScreen.
const (
	helpLines = 40
	helpWidth = 80
)

// moreHelp ends every short form: where the long text is.
const moreHelp = "More: man npzfs (from a build: npzfs help --man | man -l -)."

// exitCodesLine is the short form's exit codes, the same for every command;
// the man page says what each means for each command.
const exitCodesLine = "Exit codes: 0 success, 1 the operation failed, 2 bad command line."

// shortUsage is a flag's one line in --help, where the flag's own usage
// (kept whole in the man page) is too long for it: keyed by "COMMAND
// --NAME" for a flag of one command, else by "--NAME". The name of the
// flag's value (MiB, DIR) comes from its own usage, as pflag takes it.
var shortUsage = map[string]string{
	"mount --foreground":      "stay attached; log to stderr",
	"mount --options":         "mount options: allow_other, noexec, ...",
	"mount --memory-mb":       "the daemon's memory target (default 512)",
	"serve --memory-mb":       "the memory target, in MiB (default 512)",
	"mount --cache-mb":        "memory for inflated spans (1/32 of it)",
	"mount --index-mb":        "memory for checkpoints (1/8 of it)",
	"mount --readahead-kb":    "readahead (root only)",
	"mount --max-header-kb":   "longest .npy header read",
	"mount --max-open":        "for a folder: archives kept open",
	"--verify":                "verify first: auto, strict, lazy",
	"mount --remote-cache-mb": "for a URL: memory for blocks (1/2 of it)",
	"mount --list-ttl":        "remote folder: listings kept",
	"mount --list-attrs":      "listings carry attributes: no lookup after",
	"mount --index":           "index deflated members in the background",
	"mount --owner":           "unmount once process PID exits",
	"mount --rmdir":           "remove MOUNTPOINT once unmounted",
	"--header":                "for http(s): send a header (repeatable)",
	"--endpoint":              "for s3://: an S3-compatible server",
	"--no-sign-request":       "for s3://: send unsigned requests",
	"--disk-cache":            "for a URL: keep fetched blocks in DIR too",
	"--disk-cache-mb":         "bound of --disk-cache",
	"--remote-timeout":        "for a URL: give a request up",
	"--stall-timeout":         "for a URL: retry a silent request",
	"--index-dir":             "keep saved indexes in DIR",
	"--index-cache-mb":        "bound of --index-dir",
	"ls --verify":             "read every member whole, check CRC-32s",
	"ls --json":               "print one JSON document",
	"ls --human-readable":     "sizes with units (1.5K, 234M), as ls -h",
	"status --json":           "print one JSON document",
	"index --verify":          "read every member whole, check saved indexes",
	"index --workers":         "inflate with N threads",
	"index --sidecar":         "also write ARCHIVE.npzidx beside the archive",
	"index --sidecar-file":    "write the sidecar of one archive to FILE",
	"pack --chunk":            "SOZip chunk size",
	"pack --compress":         "keep, none, deflate or auto",
}

// defaultShown is a flag's default as help and the man page show it,
// where the value depends on the machine (and the texts must not).
var defaultShown = map[string]string{
	"--workers":      "one a core",
	"--readahead-kb": "1016 or 1024",
}

// examples are one or two command lines for each command.
var examples = map[string][]string{
	"mount": {
		"npzfs mount data.npz /mnt/data",
		"npzfs mount --index https://example.org/run.npz /mnt/run",
		"npzfs mount s3://bucket/dataset/ /mnt/dataset",
	},
	"unmount": {"npzfs unmount /mnt/data"},
	"ls": {
		"npzfs ls -h data.npz",
		"npzfs ls --verify shard-*.npz",
		"npzfs ls --verify --json s3://bucket/run.npz",
	},
	"index": {
		"npzfs index data.npz",
		"npzfs index --sidecar s3://bucket/dataset/",
	},
	"pack": {
		"npzfs pack data.npz data-packed.npz",
		"npzfs pack --compress auto s3://bucket/run.npz run.npz",
	},
	"inspect": {
		"npzfs inspect data.npz images",
		"npzfs inspect grid.npy",
	},
	"status": {
		"npzfs status",
		"npzfs status --json /mnt/data",
	},
	"version": {"npzfs version"},
	"serve": {
		"npzfs serve --stdio data.npz    # a program on the other end of the pipes",
	},
	"completion": {
		"source <(npzfs completion bash)    # in this shell; to keep it:",
		"npzfs completion bash > ~/.local/share/bash-completion/completions/npzfs",
		`npzfs completion zsh > "${fpath[1]}/_npzfs"`,
		"npzfs completion fish > ~/.config/fish/completions/npzfs.fish",
	},
}

// lsHelp is the long description of npzfs ls.
const lsHelp = `Lists the members of ARCHIVE, one line each: name, dtype, shape, order,
bytes, compression method and ratio, and a note saying why a member is not
served or has no views. The last line counts the members: served, then,
when there are any, unreadable (served, but of a method or encryption
npzfs cannot read), failed verification, and not served. -h prints sizes
with units, as ls -h does (--help is the help).

FOLDER: every archive and .npy file under it, as a mount of the folder
shows them, one after another, each line starting with the file's path in
the folder; one that cannot be opened is named on stderr, and the exit
code is then 1. Several ARCHIVEs (npzfs ls *.npz) are listed the same
way, each line starting with the archive's name as given.

With --verify every member is read whole and its CRC-32 checked, as
unzip -t does: the exit code is 1 when any member cannot be read or fails,
and each that does is named on stderr too, with why.
With --json the listing is one JSON document instead of a table:
{"archive", "members", "problems", "counts"}, each member an object with
name, path, state, folder, method, encrypted, size, compressed_size,
crc32, dtype (numpy's dtype.str), descr (records: as header.json gives
it), shape, fortran_order, views, reason, read_error and, with --verify,
verify (the README describes each); for a FOLDER, {"folder", "archives",
"errors"}; for several ARCHIVEs, {"archives", "errors"}.`

// serveHelp is the long description of npzfs serve.
const serveHelp = `Opens ARCHIVE (a .npz or .npy file, or an https://, http:// or s3://
URL) as a mount would, with the same caches, saved indexes and remote
flags, and answers requests on stdin with replies on stdout, in the
framed protocol of docs/serve.md: the member table (names, dtypes,
shapes, where each member's data lies), reads of any member's bytes at
any offset, several at once and in any order, and their cancellation. It
needs no FUSE: the Python package's npzfs.open runs it to read deflated
and remote arrays. A malformed request gets an error reply; the server
exits when its stdin closes or a close request comes. Messages about the
archive go to stderr.

Exit codes: 0 stdin closed or a close request answered, 1 the archive
cannot be opened or the protocol cannot be followed, 2 bad command line.`

// statusHelp is the long description of npzfs status.
const statusHelp = `Shows every live npzfs mount of yours (or the one on MOUNTPOINT): its
source, mount point, daemon, options and log, and what it has done since
it was mounted: bytes served, cache hits and misses, remote requests and
bytes fetched, saved indexes, background indexing (mount --index) with
its rate and time left. Each daemon answers on a socket only its user can
reach ($XDG_RUNTIME_DIR/npzfs, else /tmp/npzfs-UID; a daemon started with
another XDG_RUNTIME_DIR or TMPDIR is asked in its own); nothing appears in
the mounted tree. A mount of yours whose daemon does not answer is listed
with what became of it (exited, stopped, another user's, its status in a
folder not private). --json prints one document, {"mounts": [...]}, whose
fields the README documents.`

// inspectHelp is the long description of npzfs inspect.
const inspectHelp = `Prints the header.json of a .npy file, or of the member KEY of ARCHIVE
("images" or "images.npy"): dtype, shape, order, strides and where the
data lies, as KEY/header.json of a mount gives it. An archive without a
key, or with a key it does not hold, gets the list of its keys. A .npy
whose data is shorter than its header declares is refused, as numpy
refuses it.`

const mountHelp = `Mounts ARCHIVE (a NumPy .npz file) read-only on MOUNTPOINT, an existing
folder. Each member appears byte for byte (images.npy), and each .npy member
also as a folder of views: images/header.json and images/raw.bin (the array
data alone, ready for mmap), and beside it as images.ra (RawArray: a header
of 64-bit integers, then the data).

ARCHIVE may be a folder: every .npz file under it is then a folder
NAME.npz/ holding that archive's tree, and every .npy file NAME.npy with
its views; sub-folders are kept, other files left out. Archives are opened
on first use, and at most --max-open of them stay open once none of their
files is in use. An archive that cannot be read is a folder holding only
npzfs-error.txt, which says why, and so is a sub-folder that cannot be
listed. Symbolic links are followed, except to a folder they are in (or
one holding it) and into npzfs mounts: those are left out, and logged.
Files added, removed or replaced in the folder appear, vanish or change
within a second; reads of a replaced archive's old files fail. ARCHIVE may
also be a bare .npy file: a file is told by its bytes, not its name.

ARCHIVE may be remote: https://host/path/data.npz (or http://; a presigned
URL works as it is) or s3://BUCKET/KEY.npz, read by byte range: the mount
fetches the archive's tail, then only the bytes that are read, in 256 KiB
blocks kept in memory (--remote-cache-mb), ahead of sequential readers;
with --disk-cache DIR on disk too, keyed by the object's ETag, version and
date, so a later mount of the unchanged object fetches only its tail.
S3 takes every credential the AWS SDK does (environment, AWS_PROFILE and
the shared files, SSO, web identity, instance and container roles);
--endpoint (or AWS_ENDPOINT_URL_S3) for S3-compatible servers. If the
object changes while mounted, reads of bytes not yet fetched fail with an
I/O error. URLs are shown without their query string, headers never.
A sidecar of saved indexes beside a remote archive (ARCHIVE.npzidx, as
npzfs index --sidecar puts it) is looked for with one request at the
first deep read of a deflated member, and only the parts reads need are
fetched.

A remote folder mounts as a local one does: s3://BUCKET/PREFIX/ (or a
bucket alone) or https://HOST/PATH/ where the server lists the folder in
JSON (nginx's "autoindex_format json", or an index.json in it). Each
folder is listed on first look (one request a page of 1,000 objects),
and its listing kept --list-ttl (60s): objects added, removed or
replaced appear, vanish or change after it. Listings are read as they
come and kept compactly (about 24 bytes an entry besides its name), in
--remote-cache-mb with the blocks. An archive is opened (its tail
fetched) when a name inside it is first looked up; its blocks share
--remote-cache-mb with the others'.

A deflated member (np.savez_compressed) is inflated from its start the
first time it is read deep; the index made on the way (a checkpoint every
512 KiB) is saved in --index-dir once the member has been read to its end,
so later mounts of the archive, or of a copy of it, read anywhere at once.
"npzfs index ARCHIVE" builds them ahead of time, on every core; with
--index the mount builds them in the background once it is live, at the
lowest CPU priority (a read waits for no more than one span of it).
--no-index leaves no trace on disk.

The daemon keeps to one memory target, --memory-mb (512 MiB, or 7/8 of
the memory limit of its cgroup where that is less): the span cache, the
indexes' checkpoints and a remote archive's blocks are shares of it
unless given (1/32, 1/8, 1/2), and it is Go's soft memory limit unless
GOMEMLIMIT sets one. A memory flag past the machine's memory, which would
bound nothing, is refused (exit 2) with the most it takes; budgets given
without --memory-mb raise the target to twice theirs, at most the
machine's memory.

By default npzfs mount returns once the mount is live, leaving a daemon
(its own session, working directory /) that serves it until
"npzfs unmount MOUNTPOINT" or SIGINT/SIGTERM. If the mount cannot be made,
it prints one line saying why and leaves no mount and no daemon behind.
MOUNTPOINT is resolved (links, a relative path) before the daemon starts;
one in /proc, /sys or /dev is refused.

MOUNTPOINT may be /dev/fd/N: a FUSE device that a privileged process
opened, mounted with mount(2) on a folder, and handed to npzfs as file
descriptor N (libfuse's convention, used by container runtimes and CSI
drivers), so npzfs needs neither fusermount3 nor root. That process
unmounts the folder; the daemon then exits. On SIGINT/SIGTERM the daemon
stops serving, and the folder answers "Transport endpoint is not
connected" until that process unmounts it.

Daemon messages: with --log FILE they are appended to FILE (which also
receives the daemon's stdout and stderr). Without --log they go to syslog
(facility daemon, tag "npzfs") when a syslog socket answers, and otherwise
to $XDG_STATE_HOME/npzfs/npzfs.log (~/.local/state/npzfs/npzfs.log). With
-f they go to stderr, or to FILE with --log. The daemon's log (and FILE
with -f) gets the first message before anything is mounted, and one that
does not take it (a full disk, /dev/full) fails the mount. A mount that succeeds says in one line when
some members cannot be served or read.

Mount options (-o, comma-separated, repeatable): allow_other, allow_root,
default_permissions, nosuid, nodev, noexec, exec, suid, dev, noatime, atime,
ro. "rw" is refused: npzfs is read-only. allow_other lets every user
read the mount; allow_root lets root in besides you (files then show as
0400 and folders 0500, and the kernel checks them). Both need
user_allow_other in /etc/fuse.conf for a non-root user. Every flag below
but -f and -o can be given as an option too, with "_" or "-": -o
cache_mb=256,log=/var/log/npzfs.log,debug (a flag given as a flag wins).

From mount(8) and /etc/fstab, as type fuse.npzfs (npzfs must be on
mount's PATH, /usr/local/bin or /usr/bin):
  mount -t fuse.npzfs /data/run.npz /mnt/run -o ro,allow_other
  /data/run.npz  /mnt/run  fuse.npzfs  ro,noauto,user,cache_mb=256  0 0
mount(8)'s own options (rw, dev and suid, its defaults; user, noauto,
nofail, _netdev, x-*) are accepted there and change nothing: the mount
stays read-only, nosuid and nodev.

Exit codes: 0 mounted (with -f: unmounted cleanly after a signal or
"npzfs unmount"), 1 the mount failed, 2 bad command line.`

const indexHelp = `Builds the index of every deflated member of ARCHIVE (or of the members
named by KEY, as "images" or "images.npy"), or of every archive under
FOLDER (its .npz files, in its sub-folders too, as a mount of the folder
shows them), so that a later mount reads anywhere in them at once
instead of inflating each from its start. The members are inflated
whole, several at once, their length and CRC-32 checked, and their
indexes saved where mount looks for them (--index-dir), which a mount
of the folder uses too. A member of 8 MiB or more (compressed) is itself split
among --workers threads: each finds a block boundary in its part of the
stream and inflates from there before the part ahead of it is done (the
technique of rapidgzip), and whatever it cannot split (no block
boundary found, a member whose history never clears) is inflated from
its start. A member whose index is already saved has it loaded, not
rebuilt; with --verify every member is then also read whole, each span of
a saved index checked against its CRC-32 (one that fails is rebuilt).

On a terminal a progress line shows the bytes inflated, the rate and the
time left; otherwise one summary line is printed at the end. A member
(or under a FOLDER, an archive) that cannot be read is named, the others
are indexed, and the exit code is then 1.

With --sidecar the indexes are also written beside the archive, as
ARCHIVE.npzidx (data.npz: data.npzidx), for a dataset to ship: a mount
of the archive finds them there, read-only, when its index folder does
not hold them. Under a FOLDER, each archive gets its own. ARCHIVE and
FOLDER may be s3:// URLs (s3://BUCKET/PREFIX/ for a folder): the
sidecar is then put beside each object in one request, only where none
is (If-None-Match), so that of machines indexing at once one puts it,
and one there already that holds every index is kept as it is. An
http(s):// server takes no upload: --sidecar-file FILE writes the
sidecar of one archive to FILE, to put beside it by hand.`

const packHelp = `Rewrites the archive IN (local or remote, as ls takes it) into OUT, so
that np.load reads the same arrays from it and npzfs serves it best: each
stored array's data (past its .npy header) starts on a 4 KiB page of OUT
(on a 64-byte boundary when it is smaller than a page), so that
np.memmap maps it; each deflated member is cut into SOZip chunks of
--chunk bytes, compressed alone, on every core, and flushed so that each
inflates alone, with a hidden index after it saying where each starts
(the SOZip profile of zip, which zip readers that do not know it
ignore): a mount reads anywhere in it at once, inflating at most one
chunk, on any machine, with no index to build or ship. --compress says
what becomes of the arrays: their method kept (keep), all stored
(none), all deflated (deflate), or deflated where that saves a tenth or
more and stored where not (auto). Members that are not arrays, and
arrays of objects, keep their method and bytes. Names, times, order,
duplicate names and the comment are kept, as np.load sees them.

OUT is written to a temporary file beside it and renamed over it once
whole: it is never torn, and a run that fails or is interrupted leaves
OUT as it was. A member that cannot be read (a method npzfs does not
read, a damaged stream, a CRC-32 that does not match) fails the run,
naming it. On a terminal a progress line shows the bytes done, the rate
and the time left; a summary line follows.`

const unmountHelp = `Unmounts an npzfs mount and returns once its daemon has exited (at most
5 s). A mount whose daemon was killed ("Transport endpoint is not
connected") or stopped is cleared too: unmount never waits on a daemon
that cannot answer, nor for --lazy. A mount with files still open, or with
another mount inside it, is busy: close them (or unmount the inner mount),
or pass --lazy to detach it now (it goes away when the last file closes).
npzfs mounts stacked on one mount point are all removed. A mount that a
privileged process made on a FUSE descriptor it handed to npzfs
(npzfs mount ARCHIVE /dev/fd/N) is that process's to unmount, or root's:
unmount says so when it may not.

Exit codes: 0 unmounted, 1 not mounted, not an npzfs mount, or busy,
2 bad command line.`

// flagCapture is a writer that printUsage does not print to: it keeps
// the flag set instead (see flagsOf).
type flagCapture struct {
	io.Writer
	fl *pflag.FlagSet
}

// flagsOf returns the flags command name defines. Each command defines
// its flags as it runs; run with --help it defines them, prints its help
// and returns, acting on nothing: flagsOf runs it so, into a flagCapture.
func flagsOf(name string) *pflag.FlagSet {
	c, ok := lookup(name)
	if !ok {
		return nil
	}
	fc := &flagCapture{Writer: io.Discard}
	c.run([]string{"--help"}, fc, io.Discard)
	if fc.fl == nil {
		fc.fl = pflag.NewFlagSet(name, pflag.ContinueOnError)
	}
	return fc.fl
}

// commandNames are the registered commands, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// printUsage prints the short form of command name's help: what --help
// prints.
func printUsage(w io.Writer, name string, fl *pflag.FlagSet) {
	if fc, ok := w.(*flagCapture); ok {
		fc.fl = fl
		return
	}
	c, _ := lookup(name)
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("npzfs "+name+" "+c.usage), c.summary)
	if rows := flagRows(name, fl, true); len(rows) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		width := 0
		for _, r := range rows {
			width = max(width, len(r.spec))
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %-*s  %s\n", width, r.spec, r.usage)
		}
	}
	if ex := examples[name]; len(ex) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range ex {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	fmt.Fprintf(w, "\n%s\n%s\n", exitCodesLine, moreHelp)
}

// flagRow is one flag as help shows it: "-f, --foreground" or
// "    --cache-mb MiB", and its usage with its default.
type flagRow struct {
	name, spec, usage string
}

// flagRows are the visible flags of command name's flag set, in the order
// defined; short picks the one-line usages of --help, else the whole ones.
func flagRows(name string, fl *pflag.FlagSet, short bool) []flagRow {
	var rows []flagRow
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		if s, ok := shortFor(name, f.Name); ok && short {
			usage = s
		}
		if varname == "int" {
			varname = "N"
		}
		spec := "    --" + f.Name
		if f.Shorthand != "" {
			spec = "-" + f.Shorthand + ", --" + f.Name
		}
		if varname != "" {
			spec += " " + varname
		}
		if d := shownDefault(f); d != "" {
			usage += " (default " + d + ")"
		}
		rows = append(rows, flagRow{name: f.Name, spec: spec, usage: usage})
	})
	return rows
}

// shortFor is the --help line of flag of command cmd, if it has one of
// its own.
func shortFor(cmd, flag string) (string, bool) {
	if s, ok := shortUsage[cmd+" --"+flag]; ok {
		return s, true
	}
	s, ok := shortUsage["--"+flag]
	return s, ok
}

// shownDefault is the default help shows for f: none for a zero value or
// a boolean, defaultShown's for one that depends on the machine.
func shownDefault(f *pflag.Flag) string {
	if d, ok := defaultShown["--"+f.Name]; ok {
		return d
	}
	switch f.Value.Type() {
	case "bool", "stringArray", "stringSlice":
		return ""
	}
	switch f.DefValue {
	case "", "0", "false", "[]":
		return ""
	}
	return f.DefValue
}
