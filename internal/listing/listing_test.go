package listing

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

// TestOf: each member of hostile.Unreadable gets its state, and the
// listing its counts, with and without reading the members whole; the
// JSON document says the same.
func TestOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.npz")
	if err := os.WriteFile(path, hostile.Unreadable(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := npz.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, verify := range []bool{false, true} {
		l := Of(ctx, a, verify)
		want := map[string]string{"good.txt": Served, "../escape.txt": NotServed, "lzma.npy": Unreadable}
		for _, r := range l.Rows {
			if r.State != want[r.Member.Name()] {
				t.Errorf("verify %v: %s is %q, want %q", verify, r.Member.Name(), r.State, want[r.Member.Name()])
			}
		}
		wantCounts := Counts{Served: 1, Unreadable: 1, NotServed: 1}
		if verify {
			wantCounts.Verified = 1
		}
		if l.Counts != wantCounts || l.Verified() {
			t.Errorf("verify %v: counts %+v, verified %v; want %+v, false", verify, l.Counts, l.Verified(), wantCounts)
		}
		js := l.JSON(ctx, "u.npz")
		if js.Counts.Members != 3 || js.Counts.Served != 1 || js.Counts.Unreadable != 1 || js.Counts.NotServed != 1 {
			t.Errorf("verify %v: JSON counts %+v", verify, js.Counts)
		}
		for _, m := range js.Members {
			wantVerify := ""
			if verify && m.Name == "good.txt" {
				wantVerify = "ok"
			}
			if m.Verify != wantVerify {
				t.Errorf("verify %v: %s's verify is %q, want %q", verify, m.Name, m.Verify, wantVerify)
			}
			if m.Name == "lzma.npy" && m.ReadError == "" {
				t.Errorf("lzma.npy has no read error")
			}
		}
	}
}

func TestDTypeString(t *testing.T) {
	one := &npy.DType{Record: true, Fields: []npy.Field{{Name: "a"}}, ItemSize: 1}
	if got := dtypeString(one); got != "record(1 field, 1 byte)" {
		t.Errorf("a record of one byte-sized field: %q", got)
	}
	if got := shapeString([]int64{3}); got != "(3,)" {
		t.Errorf("shape (3,): %q", got)
	}
}
