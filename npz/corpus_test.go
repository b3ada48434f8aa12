package npz

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifest is what scripts/testdata/npz_corpus.py wrote beside each
// archive: what Python and numpy read from it.
type manifest struct {
	Archive string
	Size    int64
	Comment string
	Members []struct {
		Index          int
		Name           *string
		NameHex        string `json:"name_hex"`
		Size           int64
		CompressedSize int64 `json:"compressed_size"`
		Method         uint16
		CRC32          uint32
		IsDir          bool `json:"is_dir"`
		Readable       bool
		SHA256         string
		NPY            *struct {
			DataOffset   int64 `json:"data_offset"`
			DataLength   int64 `json:"data_length"`
			SHA256       string
			Shape        []int64
			FortranOrder bool `json:"fortran_order"`
		}
	}
}

func corpus(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.npz")
	if err != nil || len(paths) < 10 {
		t.Fatalf("corpus: %d archives, %v (run /usr/bin/python3 scripts/gen-testdata.py npz)", len(paths), err)
	}
	return paths
}

func readManifest(t *testing.T, path string) *manifest {
	t.Helper()
	b, err := os.ReadFile(strings.TrimSuffix(path, ".npz") + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// readAll reads a whole file through ReadAt in odd-sized pieces.
func readAll(t testing.TB, f *File) ([]byte, error) {
	t.Helper()
	return readPieces(f, 4093)
}

// readPieces reads a whole file through ReadAt in pieces of piece bytes,
// checking that only the last is short and that io.EOF comes at Size. It
// allocates as bytes arrive, not the Size a hostile archive may claim.
func readPieces(f *File, piece int) ([]byte, error) {
	out := make([]byte, 0, min(f.Size(), 1<<20))
	buf := make([]byte, piece)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			if off != f.Size() {
				return out, errors.New("io.EOF before Size")
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n != len(buf) {
			return out, errors.New("short read without an error")
		}
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// lookupPath walks the tree from the root.
func lookupPath(a *Archive, path string) *Node {
	n := a.Root()
	for _, c := range strings.Split(path, "/") {
		if n = n.Lookup(context.Background(), c); n == nil {
			return nil
		}
	}
	return n
}

// TestCorpus reads every member of every corpus archive through all three
// views and compares it with what Python and numpy read.
func TestCorpus(t *testing.T) {
	for _, path := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			man := readManifest(t, path)
			a, err := Open(context.Background(), path, &Options{Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if a.Comment() != man.Comment {
				t.Errorf("comment %q, want %q", a.Comment(), man.Comment)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ms := a.Members()
			if len(ms) != len(man.Members) {
				t.Fatalf("%d members, want %d", len(ms), len(man.Members))
			}
			for i, want := range man.Members {
				m := ms[i]
				if want.Name != nil && !strings.Contains(*want.Name, "\x00") && want.NameHex == hex.EncodeToString([]byte(*want.Name)) && m.Name() != *want.Name {
					t.Errorf("member %d: name %q, want %q", i, m.Name(), *want.Name)
				}
				if m.Size() != want.Size || m.CompressedSize() != want.CompressedSize || m.Method() != want.Method || m.CRC32() != want.CRC32 || m.IsDir() != want.IsDir {
					t.Errorf("member %d %q: size %d/%d method %d crc %08x dir %v, want %d/%d %d %08x %v", i, m.Name(),
						m.Size(), m.CompressedSize(), m.Method(), m.CRC32(), m.IsDir(),
						want.Size, want.CompressedSize, want.Method, want.CRC32, want.IsDir)
				}
				if m.IsDir() {
					continue
				}
				f := m.File()
				if f.Size() != want.Size {
					t.Errorf("%q: File.Size %d, want %d", m.Name(), f.Size(), want.Size)
				}
				got, err := readAll(t, f)
				if !want.Readable {
					var me *MethodError
					if !errors.As(err, &me) {
						t.Errorf("%q: read error %v, want a *MethodError", m.Name(), err)
					}
					if m.Reason(context.Background()) == "" {
						t.Errorf("%q: unreadable but no reason", m.Name())
					}
					continue
				}
				if err != nil {
					t.Errorf("%q: %v", m.Name(), err)
					continue
				}
				if s := sum(got); s != want.SHA256 {
					t.Errorf("%q: sha256 %s, want %s", m.Name(), s, want.SHA256)
				}
				// Stored members: the extent is the member's bytes.
				fd, off, ok, err := f.Extent(context.Background())
				if err != nil {
					t.Errorf("%q: Extent: %v", m.Name(), err)
				}
				if ok != (m.Method() == 0) {
					t.Errorf("%q: Extent ok=%v for method %d", m.Name(), ok, m.Method())
				}
				if ok {
					if fd == 0 || off < 0 || off+f.Size() > int64(len(raw)) || !bytes.Equal(raw[off:off+f.Size()], got) {
						t.Errorf("%q: Extent (%d, %d) is not the member's bytes", m.Name(), fd, off)
					}
				}
				// Served members: the tree holds the same bytes.
				if m.Served() {
					n := lookupPath(a, m.Path())
					if n == nil || n.IsDir() || *n.File(context.Background()) != *f || n.Member() != m {
						t.Errorf("%q: not found at %q in the tree", m.Name(), m.Path())
					}
				}
				checkViews(t, a, m, got, want.NPY)
			}
		})
	}
}

// checkViews checks a .npy member's header and its views folder against
// numpy's reading (npyWant nil: numpy could not parse it).
func checkViews(t *testing.T, a *Archive, m *Member, member []byte, npyWant *struct {
	DataOffset   int64 `json:"data_offset"`
	DataLength   int64 `json:"data_length"`
	SHA256       string
	Shape        []int64
	FortranOrder bool `json:"fortran_order"`
}) {
	t.Helper()
	if !m.IsNPY() {
		return
	}
	h, err := m.Header(context.Background())
	if npyWant == nil {
		if err == nil {
			t.Errorf("%q: numpy cannot read its header, npzfs read %+v", m.Name(), h)
		}
		if m.HasViews(context.Background()) || (m.Served() && m.Reason(context.Background()) == "") {
			t.Errorf("%q: broken header but views %v, reason %q", m.Name(), m.HasViews(context.Background()), m.Reason(context.Background()))
		}
		if m.Served() {
			key := strings.TrimSuffix(m.Path(), ".npy")
			if n := lookupPath(a, key); n != nil && n.Member() == m && len(n.Children(context.Background())) != 0 {
				t.Errorf("%q: broken member's views folder is not empty", m.Name())
			}
		}
		return
	}
	if err != nil {
		t.Errorf("%q: header: %v", m.Name(), err)
		return
	}
	if h.DataOffset != npyWant.DataOffset || h.DataLength(m.Size()) != npyWant.DataLength || h.FortranOrder != npyWant.FortranOrder {
		t.Errorf("%q: data at %d+%d fortran %v, want %d+%d %v", m.Name(), h.DataOffset, h.DataLength(m.Size()), h.FortranOrder,
			npyWant.DataOffset, npyWant.DataLength, npyWant.FortranOrder)
	}
	if s := sum(member[npyWant.DataOffset : npyWant.DataOffset+npyWant.DataLength]); s != npyWant.SHA256 {
		t.Fatalf("manifest and member bytes disagree for %q", m.Name())
	}
	js, err := m.HeaderJSON(context.Background())
	var parsed map[string]any
	if err != nil || json.Unmarshal(js, &parsed) != nil {
		t.Errorf("%q: header.json %q does not parse (%v)", m.Name(), js, err)
	}
	if !m.Served() || m.st.Load()&flagViews == 0 {
		// No views folder: not served, or its name is taken or empty.
		if m.HasViews(context.Background()) || (m.Served() && m.Reason(context.Background()) == "") {
			t.Errorf("%q: views %v, reason %q", m.Name(), m.HasViews(context.Background()), m.Reason(context.Background()))
		}
		return
	}
	if !m.HasViews(context.Background()) {
		t.Errorf("%q: valid header but no views: %s", m.Name(), m.Reason(context.Background()))
		return
	}
	key := strings.TrimSuffix(m.Path(), ".npy")
	views := lookupPath(a, key)
	if views == nil || !views.IsDir() {
		t.Fatalf("%q: no views folder %q", m.Name(), key)
	}
	hj := views.Lookup(context.Background(), "header.json")
	if hj == nil {
		t.Fatalf("%q: no header.json", m.Name())
	}
	got, err := readAll(t, hj.File(context.Background()))
	if err != nil || !bytes.Equal(got, js) {
		t.Errorf("%q: header.json reads %q, %v", m.Name(), got, err)
	}
	if _, _, ok, _ := hj.File(context.Background()).Extent(context.Background()); ok {
		t.Errorf("%q: header.json has an extent", m.Name())
	}
	rb := views.Lookup(context.Background(), "raw.bin")
	kids := views.Children(context.Background())
	if h.DType.HasObject {
		if rb != nil || len(kids) != 1 {
			t.Errorf("%q: object array has raw.bin or %d children", m.Name(), len(kids))
		}
		return
	}
	if rb == nil || len(kids) != 2 || kids[0].Ino() != hj.Ino() || kids[1].Ino() != rb.Ino() {
		t.Fatalf("%q: views folder holds %v", m.Name(), kids)
	}
	raw, err := readAll(t, rb.File(context.Background()))
	if err != nil || sum(raw) != npyWant.SHA256 || rb.File(context.Background()).Size() != npyWant.DataLength {
		t.Errorf("%q: raw.bin: %d bytes, %v", m.Name(), len(raw), err)
	}
	fd, off, ok, err := rb.File(context.Background()).Extent(context.Background())
	mfd, moff, mok, _ := m.File().Extent(context.Background())
	if ok != mok || err != nil || (ok && (fd != mfd || off != moff+npyWant.DataOffset)) {
		t.Errorf("%q: raw.bin extent (%d,%d,%v,%v), member (%d,%d,%v)", m.Name(), fd, off, ok, err, mfd, moff, mok)
	}
	// archive_offset: where raw.bin's bytes lie in the archive file, for
	// stored members of a local archive; absent otherwise.
	ao, has := parsed["archive_offset"]
	switch {
	case ok && (!has || ao != float64(off)):
		t.Errorf("%q: archive_offset %v, want %d", m.Name(), ao, off)
	case !ok && has:
		t.Errorf("%q: archive_offset %v for a member that is not stored", m.Name(), ao)
	}
}
