package npy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlainJSONStrings: strings written without the encoder are exactly
// what encoding/json writes.
func TestPlainJSONStrings(t *testing.T) {
	for _, s := range []string{"", "descr", "<f8", "a b ~!@#$%^&*()<>&", "x\"y", `back\slash`, "tab\t", "café", "\u2028", "\x7f", "\x00"} {
		var w, enc jsonWriter
		w.str(s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		enc.b.WriteString(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(want)))
		if w.b.String() != enc.b.String() {
			t.Errorf("%q: wrote %s, encoding/json %s", s, w.b.String(), enc.b.String())
		}
	}
}
