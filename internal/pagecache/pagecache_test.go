//go:build linux

package pagecache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResidentAndDrop: a file just written and synced is held whole;
// dropped, none of it is; read again, all of it is.
func TestResidentAndDrop(t *testing.T) {
	// In the package's folder, not TMPDIR, which may be a tmpfs, whose
	// pages cannot be dropped.
	dir, err := os.MkdirTemp(".", "pagecache-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*os.Getpagesize()+10)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	pages, err := Resident(f)
	if err != nil || len(pages) != 4 {
		t.Fatalf("Resident: %v pages, %v; want 4", len(pages), err)
	}
	if all, err := All(f); !all || err != nil {
		t.Errorf("All after a write: %v, %v", all, err)
	}
	if err := Drop(f); err != nil {
		t.Fatal(err)
	}
	pages, err = Resident(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range pages {
		if in {
			t.Errorf("page %d held after Drop", i)
		}
	}
	if _, err := f.ReadAt(make([]byte, 3*os.Getpagesize()+10), 0); err != nil {
		t.Fatal(err)
	}
	if all, err := All(f); !all || err != nil {
		t.Errorf("All after a read: %v, %v", all, err)
	}
}
