package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

// TestMaxHeaderOption: an array of many record fields has a format 2.0
// header of more than 64 KiB, as numpy writes it; the mount serves its
// views by default, and --max-header-kb below its length serves the
// member without them.
func TestMaxHeaderOption(t *testing.T) {
	needFuse(t)
	var descr npy.List
	for i := range 5000 {
		descr = append(descr, npy.Tuple{fmt.Sprintf("field%04d", i), "<i4"})
	}
	hdr, err := npy.EncodeHeader(descr, false, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 2*5000*4)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	data := append(append([]byte{}, hdr...), raw...)
	archive := filepath.Join(t.TempDir(), "wide.npz")
	writeZip(t, archive, []member{{name: "wide.npy", data: data, deflate: true}})

	dir := mount(t, archive)
	doc, err := os.ReadFile(filepath.Join(dir, "wide", "header.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Version      string `json:"version"`
		HeaderLength int    `json:"header_length"`
		DataLength   int    `json:"data_length"`
	}
	if err := json.Unmarshal(doc, &h); err != nil {
		t.Fatal(err)
	}
	if h.Version != "2.0" || h.HeaderLength <= 64<<10 || h.DataLength != len(raw) {
		t.Errorf("header.json: version %s, header_length %d, data_length %d", h.Version, h.HeaderLength, h.DataLength)
	}
	got, err := os.ReadFile(filepath.Join(dir, "wide", "raw.bin"))
	if err != nil || string(got) != string(raw) {
		t.Errorf("raw.bin: %d bytes, err %v; want the %d array bytes", len(got), err, len(raw))
	}

	small := mount(t, archive, "--max-header-kb", "64")
	if _, err := os.Stat(filepath.Join(small, "wide")); !os.IsNotExist(err) {
		t.Errorf("with --max-header-kb 64, wide/: %v; want it absent", err)
	}
	got, err = os.ReadFile(filepath.Join(small, "wide.npy"))
	if err != nil || string(got) != string(data) {
		t.Errorf("with --max-header-kb 64, wide.npy: %d bytes, err %v; want the member", len(got), err)
	}
}
