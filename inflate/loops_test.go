package inflate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLoopsGenerated: loops.go is what genloops.go makes of
// loops.go.tmpl now (go generate was run after the template changed).
func TestLoopsGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "loops.go")
	if b, err := exec.Command("go", "run", "genloops.go", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("go run genloops.go: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("loops.go"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("loops.go is not what loops.go.tmpl makes (%v): run go generate", err)
	}
}
