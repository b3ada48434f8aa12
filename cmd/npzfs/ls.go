package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/internal/english"
	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

func init() {
	register("ls", &command{
		summary: "list an archive's members, and why any is not served",
		usage:   "[--verify] [--json] [-h] ARCHIVE | FOLDER",
		help:    lsHelp,
		run:     runLs,
	})
}

func runLs(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("ls", stdout, stderr)
	var lo lsOptions
	fl.BoolVar(&lo.verify, "verify", false, "read every member whole and check its CRC-32: say which ones fail to read (what the mount answers with an I/O error), and exit 1 if any does")
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
	if fl.NArg() != 1 {
		return argsError(stderr, "ls", fl.Args(), 1, "ARCHIVE or FOLDER")
	}
	name := fl.Arg(0)
	ctx, stop := interruptible()
	defer stop()
	if fi, err := os.Stat(name); err == nil && fi.IsDir() && !dataset.IsRemote(name) || dataset.IsRemoteFolder(name) {
		return lsFolder(ctx, name, &lo, &rf, stdout, stderr)
	}
	d, err := openArchive(ctx, name, &rf)
	if err != nil {
		return fail(stderr, "ls", err)
	}
	defer d.Close()
	l := lo.list(ctx, d.Archive())
	if lo.json {
		err = l.writeJSON(ctx, stdout, name, lo.verify)
	} else {
		l.writeTable(stdout, "", lo.human)
	}
	if err != nil {
		return fail(stderr, "ls", err)
	}
	if lo.verify && !l.verified() {
		return exitFail
	}
	return exitOK
}

// lsOptions are ls's flags.
type lsOptions struct {
	verify, json, human bool
}

// list lists a's members, reading them whole first with verify.
func (lo *lsOptions) list(ctx context.Context, a *npz.Archive) *listing {
	var failures map[*npz.Member]string
	if lo.verify {
		failures = verifyMembers(ctx, a.Members())
	}
	return listArchive(ctx, a, failures)
}

// verified reports a listing with no member unreadable or failing.
func (l *listing) verified() bool { return l.counts.unreadable == 0 && l.counts.failed == 0 }

// lsFolder lists the members of every archive and .npy file under dir,
// a local or remote folder, as a mount of it shows them, one archive
// after another: each table line starts with the archive's path in the
// folder, and --json gives one document with each archive's listing. An
// archive that cannot be opened is named on stderr (in the JSON
// document, under "errors"), the others are listed, and the exit code is
// then 1.
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
	code := exitOK
	doc := jsonFolder{Folder: dir, Archives: []jsonListing{}, Errors: []jsonError{}}
	var rows [][]string
	members, archives := 0, 0
	var counts listCounts
	var problems []string
	for _, f := range files {
		rel := f.Path
		a, err := d.OpenFile(ctx, f)
		if err != nil {
			code = exitFail
			if lo.json {
				doc.Errors = append(doc.Errors, jsonError{Archive: rel, Error: err.Error()})
			} else {
				fmt.Fprintf(stderr, "npzfs ls: %s: %v\n", rel, err)
			}
			continue
		}
		l := lo.list(ctx, a)
		if lo.verify && !l.verified() {
			code = exitFail
		}
		archives++
		members += len(l.members)
		counts.add(l.counts)
		if lo.json {
			doc.Archives = append(doc.Archives, l.json(ctx, rel, lo.verify))
		} else {
			rows = append(rows, l.rows(quoteName(rel), lo.human)...)
			for _, p := range l.a.Problems() {
				problems = append(problems, fmt.Sprintf("archive %s: %s", quoteName(rel), p))
			}
		}
		a.Close()
	}
	if lo.json {
		if err := writeJSON(stdout, doc); err != nil {
			return fail(stderr, "ls", err)
		}
		return code
	}
	if len(rows) > 0 {
		writeTable(stdout, append([][]string{append([]string{"ARCHIVE"}, tableHeading...)}, rows...))
	}
	fmt.Fprintf(stdout, "%s, %s\n", english.Plural(archives, "archive"), counts.summary(members))
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	return code
}

type jsonFolder struct {
	Folder   string        `json:"folder"`
	Archives []jsonListing `json:"archives"`
	Errors   []jsonError   `json:"errors"`
}

type jsonError struct {
	Archive string `json:"archive"`
	Error   string `json:"error"`
}

// verifyMembers reads every served member whole, a few at a time, and
// checks the CRC-32 of stored ones (the inflater checks deflated ones). It
// returns why each member that fails does, unless its reason already says
// it cannot be read.
func verifyMembers(ctx context.Context, members []*npz.Member) map[*npz.Member]string {
	out := map[*npz.Member]string{}
	var mu sync.Mutex
	forEach(members, func(m *npz.Member) {
		if !m.Served() || m.IsDir() {
			return
		}
		var me *npz.MethodError
		err := m.Verify(ctx, nil)
		if err == nil || errors.As(err, &me) {
			return
		}
		mu.Lock()
		out[m] = "reading fails: " + bare(err)
		mu.Unlock()
	})
	return out
}

// nameWidth caps the NAME column: a longer name gets a line of its own,
// so that one long name does not push every other column aside.
const nameWidth = 40

// Member states in a listing.
const (
	stateServed     = "served"     // in the tree, and read whole if verified
	stateUnreadable = "unreadable" // in the tree, but no byte can be read
	stateFailed     = "failed"     // in the tree, but reading it whole failed
	stateNotServed  = "not served" // not in the tree
	stateFolder     = "folder"     // a directory entry
)

// listing is what ls says of an archive, for the table and for JSON.
type listing struct {
	a       *npz.Archive
	members []memberRow
	counts  listCounts
}

// listCounts count members by state; folders are counted as served.
// verified counts the served members that --verify read whole without a
// fault.
type listCounts struct{ served, unreadable, failed, notServed, folders, verified int }

func (c *listCounts) add(d listCounts) {
	c.served += d.served
	c.unreadable += d.unreadable
	c.failed += d.failed
	c.notServed += d.notServed
	c.folders += d.folders
	c.verified += d.verified
}

// summary is a listing's last line: how many members are served, and
// how many are not, by why.
func (c *listCounts) summary(members int) string {
	s := fmt.Sprintf("%s, %d served", english.Plural(members, "member"), c.served+c.folders)
	for _, part := range []struct {
		n    int
		what string
	}{
		{c.verified, "verified"},
		{c.unreadable, "unreadable"},
		{c.failed, "failed verification"},
		{c.notServed, "not served"},
	} {
		if part.n > 0 {
			s += fmt.Sprintf(", %d %s", part.n, part.what)
		}
	}
	return s
}

type memberRow struct {
	m                    *npz.Member
	state                string
	dtype, shape, order  string
	note                 string
	verifyErr, readError string
}

// listArchive reads what a listing shows of every member; failures are
// verifyMembers' findings, nil when not verifying.
func listArchive(ctx context.Context, a *npz.Archive, failures map[*npz.Member]string) *listing {
	l := &listing{a: a}
	members := a.Members()
	resolveHeaders(ctx, members)
	for _, m := range members {
		r := memberRow{m: m, dtype: "-", shape: "-", order: "-"}
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(ctx); err == nil {
				r.dtype, r.shape, r.order = dtypeString(h.DType), shapeString(h.Shape), "C"
				if h.FortranOrder {
					r.order = "F"
				}
			}
		}
		r.verifyErr = failures[m]
		if err := m.ReadError(); err != nil {
			r.readError = bare(err)
		}
		switch {
		case !m.Served():
			r.state = stateNotServed
			l.counts.notServed++
		case m.IsDir():
			r.state = stateFolder
			l.counts.folders++
		case r.readError != "":
			r.state = stateUnreadable
			l.counts.unreadable++
		case r.verifyErr != "":
			r.state = stateFailed
			l.counts.failed++
		default:
			r.state = stateServed
			l.counts.served++
		}
		if failures != nil && (r.state == stateServed || r.state == stateFolder) {
			l.counts.verified++ // read whole, or a folder: nothing in it to fail
		}
		r.note = join(m.Reason(ctx), r.verifyErr)
		if m.Served() && m.Path() != strings.TrimSuffix(m.Name(), "/") {
			r.note = join("served as "+quoteName(m.Path()), r.note)
		}
		l.members = append(l.members, r)
	}
	return l
}

// tableHeading is the heading of ls's table.
var tableHeading = []string{"NAME", "DTYPE", "SHAPE", "ORDER", "BYTES", "METHOD", "RATIO", "NOTE"}

// writeTable prints one aligned line per member, the summary, then the
// archive's own problems.
func (l *listing) writeTable(w io.Writer, archive string, human bool) {
	writeTable(w, append([][]string{tableHeading}, l.rows("", human)...))
	fmt.Fprintln(w, l.counts.summary(len(l.members)))
	for _, p := range l.a.Problems() {
		fmt.Fprintf(w, "archive: %s\n", p)
	}
}

// rows are the table's lines, one per member, after a first column
// naming the archive when archive is not "".
func (l *listing) rows(archive string, human bool) [][]string {
	var rows [][]string
	for _, r := range l.members {
		m := r.m
		method := npz.MethodName(m.Method())
		if m.Encrypted() {
			method += "+encrypted"
		}
		ratio := "-"
		if m.Size() > 0 {
			ratio = strconv.FormatFloat(100*float64(m.CompressedSize())/float64(m.Size()), 'f', 1, 64) + "%"
		}
		dtype, size := r.dtype, strconv.FormatInt(m.Size(), 10)
		if human {
			size = humanSize(m.Size())
		}
		if m.IsDir() {
			dtype, method, ratio, size = "(folder)", "-", "-", "-"
		}
		row := []string{quoteName(m.Name()), dtype, r.shape, r.order, size, method, ratio, r.note}
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

// jsonMember is one member in ls --json, documented in the README.
type jsonMember struct {
	Name           string          `json:"name"`
	Path           string          `json:"path,omitempty"`
	State          string          `json:"state"`
	Folder         bool            `json:"folder,omitempty"`
	Method         string          `json:"method"`
	Encrypted      bool            `json:"encrypted,omitempty"`
	Size           int64           `json:"size"`
	CompressedSize int64           `json:"compressed_size"`
	CRC32          string          `json:"crc32"`
	DType          string          `json:"dtype,omitempty"`
	Descr          json.RawMessage `json:"descr,omitempty"`
	Shape          *[]int64        `json:"shape,omitempty"`         // [] for a 0-d array
	FortranOrder   *bool           `json:"fortran_order,omitempty"` // with shape
	Views          bool            `json:"views"`
	Reason         string          `json:"reason,omitempty"`
	ReadError      string          `json:"read_error,omitempty"`
	Verify         string          `json:"verify,omitempty"`
}

type jsonListing struct {
	Archive  string       `json:"archive"`
	Members  []jsonMember `json:"members"`
	Problems []string     `json:"problems"`
	Counts   struct {
		Members    int `json:"members"`
		Served     int `json:"served"`
		Unreadable int `json:"unreadable"`
		Failed     int `json:"failed"`
		NotServed  int `json:"not_served"`
	} `json:"counts"`
}

// writeJSON prints the listing as one indented JSON document.
func (l *listing) writeJSON(ctx context.Context, w io.Writer, archive string, verified bool) error {
	return writeJSON(w, l.json(ctx, archive, verified))
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // dtypes as numpy writes them: "<f4"
	return enc.Encode(v)
}

// json is the listing as ls --json gives it (documented in the README).
func (l *listing) json(ctx context.Context, archive string, verified bool) jsonListing {
	out := jsonListing{Archive: archive, Members: []jsonMember{}, Problems: l.a.Problems()}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	for _, r := range l.members {
		m := r.m
		j := jsonMember{
			Name: m.Name(), Path: m.Path(), State: r.state, Folder: m.IsDir(),
			Method: npz.MethodName(m.Method()), Encrypted: m.Encrypted(),
			Size: m.Size(), CompressedSize: m.CompressedSize(), CRC32: fmt.Sprintf("%08x", m.CRC32()),
			Views: m.HasViews(ctx), Reason: m.Reason(ctx), ReadError: r.readError,
		}
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(ctx); err == nil {
				shape := h.Shape
				if shape == nil {
					shape = []int64{}
				}
				fortran := h.FortranOrder
				j.DType, j.Shape, j.FortranOrder = h.DType.Str(), &shape, &fortran
				if h.DType.Record || h.DType.Subarray != nil {
					j.Descr = descrJSON(ctx, m)
				}
			}
		}
		if verified && !m.IsDir() && m.Served() && r.readError == "" {
			j.Verify = "ok"
			if r.verifyErr != "" {
				j.Verify = r.verifyErr
			}
		}
		out.Members = append(out.Members, j)
	}
	out.Counts.Members = len(l.members)
	out.Counts.Served, out.Counts.Unreadable = l.counts.served+l.counts.folders, l.counts.unreadable
	out.Counts.Failed, out.Counts.NotServed = l.counts.failed, l.counts.notServed
	return out
}

// descrJSON is the member's descr as its header.json gives it, or nil.
func descrJSON(ctx context.Context, m *npz.Member) json.RawMessage {
	js, err := m.HeaderJSON(ctx)
	if err != nil {
		return nil
	}
	var h struct {
		Descr json.RawMessage `json:"descr"`
	}
	if json.Unmarshal(js, &h) != nil {
		return nil
	}
	return h.Descr
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

// resolveHeaders reads the npy headers of the members with a few
// goroutines (each member's header is read once, and the reads are
// independent), so that listing a large archive does not wait on them one
// by one.
func resolveHeaders(ctx context.Context, members []*npz.Member) {
	forEach(members, func(m *npz.Member) {
		if m.IsNPY() && m.Served() {
			m.Header(ctx)
		}
	})
}

// forEach calls fn on every member from a few goroutines.
func forEach(members []*npz.Member, fn func(m *npz.Member)) {
	workers.Run(context.Background(), len(members), 8, func(_, i int) { fn(members[i]) })
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
			return fail(stderr, "inspect", fmt.Errorf("%s: %s", path, bare(err)))
		}
		return fail(stderr, "inspect", fmt.Errorf("%s: %s: %s", path, m.Name(), bare(err)))
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

// bare is an error's message without the package prefix ("npz: ",
// "zip: ") that a table row about one member does not need.
func bare(err error) string {
	s := err.Error()
	for _, p := range []string{"npz: ", "zip: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}
