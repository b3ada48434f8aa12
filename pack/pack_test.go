package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/npz"
)

var modes = []Compress{Keep, None, Deflate, Auto}

// noise is n bytes that do not compress.
func noise(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// synthetic is an archive of every kind of member pack meets (44), written
// by archive/zip (with data descriptors): arrays of sizes about the
// chunk (MinChunk), stored and deflated, compressible and not, a Fortran
// order one, object arrays, a broken .npy, other members, folders,
// duplicate and non-ASCII names.
func synthetic(t *testing.T) string {
	t.Helper()
	var ms []hostile.Member
	for i, n := range []int{0, 1, 100, MinChunk - 128, MinChunk - 127, 3 * MinChunk, 3*MinChunk + 7, 10000} {
		for _, deflate := range []bool{false, true} {
			ms = append(ms,
				hostile.Member{Name: fmt.Sprintf("a%d%v.npy", i, deflate), Data: hostile.NPY("|u1", []int64{int64(n)}, hostile.Bytes(n, int64(i))), Deflate: deflate},
				hostile.Member{Name: fmt.Sprintf("noise%d%v.npy", i, deflate), Data: hostile.NPY(">i2", []int64{int64(n / 2)}, noise(n/2*2, uint64(i))), Deflate: deflate})
		}
	}
	fortran := hostile.NPYDict(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (30, 50), }", hostile.Bytes(12000, 9))
	objects := hostile.NPYDict(1, "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", []byte("\x80\x03a pickle, in name only."))
	ms = append(ms,
		hostile.Member{Name: "fortran.npy", Data: fortran},
		hostile.Member{Name: "objects.npy", Data: objects},
		hostile.Member{Name: "objects.z.npy", Data: objects, Deflate: true},
		hostile.Member{Name: "broken.npy", Data: []byte("\x93NUMPY not a header" + strings.Repeat("x", 5000))},
		hostile.Member{Name: "notes.txt", Data: bytes.Repeat([]byte("some text\n"), 1000), Deflate: true},
		hostile.Member{Name: "raw.bin", Data: noise(9000, 7)},
		hostile.Member{Name: "dir/"},
		hostile.Member{Name: "dir/sub/x.npy", Data: hostile.NPY("<i8", []int64{600}, hostile.Bytes(4800, 3)), Deflate: true},
		hostile.Member{Name: "dup.npy", Data: hostile.NPY("<i4", []int64{3}, hostile.Bytes(12, 4))},
		hostile.Member{Name: "dup.npy", Data: hostile.NPY("<i4", []int64{2000}, hostile.Bytes(8000, 5))},
		hostile.Member{Name: "café/ünï.npy", Data: hostile.NPY("<c16", []int64{300}, hostile.Bytes(4800, 6)), Deflate: true},
		// Not UTF-8, nor flagged so: CP437, written back as UTF-8.
		hostile.Member{Name: "cp437\x82.npy", Data: hostile.NPY("<i2", []int64{3000}, hostile.Bytes(6000, 8))},
	)
	path := filepath.Join(t.TempDir(), "synthetic.npz")
	if err := os.WriteFile(path, hostile.Zip(ms), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPackSynthetic: every kind of member, in every mode, at the least
// chunk (many chunks) and the default one (few), with zip64 records
// forced and not.
func TestPackSynthetic(t *testing.T) {
	in := synthetic(t)
	for _, c := range modes {
		for _, o := range []Options{{Compress: c, Chunk: MinChunk}, {Compress: c}, {Compress: c, Chunk: MinChunk, Zip64: true, Workers: 3}} {
			t.Run(fmt.Sprintf("%v-%d-zip64=%v", c, o.Chunk, o.Zip64), func(t *testing.T) {
				out, res, err := packTo(t, in, t.TempDir(), &o)
				if err != nil {
					t.Fatal(err)
				}
				checkPacked(t, in, out, o)
				if fi, _ := os.Stat(out); res.Out != fi.Size() || res.Members != res.Aligned+res.Stored+res.Chunked+res.Deflate || res.Members != 44 {
					t.Errorf("result %+v, %d bytes written", res, fi.Size())
				}
			})
		}
	}
}

// TestPackCorpus: the archives of npz's corpus (numpy's, Info-ZIP's,
// Python's zipfile streaming with data descriptors, zip64), in every
// mode; those with members npzfs cannot read are refused, naming one.
func TestPackCorpus(t *testing.T) {
	paths, err := filepath.Glob("../npz/testdata/*.npz")
	if err != nil || len(paths) < 10 {
		t.Fatalf("corpus: %d archives, %v", len(paths), err)
	}
	refused := map[string]string{"methods.npz": `"bzip2.npy"`, "names.npz": "not UTF-8"}
	for _, in := range paths {
		for _, c := range modes {
			t.Run(filepath.Base(in)+"-"+c.String(), func(t *testing.T) {
				o := Options{Compress: c, Chunk: MinChunk}
				dir := t.TempDir()
				out, _, err := packTo(t, in, dir, &o)
				if want, ok := refused[filepath.Base(in)]; ok {
					var me *MemberError
					if !errors.As(err, &me) || !strings.Contains(err.Error(), want) {
						t.Fatalf("packed (%v), want a *MemberError with %q", err, want)
					}
					if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a failed run left %s", out)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkPacked(t, in, out, o)
			})
		}
	}
}

// lookupPath finds a served path in a.
func lookupPath(a *npz.Archive, path string) *npz.Node {
	n := a.Root()
	for _, c := range strings.Split(path, "/") {
		if n = n.Lookup(context.Background(), c); n == nil {
			return nil
		}
	}
	return n
}

// unpackable are the hostile cases pack refuses besides those refused
// at open and those with unreadable files: members whose entry npzfs
// cannot use (a size that cannot be right, data past the end), and a
// name flagged UTF-8 that is not (Python's zipfile refuses the archive).
var unpackable = map[string]string{
	"names":                "not UTF-8",
	"stored-claims-1TiB":   `"huge.npy"`,
	"deflated-claims-1TiB": `"huge.npy"`,
	"central-stored-size":  `"s.npy"`,
}

// TestPackHostile: a hostile archive is refused in one line naming what
// is wrong, leaving nothing behind, or packed into one that serves every
// good file as it was.
func TestPackHostile(t *testing.T) {
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.npz")
			res, err := ReaderAt(context.Background(), bytes.NewReader(c.Archive), int64(len(c.Archive)), out, nil)
			noTemporaries(t, dir)
			want, refused := unpackable[c.Name]
			if len(c.Bad) > 0 {
				want, refused = `"`+strings.TrimSuffix(strings.TrimSuffix(c.Bad[0], "/raw.bin"), ".npy"), true
			}
			if c.Refused || refused {
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
					t.Errorf("packed (%+v), error %v; want one line with %q", res, err, want)
				}
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a failed run left %s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := open(t, out)
			for p, data := range c.Good {
				n := lookupPath(a, p)
				if n == nil || n.IsDir() {
					t.Errorf("%q not served", p)
					continue
				}
				f := n.File(context.Background())
				got := make([]byte, f.Size())
				if k, err := f.ReadAt(got, 0); k != len(got) || !bytes.Equal(got, data) {
					t.Errorf("%q: %d bytes of %d, %v", p, k, len(data), err)
				}
			}
		})
	}
}
