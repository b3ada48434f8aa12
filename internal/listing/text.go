package listing

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/npzfs/npzfs/internal/english"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

// Table is the listing of several archives as one table, as npzfs ls
// prints a folder's: each line starts with an ARCHIVE column, the
// archive's name; the last line counts archives and members, and the
// archives' own problems follow it.
type Table struct {
	Human             bool // sizes with units (1.5K, 234M), as ls -h
	rows              [][]string
	archives, members int
	counts            Counts
	problems          []string
}

// Add puts the listing l of the archive name in the table.
func (t *Table) Add(l *Listing, name string) {
	t.archives++
	t.members += len(l.Rows)
	t.counts.Add(l.Counts)
	t.rows = append(t.rows, l.tableRows(Quote(name), t.Human)...)
	for _, p := range l.Archive.Problems() {
		t.problems = append(t.problems, fmt.Sprintf("archive %s: %s", Quote(name), p))
	}
}

// Write prints the table, its summary and the archives' problems.
func (t *Table) Write(w io.Writer) {
	if len(t.rows) > 0 {
		writeTable(w, append([][]string{append([]string{"ARCHIVE"}, heading...)}, t.rows...))
	}
	fmt.Fprintf(w, "%s, %s\n", english.Plural(t.archives, "archive"), summary(&t.counts, t.members))
	for _, p := range t.problems {
		fmt.Fprintln(w, p)
	}
}

// nameWidth caps the NAME column: a longer name gets a line of its own,
// so that one long name does not push every other column aside.
const nameWidth = 40

// summary is a listing's last line: how many members are served, and
// how many are not, by why.
func summary(c *Counts, members int) string {
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

// heading is the heading of the table.
var heading = []string{"NAME", "DTYPE", "SHAPE", "ORDER", "BYTES", "METHOD", "RATIO", "NOTE"}

// WriteText prints the listing as npzfs ls does: one aligned line per
// member, the summary, then the archive's own problems; sizes with
// units when human.
func (l *Listing) WriteText(w io.Writer, human bool) {
	writeTable(w, append([][]string{heading}, l.tableRows("", human)...))
	fmt.Fprintln(w, summary(&l.Counts, len(l.Rows)))
	for _, p := range l.Archive.Problems() {
		fmt.Fprintf(w, "archive: %s\n", p)
	}
}

// tableRows are the table's lines, one per member, after a first column
// naming the archive when archive is not "".
func (l *Listing) tableRows(archive string, human bool) [][]string {
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
			size = english.Size(m.Size())
		}
		if m.IsDir() {
			dtype, method, ratio, size = "(folder)", "-", "-", "-"
		}
		note := join(r.Reason, r.Verify)
		if x := r.SOZip; x != nil {
			note = join(note, fmt.Sprintf("SOZip index: %d chunks of %s", x.Chunks, english.Size(x.ChunkSize)))
		}
		if m.Served() && m.Path() != strings.TrimSuffix(m.Name(), "/") {
			note = join("served as "+Quote(m.Path()), note)
		}
		row := []string{Quote(m.Name()), dtype, shape, order, size, method, ratio, note}
		if archive != "" {
			row = append([]string{archive}, row...)
		}
		rows = append(rows, row)
	}
	return rows
}

// writeTable aligns rows in columns two spaces apart; the first row is
// the heading; a first column headed NAME is at most nameWidth wide (a
// longer name goes on a line of its own; a first column naming archives,
// which each line must show, is as wide as its longest) and the last is
// not padded. BYTES and RATIO
// are right-aligned.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	capped := rows[0][0] == "NAME"
	for _, r := range rows {
		for i, c := range r {
			if n := utf8.RuneCountInString(c); n > width[i] && (i != 0 || !capped || n <= nameWidth) {
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

// Quote shows a name as it is unless it has characters that would
// break the columns (spaces, tabs, control characters), then Go-quoted.
func Quote(s string) string {
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
