package npz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// noise is n bytes of a pseudo-random stream seeded by seed, of 6 bits
// a byte (deflate packs it to about 3/4).
func noise(n int, seed uint32) []byte {
	b := make([]byte, n)
	x := seed
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x>>24) & 0x3f
	}
	return b
}

// flipAt flips bit bit of byte off of a copy of b.
func flipAt(b []byte, off int64, bit uint) []byte {
	c := bytes.Clone(b)
	c[off] ^= 1 << bit
	return c
}

// dataStart is where member name's data starts in the archive b.
func dataStart(t *testing.T, b []byte, name string) int64 {
	t.Helper()
	a := openWith(t, b, &Options{Verify: VerifyLazy})
	off, err := a.Member(name).dataOffset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func openWith(t testing.TB, b []byte, o *Options) *Archive {
	t.Helper()
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// readServed reads member name whole as it is served, or says why not.
func readServed(a *Archive, name string) ([]byte, error) {
	m := a.Member(name)
	p := make([]byte, m.Size())
	n, err := m.File().ReadAt(p, 0)
	if errors.Is(err, io.EOF) && n == len(p) {
		err = nil
	}
	return p[:n], err
}

// TestVerifyBeforeServing: a flipped bit in a stored member, or in the
// stored blocks of a deflated one (which inflate without complaint), is
// served by VerifyLazy and never by VerifyAuto or VerifyStrict: their
// first read fails with the CRC-32 mismatch, and so does every later one,
// counted per member; other members read as ever.
func TestVerifyBeforeServing(t *testing.T) {
	good := noise(200_000, 1)
	for _, method := range []uint16{0, 8} {
		data := good
		if method == 8 {
			// Random bytes: the deflater stores them, in stored blocks
			// of a deflate stream, where a flipped bit decodes.
			// More than a span, so that a read near the start does not
			// reach the end (and the CRC-32) under VerifyLazy.
			data = make([]byte, 2<<20)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
		}
		b := makeZip(t, []zent{{name: "x.npy", data: data, method: method}, {name: "ok.npy", data: good[:1000], method: method}})
		at := dataStart(t, b, "x.npy") + 150_000
		if method == 8 {
			// One that decodes (the case only the CRC-32 catches).
			at = decodingFlip(t, b, "x.npy")
		}
		bad := flipAt(b, at, 3)
		for _, mode := range []VerifyMode{VerifyAuto, VerifyStrict, VerifyLazy} {
			var log logLinesOf
			a := openWith(t, bad, &Options{Verify: mode, Logf: log.logf, LogName: "run42.npz"})
			p := make([]byte, 4096)
			_, err := a.Member("x.npy").File().ReadAt(p, 0)
			if mode == VerifyLazy {
				if err != nil {
					t.Errorf("method %d, lazy: the first read failed: %v", method, err)
				}
				continue
			}
			var ce *CRCError
			if (method == 0 && (!errors.As(err, &ce) || ce.Want != a.Member("x.npy").CRC32())) || err == nil || !strings.Contains(err.Error(), "CRC-32 mismatch") {
				t.Errorf("method %d, %v: first read: %v, want a CRC-32 mismatch", method, mode, err)
			}
			if _, err := a.Member("x.npy").File().ReadAt(p, 100_000); err == nil {
				t.Errorf("method %d, %v: a later read was served", method, mode)
			}
			if got, err := readServed(a, "ok.npy"); err != nil || !bytes.Equal(got, good[:1000]) {
				t.Errorf("method %d, %v: the good member: %v", method, mode, err)
			}
			vs := a.VerifyStats()
			if vs.FailingCount != 1 || vs.Failing[0].Name != "x.npy" || vs.Failing[0].Reads != 2 || !strings.Contains(vs.Failing[0].Reason, "CRC-32 mismatch") {
				t.Errorf("method %d, %v: %+v", method, mode, vs)
			}
			if vs.Passes != 1 || a.Member("x.npy").Failure() == nil {
				t.Errorf("method %d, %v: %d passes, failure %v", method, mode, vs.Passes, a.Member("x.npy").Failure())
			}
			if !strings.Contains(log.String(), `npz: run42.npz: "x.npy": verification failed`) {
				t.Errorf("method %d, %v: the log does not name the archive and member:\n%s", method, mode, log.String())
			}
		}
	}
}

// decodingFlip finds a bit in the first 100 KiB of member name's
// compressed data that, once flipped, still inflates (only the CRC-32 at
// the end tells), and returns its byte.
func decodingFlip(t *testing.T, b []byte, name string) int64 {
	t.Helper()
	start := dataStart(t, b, name)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		at := start + 1000 + rng.Int64N(100_000)
		bad := flipAt(b, at, 3)
		a := openWith(t, bad, &Options{Verify: VerifyLazy})
		if _, err := a.Member(name).File().ReadAt(make([]byte, 4096), 0); err == nil {
			return at
		}
	}
	t.Fatal("no flip that decodes")
	return 0
}

// TestVerifyLimit: VerifyAuto serves a member over its limit unverified,
// counted, with one log line naming it; a negative limit (a remote
// archive) verifies none; a read that reaches a deflated member's end
// verifies it on the way.
func TestVerifyLimit(t *testing.T) {
	data := noise(1_500_000, 5) // more than a span: a small read does not reach its end
	b := makeZip(t, []zent{{name: "big.npy", data: data, method: 8}, {name: "small.npy", data: data[:1000], method: 0}})
	var log logLinesOf
	a := openWith(t, b, &Options{VerifyLimit: 100_000, Logf: log.logf, LogName: "a.npz"})
	readMember(t, a, "big.npy", 0, 100)
	readMember(t, a, "small.npy", 0, 100)
	readMember(t, a, "big.npy", 1000, 100)
	vs := a.VerifyStats()
	if vs.Passes != 1 || vs.Unverified != 1 || vs.UnverifiedBytes != int64(len(data)) {
		t.Errorf("%+v", vs)
	}
	if n := strings.Count(log.String(), `npz: a.npz: "big.npy": served unverified (1.4 MiB, over the 97.7 KiB --verify=auto checks first)`); n != 1 {
		t.Errorf("%d notices:\n%s", n, log.String())
	}
	if got, err := readServed(a, "big.npy"); err != nil || !bytes.Equal(got, data) || !a.Member("big.npy").Verified() {
		t.Errorf("a whole read: %v, verified %v", err, a.Member("big.npy").Verified())
	}

	a = openWith(t, b, &Options{VerifyLimit: -1})
	readMember(t, a, "small.npy", 0, 100)
	if vs := a.VerifyStats(); vs.Passes != 0 || vs.Unverified != 1 {
		t.Errorf("negative limit: %+v", vs)
	}
}

// TestVerifyOnce: readers of a member at once wait for one pass.
func TestVerifyOnce(t *testing.T) {
	data := noise(3<<20, 7)
	b := makeZip(t, []zent{{name: "x.npy", data: data, method: 8}, {name: "s.npy", data: data, method: 0}})
	a := openWith(t, b, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		name := []string{"x.npy", "s.npy"}[i%2]
		wg.Go(func() {
			off := int64(i) * 100_000
			p := make([]byte, 1000)
			if _, err := a.Member(name).File().ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+1000]) {
				t.Errorf("%s at %d: %v", name, off, err)
			}
		})
	}
	wg.Wait()
	if vs := a.VerifyStats(); vs.Passes != 2 {
		t.Errorf("%d passes, want 2", vs.Passes)
	}
}

// TestSavedBlockSums: a stored member's block CRC-32s are saved by its
// pass, and a later archive of the same content is verified by them
// without a pass; reads of an archive read through the daemon (no file
// to splice) are then checked against them, so a copy damaged where
// the key does not look fails its reads; a damaged saved file is not
// used.
func TestSavedBlockSums(t *testing.T) {
	data := noise(minSavedBlocks+300_000, 9)
	b := makeZip(t, []zent{{name: "x.npy", data: data, method: 0}})
	dir := t.TempDir()
	open := func(b []byte, mode VerifyMode) (*Archive, *logLinesOf) {
		s, err := OpenIndexStore(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		var log logLinesOf
		return openWith(t, b, &Options{Indexes: s, Verify: mode, Logf: log.logf}), &log
	}
	a, _ := open(b, VerifyAuto)
	readMember(t, a, "x.npy", 0, 10)
	a.Close()
	a.opts.Indexes.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "v1", "*", "*.crc"))
	if vs := a.VerifyStats(); vs.Passes != 1 || len(files) != 1 {
		t.Fatalf("%+v, %d saved", vs, len(files))
	}

	a, _ = open(b, VerifyAuto)
	if got := readMember(t, a, "x.npy", 5<<20, 10); !bytes.Equal(got, data[5<<20:5<<20+10]) {
		t.Error("wrong bytes")
	}
	if vs := a.VerifyStats(); vs.Passes != 0 || vs.Saved != 1 {
		t.Errorf("second archive: %+v", vs)
	}

	// A copy damaged in the middle has the same key: the saved block
	// CRC-32s verify it, and the read of the damaged block fails.
	mid := dataStart(t, b, "x.npy") + 8<<20 + 5
	a, _ = open(flipAt(b, mid, 0), VerifyAuto)
	if _, err := a.Member("x.npy").File().ReadAt(make([]byte, 100), 8<<20); err == nil {
		t.Error("the damaged block was served")
	}
	if got := readMember(t, a, "x.npy", 1<<20, 100); !bytes.Equal(got, data[1<<20:1<<20+100]) {
		t.Error("an intact block: wrong bytes")
	}

	// A saved file that does not hold is logged and removed; the member
	// is verified by a pass again.
	if err := os.WriteFile(files[0], []byte("NPZFSCRC garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, log := open(b, VerifyAuto)
	readMember(t, a, "x.npy", 0, 10)
	if vs := a.VerifyStats(); vs.Passes != 1 || !strings.Contains(log.String(), "saved block CRC-32s not used") {
		t.Errorf("damaged saved file: %+v\n%s", vs, log.String())
	}
}

// TestVerifyStrictChecksSplicedMembers: a local archive's stored
// members are spliced from its file, unchecked once verified, unless
// the archive is strict, where Extent declines them (reads then go
// through ReadAt, checked block by block).
func TestVerifyStrictChecksSplicedMembers(t *testing.T) {
	data := noise(500_000, 11)
	path := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(path, makeZip(t, []zent{{name: "x.npy", data: data, method: 0}}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []VerifyMode{VerifyAuto, VerifyStrict} {
		a, err := Open(context.Background(), path, &Options{Verify: mode})
		if err != nil {
			t.Fatal(err)
		}
		_, _, ok, err := a.Member("x.npy").File().Extent(context.Background())
		if err != nil || ok != (mode == VerifyAuto) || !a.Member("x.npy").Verified() {
			t.Errorf("%v: Extent ok %v, %v; verified %v", mode, ok, err, a.Member("x.npy").Verified())
		}
		if got := readMember(t, a, "x.npy", 300_000, 1000); !bytes.Equal(got, data[300_000:301_000]) {
			t.Errorf("%v: wrong bytes", mode)
		}
		a.Close()
	}
}

// TestTruncatedBareNPY: a bare .npy whose data is shorter than its
// header says fails every read of its data, and Verify, saying so.
func TestTruncatedBareNPY(t *testing.T) {
	whole := npyBytes(t, "<f8", []int64{100}, noise(800, 13))
	cut := whole[:len(whole)-16]
	a, err := NewNPY(context.Background(), bytes.NewReader(cut), int64(len(cut)), "t.npy", nil)
	if err != nil {
		t.Fatal(err)
	}
	var te *TruncatedError
	if err := a.Member("t.npy").Verify(context.Background(), nil); !errors.As(err, &te) || !strings.Contains(err.Error(), "16 bytes missing") {
		t.Errorf("Verify: %v", err)
	}
	if _, err := a.Member("t.npy").File().ReadAt(make([]byte, 10), 0); !errors.As(err, &te) {
		t.Errorf("read: %v", err)
	}
	a, err = NewNPY(context.Background(), bytes.NewReader(whole), int64(len(whole)), "t.npy", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Member("t.npy").Verify(context.Background(), nil); err != nil {
		t.Errorf("whole: %v", err)
	}
}

// npyBytes is a .npy of the given dtype and shape holding data.
func npyBytes(t *testing.T, descr string, shape []int64, data []byte) []byte {
	t.Helper()
	hdr, err := npy.EncodeHeader(descr, false, shape)
	if err != nil {
		t.Fatal(err)
	}
	return append(hdr, data...)
}

// TestSidecarCarriesBlockSums: BuildIndex of a large stored member
// verifies it and saves its block CRC-32s, which a sidecar carries; an
// archive read remotely (VerifyLimit -1, no file to splice) finds them
// there, is verified by them with no pass, and checks its reads against
// them, so a damaged copy fails where it is damaged.
func TestSidecarCarriesBlockSums(t *testing.T) {
	data := noise(minSavedBlocks+100_000, 15)
	b := makeZip(t, []zent{{name: "x.npy", data: data, method: 0}})
	s, err := OpenIndexStore(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := openWith(t, b, &Options{Indexes: s})
	m := a.Member("x.npy")
	if res, err := m.BuildIndex(context.Background(), 2); err != nil || !res.Saved || res.Loaded || !m.Verified() {
		t.Fatalf("BuildIndex: %+v, %v", res, err)
	}
	var side bytes.Buffer
	if err := WriteIndexSidecarTo(context.Background(), &side, []*Member{m}); err != nil {
		t.Fatal(err)
	}
	sc := NewIndexSidecar(bytes.NewReader(side.Bytes()), int64(side.Len()), "x.npzidx")
	if !sc.Holds(context.Background(), m) {
		t.Error("the sidecar does not hold the member's block CRC-32s")
	}
	remote := func(b []byte) *Archive {
		return openWith(t, b, &Options{VerifyLimit: -1, Sidecar: NewIndexSidecar(bytes.NewReader(side.Bytes()), int64(side.Len()), "x.npzidx")})
	}
	a = remote(b)
	if got := readMember(t, a, "x.npy", 3<<20, 100); !bytes.Equal(got, data[3<<20:3<<20+100]) {
		t.Error("wrong bytes")
	}
	if vs := a.VerifyStats(); vs.Saved != 1 || vs.Passes != 0 || vs.Unverified != 0 {
		t.Errorf("%+v", vs)
	}
	a = remote(flipAt(b, dataStart(t, b, "x.npy")+3<<20+50, 2))
	if _, err := a.Member("x.npy").File().ReadAt(make([]byte, 100), 3<<20); err == nil || !strings.Contains(err.Error(), "saved index records") {
		t.Errorf("damaged block: %v", err)
	}
}

// TestVerifyOfAClosedArchive: a pass over a member of an archive closed
// under it (the pass runs on after the reader that started it left, and
// the archive is closed when idle) fails with ErrClosed, which says
// nothing of the member: it is not marked failing, and nothing is
// logged against it.
func TestVerifyOfAClosedArchive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(path, makeZip(t, []zent{{name: "x.npy", data: noise(500_000, 12), method: 0}}), 0o644); err != nil {
		t.Fatal(err)
	}
	var log logLinesOf
	a, err := Open(context.Background(), path, &Options{Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Member("x.npy")
	a.Close()
	if err := m.Verify(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("a pass of a closed archive: %v, want ErrClosed", err)
	}
	if st := a.VerifyStats(); st.FailingCount != 0 || log.String() != "" {
		t.Errorf("a pass of a closed archive: %d failing, log %q", st.FailingCount, log.String())
	}
}

// TestSmallPassIsSmall: verifying a small stored member reads it into a
// buffer of its own size, on the reader's goroutine: a pass of 100
// members of 144 bytes allocates well under one job's buffer (2 MiB)
// each, which each small member's pass once cleared and dropped.
func TestSmallPassIsSmall(t *testing.T) {
	var ents []zent
	for i := range 100 {
		ents = append(ents, zent{name: fmt.Sprintf("m%03d.npy", i), data: noise(144, uint32(i)), method: 0})
	}
	b := makeZip(t, ents)
	a, err := NewReader(context.Background(), bytes.NewReader(b), int64(len(b)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, m := range a.Members() {
		if err := m.verifyOnce(context.Background()); err != nil || !m.Verified() {
			t.Fatalf("%s: %v, verified %v", m.Name(), err, m.Verified())
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 100; per > 64<<10 {
		t.Errorf("a small member's pass allocates %d bytes", per)
	}
}
