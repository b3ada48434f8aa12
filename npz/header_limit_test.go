package npz

import (
	"bytes"
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
	a, err := OpenReader(bytes.NewReader(z), int64(len(z)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, m := range a.Members() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.HasViews()
		}()
	}
	wg.Wait()
	for _, m := range a.Members() {
		if !m.HasViews() {
			t.Fatalf("%s: no views: %s", m.Name(), m.Reason())
		}
		h, err := m.Header()
		if err != nil {
			t.Fatal(err)
		}
		if h.Major != 2 || h.HeaderLen <= shortHeaderLen || len(h.DType.Fields) != 6000 {
			t.Errorf("%s: version %d, header length %d, %d fields", m.Name(), h.Major, h.HeaderLen, len(h.DType.Fields))
		}
	}
	if kids := a.Root().Lookup("w2").Children(); len(kids) != 2 {
		t.Errorf("w2/ holds %d files, want header.json and raw.bin", len(kids))
	}
}

// TestHeaderLimitOption: Options.MaxHeaderLen below a member's header
// length leaves that member without views, and says why.
func TestHeaderLimitOption(t *testing.T) {
	z := hostile.Zip([]hostile.Member{{Name: "w.npy", Data: hostile.WideNPY(6000)}})
	a, err := OpenReader(bytes.NewReader(z), int64(len(z)), &Options{MaxHeaderLen: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Members()[0]
	if m.HasViews() || !strings.Contains(m.Reason(), "exceeds the limit of 102400 bytes") {
		t.Errorf("views %v, reason %q", m.HasViews(), m.Reason())
	}
}
