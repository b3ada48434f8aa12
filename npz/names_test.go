package npz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

func isMethodError(err error) bool {
	var me *MethodError
	return errors.As(err, &me)
}

func TestSanitize(t *testing.T) {
	long := strings.Repeat("x", 255)
	for _, tc := range []struct {
		name, path string
		dir        bool
		reason     string // substring; "" means served
	}{
		{"a.npy", "a.npy", false, ""},
		{"a/b/c.npy", "a/b/c.npy", false, ""},
		{"/abs.npy", "abs.npy", false, ""},
		{"//x//y.npy", "x/y.npy", false, ""},
		{"./a/./b.npy", "a/b.npy", false, ""},
		{"dir/", "dir", true, ""},
		{"dir//", "dir", true, ""},
		{"a/b/", "a/b", true, ""},
		{`back\slash.npy`, `back\slash.npy`, false, ""},
		{`..\x.npy`, `..\x.npy`, false, ""},
		{"...", "...", false, ""},
		{"..x/y", "..x/y", false, ""},
		{long, long, false, ""},
		{"d/" + long + "/", "d/" + long, true, ""},
		{"../x.npy", "", false, "'..'"},
		{"a/../x.npy", "", false, "'..'"},
		{"a/..", "", false, "'..'"},
		{"a/../", "", true, "'..'"},
		{"x\x00.npy", "", false, "NUL"},
		{long + "y", "", false, "255"},
		{"a/" + long + "y/b", "", false, "255"},
		{"", "", false, "no component"},
		{"/", "", true, "no component"},
		{".", "", false, "no component"},
		{"./", "", true, "no component"},
		{"//./", "", true, "no component"},
	} {
		path, dir, reason := sanitize(tc.name)
		if path != tc.path || dir != tc.dir || (tc.reason == "") != (reason == "") || !strings.Contains(reason, tc.reason) {
			t.Errorf("sanitize(%q) = %q, %v, %q; want %q, %v, %q", tc.name, path, dir, reason, tc.path, tc.dir, tc.reason)
		}
	}
}

// TestCollisions checks which of two colliding names is served, with
// members that are not valid .npy (so no views survive).
func TestCollisions(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		members []string // data is the name, so the winner is visible
		want    []string // the walk
		reasons map[int]string
	}{
		{"last duplicate wins", []string{"a.txt", "a.txt", "b.txt"},
			[]string{"a.txt", "b.txt"}, map[int]string{0: "shadowed by a later member"}},
		{"folder beats file", []string{"a", "a/b.txt"},
			[]string{"a/", "a/b.txt"}, map[int]string{0: "shadowed: a folder"}},
		{"folder beats later file", []string{"a/b.txt", "a"},
			[]string{"a/", "a/b.txt"}, map[int]string{1: "shadowed: a folder"}},
		{"directory entry beats file", []string{"a", "a/"},
			[]string{"a/"}, map[int]string{0: "shadowed: a folder"}},
		{"sanitised names collide", []string{"/x.txt", "./x.txt", "x.txt"},
			[]string{"x.txt"}, map[int]string{0: "shadowed by a later", 1: "shadowed by a later"}},
		{"deep folders", []string{"a/b/c/d.txt", "a/b/e.txt", "a/", "a/b/"},
			[]string{"a/", "a/b/", "a/b/c/", "a/b/c/d.txt", "a/b/e.txt"}, nil},
		{"member file takes the views name", []string{"k.npy", "k"},
			[]string{"k", "k.npy", "k.ra"}, map[int]string{0: "no views: a member file"}},
		{"views name taken, names sorting between", []string{"k.npy", "k-x", "k", "k!"},
			[]string{"k", "k!", "k-x", "k.npy", "k.ra"}, map[int]string{0: "no views: a member file"}},
		{"views name free, names sorting between", []string{"k.npy", "k-x", "k!"},
			[]string{"k/", "k/header.json", "k/raw.bin", "k!", "k-x", "k.npy", "k.ra"}, nil},
		{"valid views beside a folder", []string{"k.npy", "k/", "j.npy"},
			[]string{"j/", "j/header.json", "j/raw.bin", "j.npy", "j.ra", "k/", "k.npy", "k.ra"}, map[int]string{0: "no views: a folder"}},
		{"member folder takes the views name", []string{"k.npy", "k/other.txt"},
			[]string{"k/", "k/other.txt", "k.npy", "k.ra"}, map[int]string{0: "no views: a folder"}},
		{"member takes the .ra name", []string{"k.npy", "k.ra"},
			[]string{"k/", "k/header.json", "k/raw.bin", "k.npy", "k.ra"}, nil},
		{"views folder takes the .ra name", []string{"k.npy", "k.ra.npy"},
			[]string{"k/", "k/header.json", "k/raw.bin", "k.npy", "k.ra/", "k.ra/header.json", "k.ra/raw.bin", "k.ra.npy", "k.ra.ra"}, nil},
		{"skipped names", []string{"../up.txt", "ok.txt", "a/../b.txt"},
			[]string{"ok.txt"}, map[int]string{0: "'..'", 2: "'..'"}},
		{"views follow the served path", []string{"k.npy/.", "/j.npy"},
			[]string{"j/", "j/header.json", "j/raw.bin", "j.npy", "j.ra", "k/", "k/header.json", "k/raw.bin", "k.npy", "k.ra"}, nil},
		{"bare .npy", []string{".npy"}, []string{".npy"}, map[int]string{0: "only"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// .npy members are valid arrays holding their name; others
			// hold their name.
			content := map[string][]byte{}
			var ents []zent
			for _, n := range tc.members {
				data := []byte(n)
				if strings.HasSuffix(strings.TrimSuffix(n, "/."), ".npy") {
					data = npyOf(t, n)
				}
				content[n] = data
				ents = append(ents, zent{name: n, data: data})
			}
			a := openBytes(t, makeZip(t, ents))
			got := walk(t, a)
			if !slices.Equal(got, tc.want) {
				t.Errorf("tree %q, want %q", got, tc.want)
			}
			for i, m := range a.Members() {
				want, has := tc.reasons[i]
				r := m.Reason(context.Background())
				if has && !strings.Contains(r, want) {
					t.Errorf("member %d %q: reason %q, want %q", i, m.Name(), r, want)
				}
				if !has && r != "" && !strings.HasPrefix(r, "no views: npy") && !strings.HasPrefix(r, "no views: npz") {
					t.Errorf("member %d %q: unexpected reason %q", i, m.Name(), r)
				}
				if has != !m.Served() && !strings.HasPrefix(tc.reasons[i], "no views") && tc.reasons[i] != "only" {
					t.Errorf("member %d %q: served %v, reason %q", i, m.Name(), m.Served(), r)
				}
			}
			// The winner's bytes are served.
			for _, m := range a.Members() {
				if m.Served() && !m.IsDir() {
					n := lookupPath(a, m.Path())
					b := make([]byte, n.File(context.Background()).Size())
					if _, err := n.File(context.Background()).ReadAt(b, 0); err != nil || string(b) != string(content[m.Name()]) {
						t.Errorf("%q serves %q, %v", m.Path(), b, err)
					}
				}
			}
		})
	}
}

// npyOf is a .npy stream of a byte array holding s.
func npyOf(t *testing.T, s string) []byte {
	h, err := npy.EncodeHeader("|u1", false, []int64{int64(len(s))})
	if err != nil {
		t.Fatal(err)
	}
	return append(h, s...)
}

// TestNamesCorpus checks the served tree of names.npz, the archive of
// hostile and colliding names.
func TestNamesCorpus(t *testing.T) {
	a, err := Open(context.Background(), "testdata/names.npz", &Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	y := strings.Repeat("y", 251)
	want := []string{
		".npy",
		"a/", "a/header.json", "a/raw.bin", "a.npy", "a.ra", // a.ra, though "a" is a folder
		"abs/", "abs/header.json", "abs/raw.bin", "abs.npy", "abs.ra",
		"b/", "b/c/", "b/c/header.json", "b/c/raw.bin", "b/c.npy", "b/c.ra",
		`back\slash/`, `back\slash/header.json`, `back\slash/raw.bin`, `back\slash.npy`, `back\slash.ra`,
		// Empty views folders, and a .ra whose reads fail: broken headers.
		"bad_dict/", "bad_dict.npy", "bad_dict.ra", "bad_magic/", "bad_magic.npy", "bad_magic.ra",
		"c", "c.npy", "c.ra",
		"café/", "café/header.json", "café/raw.bin", "café.npy", "café.ra",
		"deep/", "deep/er/", "deep/er/" + y + "/", "deep/er/" + y + "/header.json", "deep/er/" + y + "/raw.bin", "deep/er/" + y + ".npy", "deep/er/" + y + ".ra",
		"dir/",
		"dot/", "dot/x/", "dot/x/header.json", "dot/x/raw.bin", "dot/x.npy", "dot/x.ra",
		"dup/", "dup/header.json", "dup/raw.bin", "dup.npy", "dup.ra",
		"not_npy/", "not_npy.npy", "not_npy.ra", "notes.txt",
		"objects/", "objects/header.json", "objects.npy", "objects.ra", // no raw.bin; a .ra whose reads fail: a pickle
		"short_data/", "short_data.npy", "short_data.ra",
		"snow☃/", "snow☃/header.json", "snow☃/raw.bin", "snow☃.npy", "snow☃.ra",
	}
	got := walk(t, a)
	if !slices.Equal(got, want) {
		t.Errorf("tree:\n%q\nwant:\n%q", got, want)
	}
	// A .ra listed for an array that has no RawArray form is a file of 1
	// byte whose reads fail, saying why.
	for _, key := range []string{"bad_dict", "bad_magic", "not_npy", "objects", "short_data"} {
		f := a.Root().Lookup(context.Background(), key+".ra").File(context.Background())
		_, _, _, xerr := f.Extent(context.Background())
		if _, err := f.ReadAt(make([]byte, 1), 0); f.Size() != 1 || err == nil || xerr == nil {
			t.Errorf("%s.ra: size %d, read error %v, extent error %v", key, f.Size(), err, xerr)
		}
		if r := a.Member(key + ".npy").Reason(context.Background()); r == "" {
			t.Errorf("%s.npy: no reason", key)
		}
	}
	// The member dup.npy that is served is the second (deflated) one.
	if m := a.Member("dup.npy"); m == nil || m.Index() != 4 || !m.Served() {
		t.Errorf("dup.npy: %+v", m)
	}
}

// TestListingsAgreeWithLookups: every name a folder of .npy members lists
// is found, and every name found is listed, whatever was read first: a
// broken member's views folder is there and empty (its reason says why),
// its .ra is there and fails its reads, and the listing never changes.
// Lookups made before the first listing give what it then lists.
func TestListingsAgreeWithLookups(t *testing.T) {
	for _, n := range []int{10, 1030} {
		ents := make([]zent, 0, n)
		for i := range n {
			name := "m" + strconv.Itoa(i) + ".npy"
			data := npyOf(t, name)
			if i == 7 {
				data = []byte("broken")
			}
			ents = append(ents, zent{name: name, data: data})
		}
		a := openBytes(t, makeZip(t, ents))
		if a.Root().Lookup(context.Background(), "m7.ra") == nil || a.Root().Lookup(context.Background(), "m8.ra") == nil {
			t.Error("before listing: m7.ra (broken) or m8.ra not found")
		}
		first := a.Root().Children(context.Background())
		if len(first) != 3*n {
			t.Fatalf("%d children, want %d", len(first), 3*n)
		}
		if _, err := a.Root().Lookup(context.Background(), "m7.ra").File(context.Background()).ReadAt(make([]byte, 1), 0); err == nil {
			t.Error("m7.ra reads")
		}
		m7 := a.Root().Lookup(context.Background(), "m7")
		if m7 == nil || !m7.IsDir() || len(m7.Children(context.Background())) != 0 || m7.Lookup(context.Background(), "raw.bin") != nil {
			t.Error("broken member's views folder is not there and empty")
		}
		if v := a.Root().Lookup(context.Background(), "m8"); v == nil || v.Lookup(context.Background(), "raw.bin") == nil || len(v.Children(context.Background())) != 2 {
			t.Error("m8/raw.bin not found")
		}
		again := a.Root().Children(context.Background())
		if len(again) != len(first) {
			t.Errorf("%d children after lookups, %d before", len(again), len(first))
		}
		for _, c := range again {
			if l := a.Root().Lookup(context.Background(), c.Name()); l == nil || l.Ino() != c.Ino() {
				t.Errorf("%s listed but not found", c.Name())
			}
		}
		if r := a.Member("m7.npy").Reason(context.Background()); !strings.Contains(r, "no views") {
			t.Errorf("reason %q", r)
		}
	}
}

// TestOpenLogIsCapped: an archive of many members that are not served
// names the first maxOpenNotes of them in the log, then says how many
// more there are, instead of a line each.
func TestOpenLogIsCapped(t *testing.T) {
	const bad = maxOpenNotes + 500
	var ents []zent
	for i := 0; i < bad; i++ {
		ents = append(ents, zent{name: fmt.Sprintf("../escape%05d.npy", i), data: []byte("x")})
	}
	ents = append(ents, zent{name: "good.npy", data: npyOf(t, "<f4")})
	z := makeZip(t, ents)
	var lines []string
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{Logf: func(f string, args ...any) {
		lines = append(lines, fmt.Sprintf(f, args...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != maxOpenNotes+1 {
		t.Fatalf("%d log lines, want %d", len(lines), maxOpenNotes+1)
	}
	if !strings.Contains(lines[0], "escape00000.npy") || !strings.Contains(lines[0], "not served") {
		t.Errorf("first line: %s", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "and 500 more members") {
		t.Errorf("last line: %s", last)
	}
	if a.Root().Lookup(context.Background(), "good.npy") == nil {
		t.Errorf("good.npy is not served")
	}
	var notServed int
	for _, m := range a.Members() {
		if !m.Served() {
			notServed++
		}
	}
	if notServed != bad {
		t.Errorf("%d members not served, want %d (the cap is on the log only)", notServed, bad)
	}
}

// TestLazyLogIsCapped: notes written after opening (members found to have
// no views as their folders are looked into) share the cap: past it, one
// line says the rest are not logged.
func TestLazyLogIsCapped(t *testing.T) {
	const bad = maxOpenNotes + 300
	var ents []zent
	for i := 0; i < bad; i++ {
		ents = append(ents, zent{name: fmt.Sprintf("b%05d.npy", i), data: []byte("not an npy")})
	}
	z := makeZip(t, ents)
	var mu sync.Mutex
	var lines []string
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{Logf: func(f string, args ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, args...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range a.Root().Children(context.Background()) {
		c.Children(context.Background()) // looks into every views folder: every header is broken
	}
	if len(lines) != maxOpenNotes+1 {
		t.Fatalf("%d log lines, want %d", len(lines), maxOpenNotes+1)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "they are not logged") {
		t.Errorf("last line: %s", last)
	}
}
