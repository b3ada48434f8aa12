//go:build linux

package daemon

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLog: a mount's first message is written to its log, naming
// the source without its secrets; a log that does not take it is an
// error naming the log and why.
func TestCheckLog(t *testing.T) {
	var b bytes.Buffer
	if err := CheckLog(log.New(&b, "", 0), "buffer", "https://user:pw@host/a.npz?sig=x", "/mnt/a"); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "mounting https://host/a.npz on /mnt/a\n" {
		t.Errorf("logged %q", got)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // a write to it fails
	err = CheckLog(log.New(f, "", 0), "/var/log/x.log", "a.npz", "/mnt/a")
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write to the log /var/log/x.log: ") || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a log that takes nothing: %v", err)
	}
}
