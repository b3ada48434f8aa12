package npy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// allocBound is the most FuzzReadHeader lets one ReadHeader+JSON call
// allocate: a small multiple of the input plus a constant.
func allocBound(n int) uint64 { return uint64(256*n) + 256<<10 }

func FuzzReadHeader(f *testing.F) {
	for _, sub := range []string{"good", "bad", "strict"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", sub, "*.npy"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) > 4096 {
				continue // the wide and deep headers slow the fuzzer down
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), nil)
		var js []byte
		if err == nil {
			js, err = h.JSON(int64(len(data)))
			if err != nil {
				t.Fatalf("accepted header does not render: %v", err)
			}
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > allocBound(len(data)) {
			t.Fatalf("allocated %d bytes for %d bytes of input", grew, len(data))
		}
		h2, err2 := ReadHeader(bytes.NewReader(data), -1, nil)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("known size: %v; unknown size: %v", err, err2)
		}
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error is a %T, not a FormatError: %v", err, err)
			}
			return
		}
		if !reflect.DeepEqual(h, h2) {
			t.Fatalf("known and unknown size disagree")
		}
		if h.DataOffset > int64(len(data)) || h.Count < 0 || h.DType.ItemSize < 0 {
			t.Fatalf("bad header: %+v", h)
		}
		if !json.Valid(js) {
			t.Fatalf("invalid JSON:\n%s", js)
		}
		enc, err := EncodeHeader(h.Descr, h.FortranOrder, h.Shape)
		if err != nil {
			t.Fatalf("EncodeHeader of an accepted header: %v", err)
		}
		checkRoundTrip(t, h, enc)
	})
}
