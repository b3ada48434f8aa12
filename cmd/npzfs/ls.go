package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

func init() {
	register("ls", &command{
		summary: "list an archive's members, and why any is not served",
		usage:   "[--verify] [--json] ARCHIVE",
		help:    lsHelp,
		run:     runLs,
	})
}

func runLs(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("ls", stdout, stderr)
	verify := fl.Bool("verify", false, "read every member whole and check its CRC-32: say which ones fail to read (what the mount answers with an I/O error), and exit 1 if any does")
	asJSON := fl.Bool("json", false, "print one JSON document: the archive's problems and one object per member")
	var rf remoteFlags
	rf.add(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if err := rf.check(); err != nil {
		return usageError(stderr, "ls", err.Error())
	}
	if fl.NArg() != 1 {
		return argsError(stderr, "ls", fl.Args(), 1, "ARCHIVE")
	}
	a, err := openArchive(fl.Arg(0), nil, &rf)
	if err != nil {
		return fail(stderr, "ls", err)
	}
	defer a.Close()
	var failures map[*npz.Member]string
	if *verify {
		failures = verifyMembers(a.Members())
	}
	l := listArchive(a.Archive, failures)
	if *asJSON {
		err = l.writeJSON(stdout, fl.Arg(0), *verify)
	} else {
		l.writeTable(stdout)
	}
	if err != nil {
		return fail(stderr, "ls", err)
	}
	if *verify && (l.counts.unreadable > 0 || l.counts.failed > 0) {
		return exitFail
	}
	return exitOK
}

// verifyMembers reads every served member whole, a few at a time, and
// checks the CRC-32 of stored ones (the inflater checks deflated ones). It
// returns why each member that fails does, unless its reason already says
// it cannot be read.
func verifyMembers(members []*npz.Member) map[*npz.Member]string {
	out := map[*npz.Member]string{}
	var mu sync.Mutex
	forEach(members, func(m *npz.Member) {
		f := m.File()
		if !m.Served() || f == nil {
			return
		}
		var me *npz.MethodError
		err := readWhole(f, m.Method() == 0 && m.HasCRC(), m.CRC32())
		if err == nil || errors.As(err, &me) {
			return
		}
		mu.Lock()
		out[m] = "reading fails: " + bare(err)
		mu.Unlock()
	})
	return out
}

// readWhole reads f to its end with one buffer; with checkCRC it checks
// the bytes' CRC-32.
func readWhole(f *npz.File, checkCRC bool, want uint32) error {
	buf := make([]byte, 1<<20)
	var crc uint32
	for off := int64(0); off < f.Size(); {
		n, err := f.ReadAt(buf, off)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		off += int64(n)
		if err == io.EOF && off == f.Size() {
			break
		}
		if err != nil {
			return err
		}
	}
	if checkCRC && crc != want {
		return fmt.Errorf("CRC-32 of the bytes is %08x, the archive says %08x", crc, want)
	}
	return nil
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
	counts  struct{ served, unreadable, failed, notServed int }
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
func listArchive(a *npz.Archive, failures map[*npz.Member]string) *listing {
	l := &listing{a: a}
	members := a.Members()
	resolveHeaders(members)
	for _, m := range members {
		r := memberRow{m: m, dtype: "-", shape: "-", order: "-"}
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(); err == nil {
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
		r.note = join(m.Reason(), r.verifyErr)
		if m.Served() && m.Path() != strings.TrimSuffix(m.Name(), "/") {
			r.note = join("served as "+quoteName(m.Path()), r.note)
		}
		l.members = append(l.members, r)
	}
	return l
}

// summary is the listing's last line: how many members are served, and
// how many are not, by why.
func (l *listing) summary() string {
	folders := 0
	for _, r := range l.members {
		if r.state == stateFolder {
			folders++
		}
	}
	s := fmt.Sprintf("%d members, %d served", len(l.members), l.counts.served+folders)
	for _, part := range []struct {
		n    int
		what string
	}{
		{l.counts.unreadable, "unreadable"},
		{l.counts.failed, "failed verification"},
		{l.counts.notServed, "not served"},
	} {
		if part.n > 0 {
			s += fmt.Sprintf(", %d %s", part.n, part.what)
		}
	}
	return s
}

// writeTable prints one aligned line per member, the summary, then the
// archive's own problems.
func (l *listing) writeTable(w io.Writer) {
	rows := [][]string{{"NAME", "DTYPE", "SHAPE", "ORDER", "BYTES", "METHOD", "RATIO", "NOTE"}}
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
		if m.IsDir() {
			dtype, method, ratio, size = "(folder)", "-", "-", "-"
		}
		rows = append(rows, []string{quoteName(m.Name()), dtype, r.shape, r.order, size, method, ratio, r.note})
	}
	writeTable(w, rows)
	fmt.Fprintln(w, l.summary())
	for _, p := range l.a.Problems() {
		fmt.Fprintf(w, "archive: %s\n", p)
	}
}

// jsonMember is one member in ls --json, documented in the README.
type jsonMember struct {
	Name           string  `json:"name"`
	Path           string  `json:"path,omitempty"`
	State          string  `json:"state"`
	Folder         bool    `json:"folder,omitempty"`
	Method         string  `json:"method"`
	Encrypted      bool    `json:"encrypted,omitempty"`
	Size           int64   `json:"size"`
	CompressedSize int64   `json:"compressed_size"`
	CRC32          string  `json:"crc32"`
	DType          string  `json:"dtype,omitempty"`
	Shape          []int64 `json:"shape,omitempty"`
	FortranOrder   bool    `json:"fortran_order,omitempty"`
	Views          bool    `json:"views"`
	Reason         string  `json:"reason,omitempty"`
	ReadError      string  `json:"read_error,omitempty"`
	Verify         string  `json:"verify,omitempty"`
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
func (l *listing) writeJSON(w io.Writer, archive string, verified bool) error {
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
			Views: m.HasViews(), Reason: m.Reason(), ReadError: r.readError,
		}
		if m.IsNPY() && m.Served() {
			if h, err := m.Header(); err == nil {
				j.DType, j.Shape, j.FortranOrder = r.dtype, h.Shape, h.FortranOrder
				if j.Shape == nil {
					j.Shape = []int64{}
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
	out.Counts.Served, out.Counts.Unreadable = l.counts.served, l.counts.unreadable
	out.Counts.Failed, out.Counts.NotServed = l.counts.failed, l.counts.notServed
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeTable aligns rows in columns two spaces apart; the first column is
// at most nameWidth wide (a longer cell goes on a line of its own) and the
// last is not padded. BYTES and RATIO are right-aligned.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if n := utf8.RuneCountInString(c); n > width[i] && (i != 0 || n <= nameWidth) {
				width[i] = n
			}
		}
	}
	right := map[int]bool{4: true, 6: true}
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
func resolveHeaders(members []*npz.Member) {
	forEach(members, func(m *npz.Member) {
		if m.IsNPY() && m.Served() {
			m.Header()
		}
	})
}

// forEach calls fn on every member from a few goroutines.
func forEach(members []*npz.Member, fn func(m *npz.Member)) { forEachN(members, 8, fn) }

// forEachN calls fn for each member, in n goroutines.
func forEachN(members []*npz.Member, n int, fn func(m *npz.Member)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(n, 1), len(members)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(members)) {
					return
				}
				fn(members[i])
			}
		}()
	}
	wg.Wait()
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
		return fmt.Sprintf("record(%d fields, %d bytes)", len(d.Fields), d.ItemSize)
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
func inspectArchive(path, key string, rf *remoteFlags, stdout, stderr io.Writer) int {
	if err := notAnNPY(path); err != nil {
		return fail(stderr, "inspect", fmt.Errorf("%v (without a key)", err))
	}
	a, err := openArchive(path, nil, rf)
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	defer a.Close()
	path = shown(path)
	var m *npz.Member
	switch ms := a.Members(); {
	case key == "" && len(ms) == 1 && !ms[0].HasCRC():
		m = ms[0] // a remote .npy: an archive of itself alone
	case key == "":
		return usageError(stderr, "inspect", fmt.Sprintf("%s is an archive: name one of its keys: %s", path, keyList(a.Archive)))
	case strings.HasSuffix(key, ".npy"):
		m = a.Member(key)
	default:
		if m = a.Member(key + ".npy"); m == nil {
			m = a.Member(key)
		}
	}
	if m == nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: no member %q; its keys: %s", path, key, keyList(a.Archive)))
	}
	js, err := m.HeaderJSON()
	if err != nil {
		return fail(stderr, "inspect", fmt.Errorf("%s: %s: %v", path, m.Name(), err))
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
