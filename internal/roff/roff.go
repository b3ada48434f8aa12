// Package roff writes roff source with the man macros: the manual page
// npzfs help --man prints, made from the texts of npzfs --help.
package roff

import (
	"fmt"
	"io"
	"strings"
)

// Writer writes roff source to an io.Writer.
type Writer struct{ w io.Writer }

// New returns a Writer writing to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Printf writes roff source as it is.
func (r *Writer) Printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

// Paragraphs writes text, whose paragraphs are separated by blank lines,
// filled; runs of lines indented by two spaces stay as they are.
func (r *Writer) Paragraphs(text string) {
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		r.Printf(".PP\n")
		literal := false
		for _, line := range strings.Split(p, "\n") {
			indented := strings.HasPrefix(line, "  ")
			switch {
			case indented && !literal:
				r.Printf(".RS\n.nf\n")
			case !indented && literal:
				r.Printf(".fi\n.RE\n")
			}
			literal = indented
			if indented {
				line = line[2:]
			}
			r.Printf("%s\n", Text(line))
		}
		if literal {
			r.Printf(".fi\n.RE\n")
		}
	}
}

// Defs writes a list of terms and what they mean.
func (r *Writer) Defs(items [][2]string) {
	for _, it := range items {
		r.Printf(".TP\n.B %s\n%s\n", Text(it[0]), Text(it[1]))
	}
}

// Text escapes a line of text for roff: backslashes, hyphens (so
// that flags copy as typed) and a leading control character.
func Text(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// Quote is s as one quoted macro argument.
func Quote(s string) string {
	return `"` + strings.ReplaceAll(Text(s), `"`, `\(dq`) + `"`
}
