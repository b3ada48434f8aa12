// Package testfiles lays out files for tests: copies of the test corpus
// placed where a test wants them.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Copy copies the file src to dir/rel, making the folders rel names, and
// returns the new path. It ends the test on any error.
func Copy(t testing.TB, src, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
