package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/npzfs/npzfs/npz"
)

// manifest is what scripts/testdata/npz_corpus.py wrote beside each
// archive of npz/testdata (what Python and numpy read from it), of which
// these tests need the members' sizes, methods and hashes.
type manifest struct{ Members []manifestMember }

// manifestMember is one member in a manifest.
type manifestMember struct {
	NameHex        string `json:"name_hex"`
	IsDir          bool   `json:"is_dir"`
	Readable       bool
	Method         uint16
	Size           int64
	CompressedSize int64 `json:"compressed_size"`
	CRC32          uint32
	SHA256         string
	NPY            *npyFacts
}

// npyFacts are what numpy read of a member's header.
type npyFacts struct {
	DataOffset   int64 `json:"data_offset"`
	DataLength   int64 `json:"data_length"`
	Descr        any
	Shape        []int64
	FortranOrder bool `json:"fortran_order"`
}

// corpus lists npz's test archives, each with its manifest.
func corpus(t *testing.T) map[string]*manifest {
	t.Helper()
	paths, err := filepath.Glob("../npz/testdata/*.npz")
	if err != nil || len(paths) < 10 {
		t.Fatalf("corpus: %d archives, %v", len(paths), err)
	}
	out := map[string]*manifest{}
	for _, p := range paths {
		b, err := os.ReadFile(strings.TrimSuffix(p, ".npz") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var m manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out[p] = &m
	}
	return out
}

// table reads the whole member table, count members a request (0: as
// many as the server gives).
func (c *pipeClient) table(count int, headers bool) []entry {
	c.t.Helper()
	var out []entry
	for {
		q := map[string]any{"kind": "table", "first": len(out), "headers": headers}
		if count > 0 {
			q["count"] = count
		}
		rp := c.call(q)
		if rp.Kind != "table" || rp.First != int64(len(out)) {
			c.t.Fatalf("table from %d: %s", len(out), rp)
		}
		out = append(out, rp.Members...)
		if int64(len(out)) == rp.Total {
			return out
		}
		if len(rp.Members) == 0 {
			c.t.Fatalf("an empty table reply before the end: %s", rp)
		}
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestTableCorpus compares the member table of every corpus archive
// with what Python and numpy read from it, and reads the bytes at each
// stored member's archive_offset in the archive file.
func TestTableCorpus(t *testing.T) {
	for path, man := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			a := openFile(t, path)
			c := startServe(t, a, nil)
			hello := c.call(map[string]any{"kind": "hello", "version": 1})
			if hello.Kind != "hello" || hello.Archive.Members != len(man.Members) || hello.Limits.MaxChunk != MaxChunk {
				t.Fatalf("hello: %s", hello)
			}
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			full := c.table(0, true)
			if len(full) != len(man.Members) {
				t.Fatalf("%d members, want %d", len(full), len(man.Members))
			}
			for i, e := range full {
				checkEntry(t, &e, i, man, file)
			}
			// Pages of 2 give the same table, and without headers the
			// same facts of the directory.
			if paged := c.table(2, true); !slices.EqualFunc(paged, full, sameEntry) {
				t.Errorf("pages of 2 differ:\n%v\n%v", paged, full)
			}
			for i, e := range c.table(0, false) {
				want := full[i]
				if want.Kind != kindFolder {
					want.Kind = kindMember
				}
				want.Readable = e.Readable // with headers, a start that cannot be read is not
				want.Reason = e.Reason
				want.ArchiveOffset, want.Descr, want.DType, want.Shape, want.FortranOrder = nil, "", "", nil, nil
				want.DataOffset, want.DataLength, want.HeaderError = nil, nil, ""
				if !sameEntry(e, want) {
					t.Errorf("without headers: %+v, want %+v", e, want)
				}
			}
		})
	}
}

func sameEntry(a, b entry) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// checkEntry compares member i's entry with the manifest.
func checkEntry(t *testing.T, e *entry, i int, man *manifest, file []byte) {
	t.Helper()
	want := man.Members[i]
	name, _ := hex.DecodeString(want.NameHex) // the bytes: Python cuts a name at a NUL
	if utf8.Valid(name) && e.Name != string(name) {
		t.Errorf("member %d: name %q, want %q", i, e.Name, name)
	}
	if e.Index != i || e.Size != want.Size ||
		e.CompressedSize != want.CompressedSize || e.Method != npz.MethodName(want.Method) || e.CRC32 != want.CRC32 {
		t.Errorf("member %d: %+v, want %+v", i, e, want)
	}
	if e.Key != strings.TrimSuffix(e.Name, ".npy") {
		t.Errorf("member %d: key %q of %q", i, e.Key, e.Name)
	}
	switch {
	case want.IsDir:
		if e.Kind != kindFolder || e.Readable {
			t.Errorf("member %d, a folder: %+v", i, e)
		}
		return
	case e.Readable != want.Readable:
		t.Errorf("member %d: readable %v (%s), numpy says %v", i, e.Readable, e.Reason, want.Readable)
	case !e.Readable && e.Reason == "":
		t.Errorf("member %d: unreadable with no reason", i)
	}
	if want.NPY != nil && e.Readable {
		n := want.NPY
		if e.Kind != kindArray || e.HeaderError != "" || *e.DataOffset != n.DataOffset || *e.DataLength != n.DataLength ||
			!slices.Equal(*e.Shape, n.Shape) || *e.FortranOrder != n.FortranOrder {
			t.Errorf("member %d: %+v, want %+v", i, e, n)
		}
		if s, ok := n.Descr.(string); ok && e.Descr != "'"+s+"'" {
			t.Errorf("member %d: descr %s, want '%s'", i, e.Descr, s)
		}
	}
	if e.ArchiveOffset != nil {
		if want.Method != 0 || *e.ArchiveOffset+e.Size > int64(len(file)) || sha(file[*e.ArchiveOffset:*e.ArchiveOffset+e.Size]) != want.SHA256 {
			t.Errorf("member %d: archive_offset %d does not hold its bytes", i, *e.ArchiveOffset)
		}
	} else if want.Method == 0 && e.Readable {
		t.Errorf("member %d: stored, but no archive_offset", i)
	}
}

// TestTableRange: a table past the end is refused; one at the end is
// empty; a negative count is refused.
func TestTableRange(t *testing.T) {
	a := openFile(t, "../npz/testdata/numpy_savez.npz")
	c := startServe(t, a, nil)
	n := a.Len()
	if rp := c.call(map[string]any{"kind": "table", "first": n}); rp.Kind != "table" || len(rp.Members) != 0 || rp.Total != int64(n) {
		t.Errorf("table at the end: %s", rp)
	}
	for _, q := range []map[string]any{
		{"kind": "table", "first": n + 1},
		{"kind": "table", "first": -1},
		{"kind": "table", "count": -1},
	} {
		if rp := c.call(q); rp.Kind != "error" || rp.Code != codeRange {
			t.Errorf("%v: %s", q, rp)
		}
	}
}
