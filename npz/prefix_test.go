package npz

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestPrependedData: an archive with bytes prepended (a script before the
// zip, without zip -A) opens and reads as the archive without them, and
// says so (zip64 archives too, which archive/zip refuses); an archive with bytes between its central directory and
// its end record is not taken for one.
func TestPrependedData(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 300)
	plain := makeZip(t, []zent{{name: "s.bin", data: data, method: 0}, {name: "d.bin", data: data, method: 8}})
	zip64, err := os.ReadFile("testdata/zip64.npz")
	if err != nil {
		t.Fatal(err)
	}
	script := []byte("#!/bin/sh\nexec python3 -c 'print(1)'\nexit 0\n")
	for _, tc := range []struct {
		name string
		z    []byte
	}{{"zip", plain}, {"zip64", zip64}} {
		t.Run(tc.name, func(t *testing.T) {
			b := append(append([]byte(nil), script...), tc.z...)
			a := openBytes(t, b)
			if a.Prefix() != int64(len(script)) {
				t.Errorf("Prefix() = %d, want %d", a.Prefix(), len(script))
			}
			if p := a.Problems(); len(p) != 1 || !strings.Contains(p[0], "bytes precede the zip data") {
				t.Errorf("problems %q", p)
			}
			// What archive/zip reads from the archive without the
			// prefix (it does not find a zip64 end record moved by one).
			zr, err := zip.NewReader(bytes.NewReader(tc.z), int64(len(tc.z)))
			if err != nil {
				t.Fatal(err)
			}
			if len(zr.File) != len(a.Members()) {
				t.Fatalf("%d members, archive/zip %d", len(a.Members()), len(zr.File))
			}
			for i, zf := range zr.File {
				rc, err := zf.Open()
				if err != nil {
					t.Fatal(err)
				}
				want, _ := io.ReadAll(rc)
				rc.Close()
				m := a.Members()[i]
				got := make([]byte, m.Size())
				if n, err := m.File().ReadAt(got, 0); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, %v; archive/zip reads %d", m.Name(), n, err, len(want))
				}
			}
		})
	}
	// Junk between the central directory and the end record: offsets are
	// right as they are.
	cd := cdStart(plain)
	end := bytes.LastIndex(plain, []byte("PK\x05\x06"))
	gap := append(append(append([]byte(nil), plain[:end]...), "junk"...), plain[end:]...)
	a := openBytes(t, gap)
	if a.Prefix() != 0 || len(a.Members()) != 2 {
		t.Errorf("junk before the end record: Prefix %d, %d members", a.Prefix(), len(a.Members()))
	}
	if got := a.Members()[0]; got.Name() != "s.bin" || cd == 0 {
		t.Errorf("first member %q", got.Name())
	}
}
