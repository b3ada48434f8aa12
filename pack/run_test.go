package pack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/zip"
)

// TestPackAuto: auto deflates the arrays that deflate to nine tenths or
// less, and stores (aligned) those that do not: noise.
func TestPackAuto(t *testing.T) {
	in := synthetic(t)
	out, _, err := packTo(t, in, t.TempDir(), &Options{Compress: Auto, Chunk: MinChunk})
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, out)
	for _, name := range []string{"noise5false.npy", "noise5true.npy", "noise7true.npy"} {
		if m := a.Member(name); m == nil || m.Method() != zip.Stored {
			t.Errorf("%s: not stored", name)
		}
	}
	for _, name := range []string{"a2false.npy", "a5false.npy", "a7true.npy", "fortran.npy"} {
		if m := a.Member(name); m == nil || m.Method() != zip.Deflated {
			t.Errorf("%s: not deflated", name)
		}
	}
}

// TestPackDeterministic: the output does not depend on how many
// goroutines compress, and progress rises to the bytes of every member.
func TestPackDeterministic(t *testing.T) {
	in := synthetic(t)
	var outs [][]byte
	for _, workers := range []int{1, 4} {
		var last, total int64
		calls := 0
		o := &Options{Compress: Deflate, Chunk: MinChunk, Workers: workers, Progress: func(done, all int64) {
			if done < last || all != total && calls > 0 {
				t.Errorf("progress %d of %d after %d of %d", done, all, last, total)
			}
			last, total = done, all
			calls++
		}}
		out, _, err := packTo(t, in, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		outs = append(outs, b)
		a, _ := npz.Open(context.Background(), in, nil)
		var sum int64
		for _, m := range a.Members() {
			sum += m.Size()
		}
		a.Close()
		if last != total || total != sum || calls < 40 {
			t.Errorf("progress ended at %d of %d (%d calls); members hold %d bytes", last, total, calls, sum)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("one worker and four wrote different archives")
	}
}

// TestPackCancel: a run cancelled while it writes fails with the
// context's error and leaves nothing; an archive already at the
// destination is left as it was.
func TestPackCancel(t *testing.T) {
	in := synthetic(t)
	a := open(t, in)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.npz")
	os.WriteFile(out, []byte("the old archive"), 0o644)
	for _, at := range []int64{1, 50000, 150000} {
		ctx, cancel := context.WithCancel(context.Background())
		o := &Options{Chunk: MinChunk, Compress: Deflate, Progress: func(done, _ int64) {
			if done >= at {
				cancel()
			}
		}}
		_, err := Archive(ctx, a, out, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d bytes: %v", at, err)
		}
		noTemporaries(t, dir)
		if b, _ := os.ReadFile(out); string(b) != "the old archive" {
			t.Errorf("cancelled after %d bytes: the destination holds %q", at, b)
		}
	}
}

// TestPackRefuses: bad options, a folder as the destination, a bare .npy
// as the source, a destination that cannot be written: each refused in
// one line, with nothing left.
func TestPackRefuses(t *testing.T) {
	in := synthetic(t)
	a := open(t, in)
	dir := t.TempDir()
	npyPath := filepath.Join(dir, "x.npy")
	os.WriteFile(npyPath, hostile.NPY("<i4", []int64{2}, make([]byte, 8)), 0o644)
	bare := open(t, npyPath)
	readOnly := filepath.Join(dir, "ro")
	os.Mkdir(readOnly, 0o555)
	for _, tc := range []struct {
		a    *npz.Archive
		out  string
		o    Options
		want string
	}{
		{a, filepath.Join(dir, "o.npz"), Options{Chunk: MinChunk - 1}, "chunk of 4095 bytes"},
		{a, filepath.Join(dir, "o.npz"), Options{Chunk: MaxChunk + 1}, "chunk of"},
		{a, filepath.Join(dir, "o.npz"), Options{Compress: 7}, "unknown compression"},
		{a, dir, Options{}, "is a folder"},
		{bare, filepath.Join(dir, "o.npz"), Options{}, "bare .npy"},
		{a, filepath.Join(dir, "missing", "o.npz"), Options{}, "no such file"},
		{a, filepath.Join(readOnly, "o.npz"), Options{}, "permission denied"},
	} {
		if tc.want == "permission denied" && os.Geteuid() == 0 {
			continue // root writes anywhere
		}
		_, err := Archive(context.Background(), tc.a, tc.out, &tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s, %+v: %v; want one line with %q", tc.out, tc.o, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "o.npz")); err == nil {
			t.Errorf("%+v: an archive was written", tc.o)
		}
		noTemporaries(t, dir)
	}
	if _, err := ParseCompress("zstd"); err == nil {
		t.Error("ParseCompress(zstd) accepted")
	}
	for _, c := range modes {
		if got, err := ParseCompress(c.String()); err != nil || got != c {
			t.Errorf("ParseCompress(%q) = %v, %v", c.String(), got, err)
		}
	}
}

// TestPackInPlace: an archive packed onto its own path is replaced whole
// once packed, having been read to the end from the file it was.
func TestPackInPlace(t *testing.T) {
	in := synthetic(t)
	orig, _ := os.ReadFile(in)
	keep := filepath.Join(t.TempDir(), "orig.npz")
	os.WriteFile(keep, orig, 0o644)
	a := open(t, in)
	if _, err := Archive(context.Background(), a, in, &Options{Chunk: MinChunk}); err != nil {
		t.Fatal(err)
	}
	noTemporaries(t, filepath.Dir(in))
	checkPacked(t, keep, in, Options{Chunk: MinChunk})
}

// TestPackLarge: members larger than what the output gathers before
// writing (their headers written again in the file, not the buffer), at
// the default chunk, and one that auto writes again stored.
func TestPackLarge(t *testing.T) {
	const n = outBuf + outBuf/2
	in := filepath.Join(t.TempDir(), "large.npz")
	os.WriteFile(in, hostile.Zip([]hostile.Member{
		{Name: "smooth.npy", Data: hostile.NPY("|u1", []int64{n}, hostile.Bytes(n, 1)), Deflate: true},
		{Name: "noise.npy", Data: hostile.NPY("|u1", []int64{n}, noise(n, 2)), Deflate: true},
		{Name: "stored.npy", Data: hostile.NPY("|u1", []int64{n}, hostile.Bytes(n, 3))},
	}), 0o644)
	for _, c := range []Compress{Keep, Auto} {
		o := Options{Compress: c}
		out, res, err := packTo(t, in, t.TempDir(), &o)
		if err != nil {
			t.Fatal(err)
		}
		checkPacked(t, in, out, o)
		if c == Auto && (res.Aligned != 1 || res.Chunked != 2) {
			t.Errorf("auto: %+v", res)
		}
	}
}
