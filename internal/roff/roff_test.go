package roff

import (
	"bytes"
	"testing"
)

// TestText: backslashes and hyphens are escaped, and a line that would
// start with a control character does not.
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`--cache-mb N`:     `\-\-cache\-mb N`,
		`C:\data`:          `C:\edata`,
		`.npz files`:       `\&.npz files`,
		`'quoted'`:         `\&'quoted'`,
		`plain text`:       `plain text`,
		`say "it" to me`:   `say "it" to me`,
		`a.b-c\d`:          `a.b\-c\ed`,
		`trailing-hyphen-`: `trailing\-hyphen\-`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := Quote(`npzfs "x" -y`), `"npzfs \(dqx\(dq \-y"`; got != want {
		t.Errorf("Quote = %q, want %q", got, want)
	}
}

// TestParagraphs: paragraphs are filled, and lines indented by two
// spaces are kept as they are, without the indent.
func TestParagraphs(t *testing.T) {
	var b bytes.Buffer
	New(&b).Paragraphs("One line,\nthen another.\n\nFor example:\n  npzfs ls a.npz\n  npzfs ls -h b.npz\nand more.\n")
	want := ".PP\nOne line,\nthen another.\n.PP\nFor example:\n.RS\n.nf\nnpzfs ls a.npz\nnpzfs ls \\-h b.npz\n.fi\n.RE\nand more.\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
