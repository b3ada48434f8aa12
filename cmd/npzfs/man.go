package main

import (
	"io"
	"strings"

	"github.com/npzfs/npzfs/internal/roff"
)

// The manual page npzfs(1): "npzfs help --man" prints it, and packages
// install it. It is made from the texts --help shows (helptext.go, each
// command's summary, usage, description and flags), so the two never
// disagree; testdata/npzfs.1.golden holds it for review.

// manIntro is the man page's DESCRIPTION.
const manIntro = `npzfs mounts a NumPy .npz archive (a zip of .npy files, as np.savez and
np.savez_compressed write it) as a read-only folder, and reaches any array
in it without loading the archive: numpy memory-maps it, C maps it with
mmap(2), od(1) and dd(1) read it. Nothing is unpacked or copied: stored
members are spliced from the archive file to the kernel, and deflated
ones are inflated on demand from checkpoints laid down as reads go deeper.

For each member KEY.npy a mount holds:
  KEY.npy           the member, byte for byte
  KEY/raw.bin       exactly the array's bytes, ready for mmap(2)
  KEY/header.json   dtype, shape, order, strides, where the data lies
  KEY.ra            the array as a RawArray file (a header, then the data)
Members that are not .npy are plain files, and "/" in member names makes
folders. Files are 0444 and folders 0555, owned by the user who mounted.

The source of a command (ARCHIVE) is a .npz file, a bare .npy file, a
folder of them, or a URL: https://, http:// or s3://.`

// manEnvironment is the man page's ENVIRONMENT: name, then what it does.
var manEnvironment = [][2]string{
	{"NPZFS_HEADERS", "For an http(s):// archive: headers to send, one 'NAME: VALUE' a line, as if each were given with --header, but kept out of the command line, which every user can read (ps(1), /proc/PID/cmdline). The daemon of npzfs mount receives --header values so too."},
	{"NPZFS_SOURCE_URL", "The whole URL of a remote archive whose command line gives it without its query string and user info (as npzfs shows URLs): a presigned URL's signature kept out of the command line. It is used when the URL on the command line is the shown form of it."},
	{"AWS_PROFILE, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION", "For an s3:// archive: credentials and region, found as the AWS SDK finds them (with ~/.aws/config and ~/.aws/credentials, SSO, web identity, instance and container roles)."},
	{"AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL", "For an s3:// archive: an S3-compatible server, as --endpoint."},
	{"XDG_CACHE_HOME", "Saved indexes go to $XDG_CACHE_HOME/npzfs/index (by default ~/.cache/npzfs/index) unless --index-dir says otherwise."},
	{"XDG_STATE_HOME", "Where no syslog answers, the daemon's messages go to $XDG_STATE_HOME/npzfs/npzfs.log (by default ~/.local/state/npzfs/npzfs.log)."},
}

// manFiles is the man page's FILES.
var manFiles = [][2]string{
	{"/etc/fuse.conf", "user_allow_other there lets a user other than root mount with -o allow_other or allow_root."},
	{"/etc/fstab", "entries of type fuse.npzfs mount with mount(8), through mount.fuse3(8)."},
	{"~/.cache/npzfs/index", "saved indexes of deflated members."},
	{"~/.local/state/npzfs/npzfs.log", "the daemon's messages, where no syslog answers."},
}

// writeMan writes the manual page in roff (the man macros) for npzfs
// version.
func writeMan(w io.Writer, version string) {
	r := roff.New(w)
	r.Printf(".\\\" Made by npzfs help --man from the texts of npzfs --help: edit those.\n")
	r.Printf(".TH NPZFS 1 \"\" %s \"User Commands\"\n", roff.Quote("npzfs "+version))
	r.Printf(".nh\n.ad l\n") // no hyphenation, ragged right: flags and paths stay whole
	r.Printf(".SH NAME\nnpzfs \\- mount NumPy .npz archives as read\\-only folders\n")
	r.Printf(".SH SYNOPSIS\n")
	for _, n := range commandNames() {
		r.Printf(".B npzfs %s\n", n)
		if u := commands[n].usage; u != "" {
			r.Printf("%s\n", roff.Text(u))
		}
		r.Printf(".br\n")
	}
	r.Printf(".B npzfs help\n[COMMAND | \\-\\-man]\n")
	r.Printf(".SH DESCRIPTION\n")
	r.Paragraphs(manIntro)
	r.Printf(".SH COMMANDS\n")
	for _, n := range commandNames() {
		c := commands[n]
		r.Printf(".SS %s\n", roff.Quote(strings.TrimSpace("npzfs "+n+" "+c.usage)))
		r.Paragraphs(capitalize(c.summary) + ".")
		if c.help != "" {
			r.Paragraphs(c.help)
		}
		if rows := flagRows(n, flagsOf(n), false); len(rows) > 0 {
			r.Printf(".PP\nFlags:\n")
			for _, row := range rows {
				r.Printf(".TP\n.B %s\n%s\n", roff.Text(strings.TrimSpace(row.spec)), roff.Text(capitalize(row.usage)+"."))
			}
		}
		if ex := examples[n]; len(ex) > 0 {
			r.Printf(".PP\nExamples:\n.PP\n.RS\n.nf\n")
			for _, e := range ex {
				r.Printf("%s\n", roff.Text(e))
			}
			r.Printf(".fi\n.RE\n")
		}
	}
	r.Printf(".SS \"npzfs help [COMMAND | \\-\\-man]\"\n")
	r.Paragraphs("Prints the list of commands, or the short help of one, which npzfs COMMAND --help prints too; with --man, this manual page.")
	r.Printf(".SH \"EXIT STATUS\"\n")
	r.Paragraphs("0 success, 1 the operation failed (an unreadable archive, a mount refused, not mounted, ...), 2 the command line is wrong (an unknown command or flag, a missing argument). Every failure is one line on stderr saying what to do.")
	r.Printf(".SH ENVIRONMENT\n")
	r.Defs(manEnvironment)
	r.Printf(".SH FILES\n")
	r.Defs(manFiles)
	r.Printf(".SH \"SEE ALSO\"\n")
	r.Printf(".BR fusermount3 (1),\n.BR mount.fuse3 (8),\n.BR fstab (5),\n.BR mount (8)\n")
	r.Paragraphs("The README of npzfs, and its docs/ folder: header.json, views, archives, guarantees, Python, containers, and serve.md, the protocol of npzfs serve.")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
