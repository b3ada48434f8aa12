package npz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
)

// logLines collects what an Archive logs, safely under concurrency.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// checkCase checks an opened hostile archive against what its case says:
// good files byte for byte, bad files failing (never io.EOF, never a short
// read passed off as the end), absent paths not found, reasons and
// problems given, and every bad member named in the log.
func checkCase(t testing.TB, a *Archive, c hostile.Case, log *logLines) {
	t.Helper()
	for p, want := range c.Good {
		n := lookupPath(a, p)
		if n == nil || n.IsDir() {
			t.Errorf("%s: %q not served as a file", c.Name, p)
			continue
		}
		got, err := readAll(t, n.File(context.Background()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q: %d bytes (want %d), %v; equal %v", c.Name, p, len(got), len(want), err, bytes.Equal(got, want))
		}
	}
	for _, p := range c.Bad {
		n := lookupPath(a, p)
		if n == nil || n.IsDir() {
			t.Errorf("%s: bad %q not served as a file", c.Name, p)
			continue
		}
		got, err := readAll(t, n.File(context.Background()))
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%s: bad %q read %d bytes, %v; want an error", c.Name, p, len(got), err)
		}
		if log != nil && !strings.Contains(log.text(), fmt.Sprintf("%q", n.Member().Name())) {
			t.Errorf("%s: the log does not name bad member %q:\n%s", c.Name, n.Member().Name(), log.text())
		}
	}
	for _, p := range c.Absent {
		if n := lookupPath(a, p); n != nil {
			t.Errorf("%s: %q is served", c.Name, p)
		}
	}
	for _, p := range c.Empty {
		if n := lookupPath(a, p); n == nil || !n.IsDir() || len(n.Children(context.Background())) != 0 {
			t.Errorf("%s: %q is not an empty folder", c.Name, p)
		}
	}
	for name, why := range c.Reasons {
		var reasons []string
		for _, m := range a.Members() {
			if m.Name() == name {
				reasons = append(reasons, m.Reason(context.Background()))
			}
		}
		if !strings.Contains(strings.Join(reasons, "; "), why) {
			t.Errorf("%s: reasons for %q are %q, want one with %q", c.Name, name, reasons, why)
		}
	}
	problems := strings.Join(a.Problems(), "; ")
	for _, p := range c.Problems {
		if !strings.Contains(problems, p) {
			t.Errorf("%s: problems %q lack %q", c.Name, problems, p)
		}
	}
}

// TestHostileArchives opens every hostile archive from a file: the
// unreadable ones are refused with a *FormatError, the others open and
// serve exactly what their case says, walk whole without a panic, and
// allocate a bounded amount whatever sizes they claim.
func TestHostileArchives(t *testing.T) {
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			p := writeTemp(t, c.Archive)
			var log logLines
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			a, err := Open(context.Background(), p, &Options{Logf: log.logf})
			if c.Refused {
				var fe *FormatError
				if err == nil || !errors.As(err, &fe) {
					t.Fatalf("opened (err %v), want a *FormatError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			checkCase(t, a, c, &log)
			walkTree(t, a, true)
			for _, m := range a.Members() {
				m.Reason(context.Background())
				m.HeaderJSON(context.Background())
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			// The archives are at most a few MiB; what they claim (1 TiB
			// members, a 1 GiB zip bomb, a 4 GiB header) must be neither
			// allocated nor held.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 32<<20 {
				t.Errorf("holds %d MiB once walked", held>>20)
			}
			runtime.KeepAlive(a)
		})
	}
}

// TestHostileConcurrent reads the hostile archives from 16 goroutines at
// once, each its own order and random ranges, on one fresh Archive per
// case: first resolutions race, error paths too (run with -race).
func TestHostileConcurrent(t *testing.T) {
	for _, c := range hostile.Cases() {
		if c.Refused {
			continue
		}
		a, err := Open(context.Background(), writeTemp(t, c.Archive), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var paths []string
		for p := range c.Good {
			paths = append(paths, p)
		}
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(g)))
				if g%4 == 0 {
					walkTree(t, a, true)
				}
				for range 40 {
					if len(paths) > 0 {
						p := paths[rng.Intn(len(paths))]
						want := c.Good[p]
						n := lookupPath(a, p)
						if n == nil {
							t.Errorf("%s: %q not found", c.Name, p)
							return
						}
						off := rng.Int63n(int64(len(want)) + 1)
						buf := make([]byte, 1+rng.Intn(len(want)+1))
						k, err := n.File(context.Background()).ReadAt(buf, off)
						end := min(off+int64(len(buf)), int64(len(want)))
						if (err != nil && err != io.EOF) || !bytes.Equal(buf[:k], want[off:end]) {
							t.Errorf("%s: %q: ReadAt(%d, %d): %d, %v", c.Name, p, len(buf), off, k, err)
						}
					}
					if len(c.Bad) > 0 {
						p := c.Bad[rng.Intn(len(c.Bad))]
						if n := lookupPath(a, p); n != nil {
							if _, err := readAll(t, n.File(context.Background())); err == nil {
								t.Errorf("%s: bad %q read whole", c.Name, p)
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		a.Close()
	}
}

// TestChangedArchiveStopsServing: once the archive file is rewritten in
// place (same size) or truncated after Open, reads that need it fail with
// ErrChanged, stored extents (what the mount splices) are refused, and
// the change is logged once.
func TestChangedArchiveStopsServing(t *testing.T) {
	z := hostile.Zip([]hostile.Member{{Name: "s.npy", Data: hostile.StoredNPY}, {Name: "d.npy", Data: hostile.DeflatedNPY, Deflate: true}})
	for _, change := range []string{"rewrite", "truncate", "grow"} {
		t.Run(change, func(t *testing.T) {
			p := writeTemp(t, z)
			var log logLines
			a, err := Open(context.Background(), p, &Options{Logf: log.logf})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			s := a.Member("s.npy").File()
			if _, _, ok, err := s.Extent(context.Background()); !ok || err != nil {
				t.Fatalf("extent before the change: %v, %v", ok, err)
			}
			switch change {
			case "rewrite":
				junk := bytes.Clone(z)
				for i := range junk[:len(junk)/2] {
					junk[i] ^= 0x5a
				}
				err = os.WriteFile(p, junk, 0o644)
			case "truncate":
				err = os.Truncate(p, int64(len(z)/3))
			case "grow":
				err = os.WriteFile(p, append(bytes.Clone(z), "more"...), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok, err := s.Extent(context.Background()); ok || !errors.Is(err, ErrChanged) {
				t.Errorf("extent after the change: ok %v, %v", ok, err)
			}
			for _, name := range []string{"s.npy", "d.npy"} {
				if n, err := a.Member(name).File().ReadAt(make([]byte, 10), 0); n != 0 || !errors.Is(err, ErrChanged) {
					t.Errorf("%s after the change: %d, %v", name, n, err)
				}
			}
			if got := strings.Count(log.text(), ErrChanged.Error()); got != 1 {
				t.Errorf("the change is logged %d times:\n%s", got, log.text())
			}
		})
	}
}

// TestViewsNeedNoBudget: views of headers with many record fields used
// to hold about 40 times the header's length, under a budget past which
// members got none, so which members had views depended on what was read
// first. Now a member's views keep a few numbers: 20 headers of 100 KiB
// (format 2.0, as numpy writes for wide records) all have views, the
// archive holds little after they are built (long header.json documents
// are cached within jsonCacheBytes), and listings and lookups agree.
func TestViewsNeedNoBudget(t *testing.T) {
	var ms []hostile.Member
	for i := range 20 {
		ms = append(ms, hostile.Member{Name: fmt.Sprintf("w%02d.npy", i), Data: hostile.WideNPY(6000), Deflate: true})
	}
	z := hostile.Zip(ms)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	kids := a.Root().Children(context.Background())
	for _, m := range a.Members() {
		if _, err := m.HeaderJSON(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > jsonCacheBytes+DefaultCacheBytes+4<<20 {
		t.Errorf("the archive holds %d MiB after its views were built", held>>20)
	}
	if len(kids) != 60 {
		t.Errorf("%d names listed, want 60", len(kids))
	}
	for _, k := range kids {
		if a.Root().Lookup(context.Background(), k.Name()) == nil {
			t.Errorf("%s is listed but not found", k.Name())
		}
	}
	for _, m := range a.Members() {
		if !m.HasViews(context.Background()) {
			t.Errorf("%s: no views: %s", m.Name(), m.Reason(context.Background()))
		}
	}
	runtime.KeepAlive(a)
}

// TestFolderBudget: names can ask for a folder every two bytes; past
// 65,536 folders plus 4 per member, members whose names need more are not
// served (and say why), so the tree stays bounded whatever the names.
func TestFolderBudget(t *testing.T) {
	var ms []hostile.Member
	for i := range 48 {
		// 2,001 folders each, 96,048 in all; the budget is 65,728.
		ms = append(ms, hostile.Member{Name: fmt.Sprintf("d%02d/", i) + strings.Repeat("a/", 2000) + "x.npy", Data: []byte("x")})
	}
	ms = append(ms, hostile.Member{Name: "last.npy", Data: hostile.StoredNPY})
	z := hostile.Zip(ms)
	a := openBytes(t, z)
	served, refused := 0, 0
	for _, m := range a.Members() {
		switch {
		case m.Served():
			served++
		case strings.Contains(m.Reason(context.Background()), "folders"):
			refused++
		default:
			t.Errorf("%.20s...: %s", m.Name(), m.Reason(context.Background()))
		}
	}
	// 32 members fit (32 * 2,001 = 64,032 folders), the 33rd would not.
	if served != 33 || refused != 16 {
		t.Errorf("%d served, %d refused for folders; want 33 and 16", served, refused)
	}
	if n := lookupPath(a, "last.npy"); n == nil {
		t.Error("a member needing no folder is not served past the budget")
	}
	folders := 0
	var count func(n *Node)
	count = func(n *Node) {
		for _, c := range n.Children(context.Background()) {
			if c.IsDir() && c.Member() == nil {
				folders++
				count(c)
			}
		}
	}
	count(a.Root())
	if folders > maxFolders(len(ms)) {
		t.Errorf("%d folders, budget %d", folders, maxFolders(len(ms)))
	}
}

// TestDirectoryClaimIsNotAllocated: an end record may claim a central
// directory of 1 GiB (here a hole in a sparse file after the real
// entries); the directory is read as its entries are, so what is
// allocated is bounded by the entries found, not by the claim.
func TestDirectoryClaimIsNotAllocated(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse.npz")
	good, err := hostile.WriteSparseDirectory(p, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := Open(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("Open allocated %d MiB", alloc>>20)
	}
	checkCase(t, a, hostile.Case{Name: "sparse directory", Good: good, Problems: []string{"ends early"}}, nil)
}
