package indexer

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/internal/testfiles"
	"github.com/npzfs/npzfs/npy"
)

const corpus = "../npz/testdata/"

// writeIndexable writes at path an archive as np.savez_compressed makes
// it, of a deflated array large enough to need an index (12 MiB of int32,
// 24 spans), two small deflated ones (which need none) and, stored, a
// third small one; and returns the path.
func writeIndexable(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, m := range []struct {
		name   string
		n      int
		method uint16
	}{{"big.npy", 3 << 20, zip.Deflate}, {"a.npy", 1000, zip.Deflate}, {"b.npy", 10, zip.Deflate}, {"c.npy", 10, zip.Store}} {
		hdr, err := npy.EncodeHeader("<i4", false, []int64{int64(m.n)})
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, len(hdr)+4*m.n)
		copy(data, hdr)
		x := uint32(7)
		for i := range m.n { // a random walk, as compressible as real data
			x += x>>13 ^ uint32(i)
			binary.LittleEndian.PutUint32(data[len(hdr)+4*i:], x%1000)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenKinds: Open tells an archive, a .npy file (by its bytes, not
// its name) and a folder apart, and says in one line why it cannot open
// what it cannot.
var summaryLine = regexp.MustCompile(`^indexed (\d+) of (\d+ deflated members?) \(.*\) in [\d.]+ s, \d+ MB/s: (.*); indexes in .*$`)

// TestIndex: Index builds the index of each deflated member that needs
// one and saves it; a second Index loads them; the report says so,
// member by member and in its summary; stored members and small deflated
// ones are counted, not indexed (nor saved: the index folder holds one
// index).
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	archive := writeIndexable(t, dir, "c.npz")
	opts := &dataset.Options{IndexDir: filepath.Join(dir, "index")}
	var p Progress
	rep, err := Index(context.Background(), archive, opts, &Options{Workers: 2}, &p)
	if err != nil {
		t.Fatal(err)
	}
	built, loaded, _, failed, unsaved := rep.Counts()
	if len(rep.Members) != 1 || rep.Members[0].Name != "big.npy" || built != 1 || loaded+failed+unsaved != 0 || rep.Small != 2 || rep.Stored != 1 || !rep.OK() {
		t.Fatalf("first Index: %+v", rep)
	}
	if !strings.Contains(rep.Summary(), ", 1 stored skipped, 2 small skipped;") {
		t.Errorf("summary %q", rep.Summary())
	}
	var files int
	filepath.WalkDir(rep.Store, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 1 {
		t.Errorf("%d files in the index folder, want 1 (the large member's index)", files)
	}
	if p.Total() != rep.Bytes() || p.Done() != rep.Bytes() {
		t.Errorf("progress %d of %d, want %d of %d", p.Done(), p.Total(), rep.Bytes(), rep.Bytes())
	}
	m := summaryLine.FindStringSubmatch(rep.Summary())
	if m == nil || m[1] != strconv.Itoa(built) || !strings.HasPrefix(m[3], strconv.Itoa(built)+" built") {
		t.Errorf("summary %q", rep.Summary())
	}
	rep, err = Index(context.Background(), archive, opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if built, loaded, _, _, _ := rep.Counts(); built != 0 || loaded != len(rep.Members) || !strings.Contains(rep.Summary(), "already saved") {
		t.Errorf("second Index: built %d, loaded %d: %s", built, loaded, rep.Summary())
	}
	// Nothing was inflated: no time or rate is given.
	if want := fmt.Sprintf("indexed 1 of 1 deflated member (%.1f MiB): 0 built, 1 already saved, 1 stored skipped, 2 small skipped;", float64(rep.Bytes())/(1<<20)); !strings.HasPrefix(rep.Summary(), want) {
		t.Errorf("second Index: %q, want it to start %q", rep.Summary(), want)
	}
	rep, err = Index(context.Background(), archive, opts, &Options{Verify: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := summaryLine.FindStringSubmatch(rep.Summary()); m == nil || !strings.HasPrefix(m[3], "0 built, 1 already saved") {
		t.Errorf("second Index, verifying: %q, want the time and rate of reading the member", rep.Summary())
	}

	stored := testfiles.Copy(t, corpus+"numpy_savez.npz", dir, "s.npz")
	rep, err = Index(context.Background(), stored, opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Summary(), "no deflated members: nothing to index (") || rep.Stored == 0 || !rep.OK() {
		t.Errorf("an archive of stored members: %s", rep.Summary())
	}

	// Small deflated members only: none needs an index; --verify reads
	// them all the same.
	small := testfiles.Copy(t, corpus+"numpy_savez_compressed.npz", dir, "small.npz")
	p = Progress{}
	rep, err = Index(context.Background(), small, opts, &Options{Verify: true}, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Summary(), "no member needs an index: nothing to index (") || rep.Small == 0 || len(rep.Members) != 0 || !rep.OK() {
		t.Errorf("an archive of small deflated members: %s", rep.Summary())
	}
	if p.Total() == 0 || p.Done() != p.Total() {
		t.Errorf("verifying small members: progress %d of %d", p.Done(), p.Total())
	}

	for _, tc := range []struct {
		opts *dataset.Options
		xo   *Options
		msg  string
	}{
		{&dataset.Options{}, nil, "no folder to keep indexes in"},
		{opts, &Options{Keys: []string{"nothere"}}, `no member "nothere"`},
	} {
		if _, err := Index(context.Background(), archive, tc.opts, tc.xo, nil); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Index: %v, want %q", err, tc.msg)
		}
	}
}

// TestIndexFolder: Index of a folder indexes every archive under it and
// names, without stopping, one it cannot open.
func TestIndexFolder(t *testing.T) {
	dir := t.TempDir()
	writeIndexable(t, dir, "one.npz")
	writeIndexable(t, dir, "sub/two.npz")
	os.WriteFile(filepath.Join(dir, "sub", "bad.npz"), []byte("not a zip"), 0o644)
	rep, err := Index(context.Background(), dir, &dataset.Options{IndexDir: t.TempDir()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.Failures) != 1 || rep.Failures[0].Archive != filepath.Join("sub", "bad.npz") || rep.Archives != 3 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(rep.Summary(), " of 3 archives (") {
		t.Errorf("summary %q", rep.Summary())
	}
	probs := rep.Problems()
	if len(probs) != 1 || !strings.HasPrefix(probs[0], "sub/bad.npz: ") {
		t.Errorf("problems %q", probs)
	}
}

// TestSummaryOfNothingToIndex checks the line for archives with no
// member that needs an index, whose verb agrees with the count.
func TestSummaryOfNothingToIndex(t *testing.T) {
	for _, tc := range []struct {
		stored, small int
		want          string
	}{
		{0, 0, "no deflated members: nothing to index"},
		{1, 0, "no deflated members: nothing to index (1 stored member needs none)"},
		{3, 0, "no deflated members: nothing to index (3 stored members need none)"},
		{0, 1, "no member needs an index: nothing to index (1 small deflated member needs none)"},
		{1, 1, "no member needs an index: nothing to index (1 stored member and 1 small deflated member need none)"},
		{2, 5, "no member needs an index: nothing to index (2 stored members and 5 small deflated members need none)"},
	} {
		r := &Report{Stored: tc.stored, Small: tc.small}
		if got := r.Summary(); got != tc.want {
			t.Errorf("%d stored, %d small: %q, want %q", tc.stored, tc.small, got, tc.want)
		}
	}
}
