package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
		writeListing(stdout, l, lo.human)
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
	lo                *lsOptions
	doc               listing.ArchivesJSON
	rows              [][]string
	archives, members int
	counts            listing.Counts
	problems          []string
	code              int
}

// add lists the archive a, named name.
func (ls *lsMany) add(ctx context.Context, name string, a *npz.Archive, stderr io.Writer) {
	l := listing.Of(ctx, a, ls.lo.verify)
	if ls.lo.verify && !l.Verified() {
		ls.code = exitFail
	}
	ls.archives++
	ls.members += len(l.Rows)
	ls.counts.Add(l.Counts)
	if ls.lo.json {
		ls.doc.Archives = append(ls.doc.Archives, l.JSON(ctx, name))
		return
	}
	tellFailures(stderr, name, l)
	ls.rows = append(ls.rows, tableRows(l, quoteName(name), ls.lo.human)...)
	for _, p := range l.Archive.Problems() {
		ls.problems = append(ls.problems, fmt.Sprintf("archive %s: %s", quoteName(name), p))
	}
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
	if len(ls.rows) > 0 {
		writeTable(stdout, append([][]string{append([]string{"ARCHIVE"}, tableHeading...)}, ls.rows...))
	}
	fmt.Fprintf(stdout, "%s, %s\n", english.Plural(ls.archives, "archive"), summary(&ls.counts, ls.members))
	for _, p := range ls.problems {
		fmt.Fprintln(stdout, p)
	}
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
			fmt.Fprintf(stderr, "npzfs ls: %s: %s: %s\n", name, quoteName(r.Member.Name()), why)
		}
	}
	if more := told - maxFailuresTold; more > 0 {
		fmt.Fprintf(stderr, "npzfs ls: %s: and %s more (the listing names them)\n", name, english.Plural(more, "failing member"))
	}
}

// nameWidth caps the NAME column: a longer name gets a line of its own,
// so that one long name does not push every other column aside.
const nameWidth = 40

// summary is a listing's last line: how many members are served, and
// how many are not, by why.
func summary(c *listing.Counts, members int) string {
	s := fmt.Sprintf("%s, %d served", english.Plural(members, "member"), c.Served+c.Folders)
	for _, part := range []struct {
		n    int
		what string
	}{
		{c.Verified, "verified"},
		{c.Unreadable, "unreadable"},
		{c.Failed, "failed verification"},
		{c.NotServed, "not served"},
	} {
		if part.n > 0 {
			s += fmt.Sprintf(", %d %s", part.n, part.what)
		}
	}
	return s
}

// tableHeading is the heading of ls's table.
var tableHeading = []string{"NAME", "DTYPE", "SHAPE", "ORDER", "BYTES", "METHOD", "RATIO", "NOTE"}

// writeListing prints one aligned line per member, the summary, then
// the archive's own problems.
func writeListing(w io.Writer, l *listing.Listing, human bool) {
	writeTable(w, append([][]string{tableHeading}, tableRows(l, "", human)...))
	fmt.Fprintln(w, summary(&l.Counts, len(l.Rows)))
	for _, p := range l.Archive.Problems() {
		fmt.Fprintf(w, "archive: %s\n", p)
	}
}

// tableRows are the table's lines, one per member, after a first column
// naming the archive when archive is not "".
func tableRows(l *listing.Listing, archive string, human bool) [][]string {
	var rows [][]string
	for _, r := range l.Rows {
		m := r.Member
		method := npz.MethodName(m.Method())
		if m.Encrypted() {
			method += "+encrypted"
		}
		ratio := "-"
		if m.Size() > 0 {
			ratio = strconv.FormatFloat(100*float64(m.CompressedSize())/float64(m.Size()), 'f', 1, 64) + "%"
		}
		dtype, shape, order, size := "-", "-", "-", strconv.FormatInt(m.Size(), 10)
		if h := r.Header; h != nil {
			dtype, shape, order = dtypeString(h.DType), shapeString(h.Shape), "C"
			if h.FortranOrder {
				order = "F"
			}
		}
		if human {
			size = humanSize(m.Size())
		}
		if m.IsDir() {
			dtype, method, ratio, size = "(folder)", "-", "-", "-"
		}
		note := join(r.Reason, r.Verify)
		if x := r.SOZip; x != nil {
			note = join(note, fmt.Sprintf("SOZip index: %d chunks of %s", x.Chunks, humanSize(x.ChunkSize)))
		}
		if m.Served() && m.Path() != strings.TrimSuffix(m.Name(), "/") {
			note = join("served as "+quoteName(m.Path()), note)
		}
		row := []string{quoteName(m.Name()), dtype, shape, order, size, method, ratio, note}
		if archive != "" {
			row = append([]string{archive}, row...)
		}
		rows = append(rows, row)
	}
	return rows
}

// humanSize is n bytes as ls -h shows it: 512, 1.5K, 10K, 234M, 2.0G
// (powers of 1024; one decimal below 10).
func humanSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	unit := 0
	for v >= 1024 && unit < 6 {
		v /= 1024
		unit++
	}
	suffix := string("KMGTPE"[unit-1])
	if v < 10 {
		return strconv.FormatFloat(math.Ceil(v*10)/10, 'f', 1, 64) + suffix
	}
	return strconv.FormatFloat(math.Ceil(v), 'f', 0, 64) + suffix
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // dtypes as numpy writes them: "<f4"
	return enc.Encode(v)
}

// writeTable aligns rows in columns two spaces apart; the first row is
// the heading; the first column is at most nameWidth wide (a longer cell
// goes on a line of its own) and the last is not padded. BYTES and RATIO
// are right-aligned.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if n := utf8.RuneCountInString(c); n > width[i] && (i != 0 || n <= nameWidth) {
				width[i] = n
			}
		}
	}
	right := map[int]bool{}
	for i, h := range rows[0] {
		right[i] = h == "BYTES" || h == "RATIO"
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		first := r[0]
		if utf8.RuneCountInString(first) > width[0] {
			b.WriteString(first)
			b.WriteByte('\n')
			first = ""
		}
		for i, c := range r {
			if i == 0 {
				c = first
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i == len(r)-1:
				b.WriteString(c)
			case right[i]:
				b.WriteString(pad + c + "  ")
			default:
				b.WriteString(c + pad + "  ")
			}
		}
		io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n")
	}
}

func join(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "; " + b
}

// quoteName shows a name as it is unless it has characters that would
// break the columns (spaces, tabs, control characters), then Go-quoted.
func quoteName(s string) string {
	if s == "" {
		return `""`
	}
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == ' ' || r == '"' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// dtypeString is numpy's dtype.str, or a short description of a record.
func dtypeString(d *npy.DType) string {
	if d == nil {
		return "?"
	}
	if d.Record {
		return fmt.Sprintf("record(%s, %s)", english.Plural(len(d.Fields), "field"), english.Plural(d.ItemSize, "byte"))
	}
	if d.Subarray != nil {
		return fmt.Sprintf("%s%s", dtypeString(d.Subarray.Base), shapeString(d.Subarray.Shape))
	}
	return d.Str()
}

// shapeString writes a shape as Python does: (), (3,), (2, 3).
func shapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = strconv.FormatInt(n, 10)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
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
		return fail(stderr, "inspect", fmt.Errorf("%s: the member %s is not served (%s); its keys: %s", path, quoteName(m.Name()), m.Reason(ctx), keyList(a)))
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
			keys = append(keys, quoteName(strings.TrimSuffix(m.Path(), ".npy")))
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
