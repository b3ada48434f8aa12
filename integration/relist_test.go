//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLongListingAfterAPlainOne: the kernel keeps a folder's listing,
// and a plain `ls` of a large folder leaves it without attributes past
// the first reply. `ls -l` after it must not look every name up one by
// one: the daemon drops the kept listing at the first lookup, and the
// rest of the listing comes again, with attributes. Counted in the
// daemon's log of requests; the listing is checked entry for entry.
func TestLongListingAfterAPlainOne(t *testing.T) {
	const n = 4000 // arrays: 3 entries each
	archive := manyArrays(t, n)
	logf := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, archive, "--debug", "--log", logf)
	if out, err := exec.Command("ls", dir).Output(); err != nil {
		t.Fatal(err)
	} else if got := bytes.Count(out, []byte("\n")); got != 3*n {
		t.Fatalf("ls: %d entries, want %d", got, 3*n)
	}
	before, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ls", "-l", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	if len(lines) != 3*n+1 { // and "total"
		t.Fatalf("ls -l: %d lines, want %d", len(lines), 3*n+1)
	}
	for _, l := range lines[1:] {
		if !bytes.HasPrefix(l, []byte("dr-xr-xr-x")) && !bytes.HasPrefix(l, []byte("-r--r--r--")) {
			t.Fatalf("ls -l: %q", l)
		}
	}
	after, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	lookups := bytes.Count(after[len(before):], []byte(": LOOKUP "))
	t.Logf("ls -l of %d entries after ls: %d lookups", 3*n, lookups)
	if lookups > n { // a third of the names; each one alone without the drop
		t.Errorf("ls -l of %d entries after ls made %d lookups", 3*n, lookups)
	}
}
