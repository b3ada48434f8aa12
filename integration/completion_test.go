//go:build linux

package integration

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/shellcomp"
)

// TestCompletionOffersMountPoints: the completion scripts offer the live
// npzfs mounts for unmount and status, a mount point with a space in its
// name as one word, and nothing that is not an npzfs mount.
func TestCompletionOffersMountPoints(t *testing.T) {
	needFuse(t)
	archive, _ := testArchive(t)
	dir := filepath.Join(t.TempDir(), "my data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	clearLater(t, dir)
	if r := npzfs(t, "mount", archive, dir); r.code != 0 {
		t.Fatalf("npzfs mount: exit %d: %s", r.code, r.stderr)
	}
	lines := []string{"npzfs unmount ", "npzfs status ", "npzfs unmount " + filepath.Dir(dir) + `/my\ d`, "npzfs status '" + filepath.Dir(dir) + "/my"}
	for _, shell := range []string{shellcomp.Bash, shellcomp.Fish, shellcomp.Zsh} {
		t.Run(shell, func(t *testing.T) {
			r := npzfs(t, "completion", strings.TrimSuffix(shell, "-sourced"))
			if r.code != 0 {
				t.Fatalf("npzfs completion %s: exit %d: %s", shell, r.code, r.stderr)
			}
			script := filepath.Join(t.TempDir(), "npzfs."+shell)
			if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			offers, err := shellcomp.Complete(shell, script, t.TempDir(), lines)
			if errors.Is(err, shellcomp.ErrNoShell) {
				t.Skipf("%v (Debian: apt-get install bash zsh fish)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range lines {
				if !slices.Contains(offers[i], dir) {
					t.Errorf("%q offers %q, without %s", line, offers[i], dir)
				}
				for _, o := range offers[i] {
					if m, ok := mountOf(o); !ok || m.FSType != "fuse.npzfs" {
						t.Errorf("%q offers %s, not an npzfs mount", line, o)
					}
				}
			}
		})
	}
}
