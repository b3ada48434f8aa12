//go:build linux

package tree

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/npz"
)

// TestOf: the tree of a folder counts its nodes from a walk that opens no
// archive (its folders, its archives, each .npy with its views) and the
// bytes of its archives; the tree of an archive is its archive's, found
// by inode number.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	writeNPZ(t, filepath.Join(dir, "sub", "a.npz"), 0, 5, "x")
	grid := npyBytes(t, 1, 6)
	os.WriteFile(filepath.Join(dir, "grid.npy"), grid, 0o644)
	os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("left out"), 0o644)
	ctx := context.Background()
	d, err := dataset.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tr, err := Of(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fi, _ := os.Stat(filepath.Join(dir, "sub", "a.npz"))
	if want := uint64(1 + 1 + 1 + npz.NodesPerArray()); tr.Nodes() != want || tr.Size() != fi.Size()+int64(len(grid)) {
		t.Errorf("nodes %d, size %d; want %d nodes (root, sub, a.npz, grid.npy and its views), %d bytes", tr.Nodes(), tr.Size(), want, fi.Size()+int64(len(grid)))
	}
	if open, _, ok := tr.ArchivesOpen(); !ok || open != 0 || lookup(t, tr.Root(), "sub/a.npz/x.npy") == nil {
		t.Errorf("archives open %d, %v; sub/a.npz/x.npy not found", open, ok)
	}

	a, err := dataset.Open(ctx, filepath.Join(dir, "sub", "a.npz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	at, err := Of(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := at.ArchivesOpen(); ok || at.Nodes() != a.Archive().MaxIno() || lookup(t, at.Root(), "x/raw.bin") == nil {
		t.Errorf("an archive's tree: nodes %d, x/raw.bin not found", at.Nodes())
	}
}
