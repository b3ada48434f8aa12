//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestFolderRenameOver: an archive of a folder mount renamed over by
// another of the same size and modification time (what cp -p, rsync -a,
// tar x and reproducible builds leave), while --max-open 1 has closed
// it, is another archive: every read of its members, stored and
// deflated, gives the old bytes, the new ones, or EIO, never a mix of old
// pages the kernel kept and new ones, however the kernel looks them up.
func TestFolderRenameOver(t *testing.T) {
	needNumpy(t)
	src := t.TempDir()
	gen := exec.Command(python, "-c", `import numpy as np, sys
d = sys.argv[1]
for name, v in (("old", 1.0), ("new", 2.0)):
    x = np.full((512, 1024), v, '<f4')
    np.savez(d + '/' + name + '-stored.npz', x=x)
    np.savez_compressed(d + '/' + name + '-deflated.npz', x=x)
np.savez(d + '/other.npz', y=np.arange(10))
`, src)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the archives: %v: %s", err, out)
	}
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, kind := range []string{"stored", "deflated"} {
		for _, v := range []string{"old", "new"} {
			os.Chtimes(filepath.Join(src, v+"-"+kind+".npz"), stamp, stamp)
		}
		os.Rename(filepath.Join(src, "old-"+kind+".npz"), filepath.Join(src, kind+".npz"))
	}
	mnt := mount(t, src, "--max-open", "1")
	wantOld, wantNew := map[string][]byte{}, map[string][]byte{}
	for _, kind := range []string{"stored", "deflated"} {
		member := filepath.Join(mnt, kind+".npz", "x.npy")
		b, err := os.ReadFile(member)
		if err != nil {
			t.Fatal(err)
		}
		wantOld[kind] = b
		// The new archive's bytes, as a fresh mount serves them.
		nb, err := os.ReadFile(filepath.Join(mount(t, filepath.Join(src, "new-"+kind+".npz")), "x.npy"))
		if err != nil || bytes.Equal(nb, b) || len(nb) != len(b) {
			t.Fatalf("%s: the new archive's x.npy: %d bytes, %v (same as the old: %v)", kind, len(nb), err, bytes.Equal(nb, b))
		}
		wantNew[kind] = nb
	}
	// Another archive used: --max-open 1 closes the first ones.
	if _, err := os.ReadFile(filepath.Join(mnt, "other.npz", "y.npy")); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"stored", "deflated"} {
		if err := os.Rename(filepath.Join(src, "new-"+kind+".npz"), filepath.Join(src, kind+".npz")); err != nil {
			t.Fatal(err)
		}
	}
	// Read again and again, through whatever the kernel still keeps of
	// the old archive's names, until the new archive is served.
	for _, kind := range []string{"stored", "deflated"} {
		member := filepath.Join(mnt, kind+".npz", "x.npy")
		served := false
		eventually(t, kind+": the new archive served", func() bool {
			b, err := os.ReadFile(member)
			switch {
			case err != nil:
				return false // EIO, or gone while the kernel looks again
			case bytes.Equal(b, wantOld[kind]):
				return false
			case bytes.Equal(b, wantNew[kind]):
				served = true
				return true
			}
			t.Fatalf("%s: a read gave %d bytes that are neither the old archive's nor the new one's", kind, len(b))
			return false
		})
		if !served {
			continue
		}
		if b, err := os.ReadFile(member); err != nil || !bytes.Equal(b, wantNew[kind]) {
			t.Errorf("%s: read again after the new archive was served: %d bytes, %v", kind, len(b), err)
		}
	}
}
