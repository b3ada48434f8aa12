package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/internal/english"
	"github.com/npzfs/npzfs/internal/listing"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

func init() {
	register("ls", &command{
		summary: "list an archive's members, and why any is not served",
		usage:   "[--verify] [--json] [-h] ARCHIVE... | FOLDER",
		help:    lsHelp,
		run:     runLs,
	})
}

// lsOptions are ls's flags.
type lsOptions struct {
	verify, json, human bool
}

func runLs(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("ls", stdout, stderr)
	var lo lsOptions
	fl.BoolVar(&lo.verify, "verify", false, "read every member whole and check its CRC-32: say which ones fail to read (what the mount answers with an I/O error), on stderr too, and exit 1 if any does")
	fl.BoolVar(&lo.json, "json", false, "print one JSON document: the archive's problems and one object per member")
	fl.BoolVarP(&lo.human, "human-readable", "h", false, "print sizes with units (1.5K, 234M, 2.0G), as ls -h does")
	var rf remoteFlags
	rf.add(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if err := rf.check(); err != nil {
		return usageError(stderr, "ls", err.Error())
	}
	if fl.NArg() < 1 {
		return argsError(stderr, "ls", fl.Args(), 1, "ARCHIVE or FOLDER")
	}
	ctx, stop := interruptible()
	defer stop()
	if fl.NArg() > 1 {
		return lsArchives(ctx, fl.Args(), &lo, &rf, stdout, stderr)
	}
	name := fl.Arg(0)
	if fi, err := os.Stat(name); err == nil && fi.IsDir() && !dataset.IsRemote(name) || dataset.IsRemoteFolder(name) {
		return lsFolder(ctx, name, &lo, &rf, stdout, stderr)
	}
	d, err := openArchive(ctx, name, &rf)
	if err != nil {
		return fail(stderr, "ls", err)
	}
	defer d.Close()
	l := listing.Of(ctx, d.Archive(), lo.verify)
	if lo.json {
		err = writeJSON(stdout, l.JSON(ctx, name))
	} else {
		l.WriteText(stdout, lo.human)
		tellFailures(stderr, d.Name(), l)
	}
	if err != nil {
		return fail(stderr, "ls", err)
	}
	if lo.verify && !l.Verified() {
		return exitFail
	}
	return exitOK
}

// lsArchives lists the members of several archives (or .npy files, local
// or remote) as lsFolder lists a folder's, each line starting with the
// archive's name as given; one that cannot be opened (a folder among
// them too) is said on stderr, and the exit code is then 1.
func lsArchives(ctx context.Context, names []string, lo *lsOptions, rf *remoteFlags, stdout, stderr io.Writer) int {
	ls := lsMany{lo: lo}
	for _, name := range names {
		shown := dataset.Redact(name)
		d, err := openArchive(ctx, name, rf)
		if err != nil {
			ls.failed(shown, err, err, stderr)
			continue
		}
		ls.add(ctx, shown, d.Archive(), stderr)
		d.Close()
	}
	return ls.write("", stdout, stderr)
}

// lsFolder lists the members of every archive and .npy file under dir,
// a local or remote folder, as a mount of it shows them, one archive
// after another (lsMany), each named by its path in the folder.
func lsFolder(ctx context.Context, dir string, lo *lsOptions, rf *remoteFlags, stdout, stderr io.Writer) int {
	ro, err := rf.options(0)
	if err != nil {
		return usageError(stderr, "ls", err.Error())
	}
	d, err := dataset.Open(ctx, fromSourceEnv(dir), &dataset.Options{Remote: ro})
	if err != nil {
		return fail(stderr, "ls", err)
	}
	defer d.Close()
	if d.Remote() {
		dir = d.Name()
	}
	files, err := d.Files(ctx)
	if err != nil {
		return fail(stderr, "ls", err)
	}
	ls := lsMany{lo: lo}
	for _, f := range files {
		a, err := d.OpenFile(ctx, f)
		if err != nil {
			ls.failed(f.Path, err, fmt.Errorf("%s: %w", f.Path, err), stderr)
			continue
		}
		ls.add(ctx, f.Path, a, stderr)
		a.Close()
	}
	return ls.write(dir, stdout, stderr)
}

// lsMany is a listing of several archives as one table: a folder's, or
// those given. Each line starts with an ARCHIVE column, the archive's
// name; the last line counts archives and members; --json gives one
// document with each archive's listing. An archive that cannot be opened
// is said on stderr (with --json, in the document, under "errors"), the
// others are listed, and the exit code is then 1, as it is for one that
// fails --verify.
type lsMany struct {
	lo    *lsOptions
	doc   listing.ArchivesJSON
	table listing.Table
	code  int
}

// add lists the archive a, named name.
func (ls *lsMany) add(ctx context.Context, name string, a *npz.Archive, stderr io.Writer) {
	l := listing.Of(ctx, a, ls.lo.verify)
	if ls.lo.verify && !l.Verified() {
		ls.code = exitFail
	}
	if ls.lo.json {
		ls.doc.Archives = append(ls.doc.Archives, l.JSON(ctx, name))
		return
	}
	tellFailures(stderr, name, l)
	ls.table.Human = ls.lo.human
	ls.table.Add(l, name)
}

// failed records that the archive name cannot be opened, err saying why
// in the JSON document and said in the line on stderr.
func (ls *lsMany) failed(name string, err, said error, stderr io.Writer) {
	ls.code = exitFail
	if ls.lo.json {
		ls.doc.Errors = append(ls.doc.Errors, listing.ErrorJSON{Archive: name, Error: err.Error()})
		return
	}
	fmt.Fprintf(stderr, "npzfs ls: %v\n", said)
}

// write prints the listing (the JSON document of the folder folder, or
// of the archives given where folder is ""), and returns the exit code.
func (ls *lsMany) write(folder string, stdout, stderr io.Writer) int {
	if ls.lo.json {
		if ls.doc.Archives == nil {
			ls.doc.Archives = []listing.JSON{}
		}
		if ls.doc.Errors == nil {
			ls.doc.Errors = []listing.ErrorJSON{}
		}
		var doc any = ls.doc
		if folder != "" {
			doc = listing.FolderJSON{Folder: folder, ArchivesJSON: ls.doc}
		}
		if err := writeJSON(stdout, doc); err != nil {
			return fail(stderr, "ls", err)
		}
		return ls.code
	}
	ls.table.Write(stdout)
	return ls.code
}

// maxFailuresTold is how many failing members of an archive ls names on
// stderr; the rest are counted.
const maxFailuresTold = 10

// tellFailures names on stderr, one line each, the members of the
// listing l of the archive name that cannot be read or failed --verify,
// and why (as the table's NOTE does), so that a script that keeps stderr
// sees why the exit code is 1. Without --verify the exit code is 0 and
// nothing is said.
func tellFailures(stderr io.Writer, name string, l *listing.Listing) {
	if !l.Checked {
		return
	}
	told := 0
	for _, r := range l.Rows {
		why := r.Verify
		switch {
		case r.State == listing.Unreadable:
			why = r.ReadError
		case r.State != listing.Failed:
			continue
		}
		if told++; told <= maxFailuresTold {
			fmt.Fprintf(stderr, "npzfs ls: %s: %s: %s\n", name, listing.Quote(r.Member.Name()), why)
		}
	}
	if more := told - maxFailuresTold; more > 0 {
		fmt.Fprintf(stderr, "npzfs ls: %s: and %s more (the listing names them)\n", name, english.Plural(more, "failing member"))
	}
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // dtypes as numpy writes them: "<f4"
	return enc.Encode(v)
}

// inspectArchive prints the header.json of one member of an archive; key
// is the member's name with or without ".npy". It is the two-argument form
// of "npzfs inspect"; with key "" (the one-argument form given an archive)
// it says which keys there are.
func inspectArchive(ctx context.Context, path, key string, rf *remoteFlags, stdout, stderr io.Writer) int {
	d, err := openArchive(ctx, path, rf)
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	defer d.Close()
	a := d.Archive()
	path = d.Name()
	if a.Bare() && key != "" {
		return fail(stderr, "inspect", fmt.Errorf("%s is a .npy file, not an .npz archive: it has no keys; see its header with: npzfs inspect %s", path, path))
	}
	var m *npz.Member
	switch ms := a.Members(); {
	case a.Bare():
		m = ms[0]
	case key == "":
		return usageError(stderr, "inspect", fmt.Sprintf("%s is an archive: name one of its keys: %s", path, keyList(a)))
	case strings.HasSuffix(key, ".npy"):
		m = a.Member(key)
	default:
		if m = a.Member(key + ".npy"); m == nil {
			m = a.Member(key)
		}
	}
	if m == nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: no member %q; its keys: %s", path, key, keyList(a)))
	}
	if !m.Served() {
		// As the mount and keyList have it: not a key of the archive.
		return fail(stderr, "inspect", fmt.Errorf("%s: the member %s is not served (%s); its keys: %s", path, listing.Quote(m.Name()), m.Reason(ctx), keyList(a)))
	}
	var js []byte
	if a.Bare() {
		// A file of its own: its header.json has no archive_offset
		// (docs/header-json.md).
		var h *npy.Header
		if h, err = m.Header(ctx); err == nil {
			js, err = h.JSON(m.Size())
		}
	} else {
		js, err = m.HeaderJSON(ctx)
	}
	if err != nil {
		if a.Bare() {
			// The member is the file itself: name it once.
			return fail(stderr, "inspect", fmt.Errorf("%s: %s", path, listing.Message(err)))
		}
		return fail(stderr, "inspect", fmt.Errorf("%s: %s: %s", path, m.Name(), listing.Message(err)))
	}
	if _, err := stdout.Write(js); err != nil {
		return fail(stderr, "inspect", err)
	}
	return exitOK
}

// maxKeys is how many keys an error message names before it counts the
// rest.
const maxKeys = 20

// keyList names the keys of a's served .npy members (their paths without
// ".npy"), the first maxKeys of them.
func keyList(a *npz.Archive) string {
	var keys []string
	for _, m := range a.Members() {
		if m.Served() && m.IsNPY() {
			keys = append(keys, listing.Quote(strings.TrimSuffix(m.Path(), ".npy")))
		}
	}
	if len(keys) == 0 {
		return "none (it holds no .npy members)"
	}
	out := strings.Join(keys[:min(len(keys), maxKeys)], ", ")
	if len(keys) > maxKeys {
		out += fmt.Sprintf(", and %d more (npzfs ls lists them)", len(keys)-maxKeys)
	}
	return out
}
