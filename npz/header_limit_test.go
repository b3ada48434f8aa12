package npz

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
)

// TestLongHeadersServedByDefault: numpy writes format 2.0 exactly when a
// header passes 65,535 bytes (wide records), so the default limit must
// serve such members, also when many lookups read them at once (they are
// parsed one at a time, above shortHeaderLen).
func TestLongHeadersServedByDefault(t *testing.T) {
	var ms []hostile.Member
	for _, name := range []string{"w0.npy", "w1.npy", "w2.npy", "w3.npy"} {
		ms = append(ms, hostile.Member{Name: name, Data: hostile.WideNPY(6000), Deflate: name == "w1.npy"})
	}
	z := hostile.Zip(ms)
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, m := range a.Members() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.HasViews(context.Background())
		}()
	}
	wg.Wait()
	for _, m := range a.Members() {
		if !m.HasViews(context.Background()) {
			t.Fatalf("%s: no views: %s", m.Name(), m.Reason(context.Background()))
		}
		h, err := m.Header(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if h.Major != 2 || h.HeaderLen <= shortHeaderLen || len(h.DType.Fields) != 6000 {
			t.Errorf("%s: version %d, header length %d, %d fields", m.Name(), h.Major, h.HeaderLen, len(h.DType.Fields))
		}
	}
	if kids := a.Root().Lookup(context.Background(), "w2").Children(context.Background()); len(kids) != 2 {
		t.Errorf("w2/ holds %d files, want header.json and raw.bin", len(kids))
	}
}

// TestHeaderLimitOption: Options.MaxHeaderLen below a member's header
// length leaves that member without views, and says why.
func TestHeaderLimitOption(t *testing.T) {
	z := hostile.Zip([]hostile.Member{{Name: "w.npy", Data: hostile.WideNPY(6000)}})
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), &Options{MaxHeaderLen: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Members()[0]
	if m.HasViews(context.Background()) || !strings.Contains(m.Reason(context.Background()), "exceeds the limit of 102400 bytes") {
		t.Errorf("views %v, reason %q", m.HasViews(context.Background()), m.Reason(context.Background()))
	}
}

// TestShortHeaderJSONIsRenderedOnRead: the archive caches header.json
// only when it is long (keepJSON or more); a short one is rendered again
// from the npy header on every read. Either way header.json reads the
// same bytes, whole or in pieces, and has the size it claims.
func TestShortHeaderJSONIsRenderedOnRead(t *testing.T) {
	z := hostile.Zip([]hostile.Member{
		{Name: "short.npy", Data: npyOf(t, "abc")},
		{Name: "wide.npy", Data: hostile.WideNPY(2000)},
	})
	a, err := NewReader(context.Background(), bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		kept bool
	}{{"short", false}, {"wide", true}} {
		m := a.Root().Lookup(context.Background(), c.name+".npy").Member()
		js, err := m.HeaderJSON(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		h, _ := m.Header(context.Background())
		want, _ := h.JSON(m.Size())
		if !bytes.Equal(js, want) {
			t.Fatalf("%s: HeaderJSON differs from rendering the header", c.name)
		}
		if kept := a.jsonCache.get(m.e.Index) != nil; kept != c.kept || (len(js) >= keepJSON) != c.kept {
			t.Errorf("%s: %d bytes of header.json, kept %v, want kept %v", c.name, len(js), kept, c.kept)
		}
		f := a.Root().Lookup(context.Background(), c.name).Lookup(context.Background(), "header.json").File(context.Background())
		if f.Size() != int64(len(want)) {
			t.Errorf("%s: header.json size %d, want %d", c.name, f.Size(), len(want))
		}
		got, err := readPieces(f, 1000)
		if err != nil {
			t.Fatalf("%s: reading header.json in 1,000-byte pieces: %v", c.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: header.json read in 1,000-byte pieces differs (%d bytes, want %d)", c.name, len(got), len(want))
		}
	}
}

// TestDeflatedHeadersReuseDecoders: reading the npy header of a deflated
// member takes its decoder and buffers (about 350 KB) from a pool and
// gives them back, so reading many headers allocates far less than a
// decoder each. (The race detector makes sync.Pool drop some of what it
// is given, on purpose: the bound is looser there.)
func TestDeflatedHeadersReuseDecoders(t *testing.T) {
	const n = 200
	var ents []zent
	for i := range n {
		ents = append(ents, zent{name: fmt.Sprintf("m%03d.npy", i), data: npyOf(t, "<f8"), method: 8})
	}
	a := openBytes(t, makeZip(t, ents))
	a.Members()[0].Header(context.Background()) // the pools' first decoder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, m := range a.Members()[1:] {
		if _, err := m.Header(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perHeader := (after.TotalAlloc - before.TotalAlloc) / (n - 1)
	bound := uint64(100 << 10)
	if raceEnabled {
		// Still well under a fresh decoder and buffers (over 370 KB).
		bound = 300 << 10
	}
	if perHeader > bound {
		t.Errorf("reading a deflated header allocates %d KB", perHeader>>10)
	}
}
