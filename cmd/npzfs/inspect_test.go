package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npy"
)

func TestInspectFile(t *testing.T) {
	path := filepath.Join("..", "..", "npy", "testdata", "good", "record_titles.npy")
	want, err := os.ReadFile(strings.TrimSuffix(path, ".npy") + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"inspect", path}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %q", errb.String())
	}
	var got, exp any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	eb, _ := json.Marshal(exp)
	if !bytes.Equal(gb, eb) {
		t.Errorf("inspect output differs from numpy's expectation:\n%s\nwant\n%s", out.String(), want)
	}
	if !strings.HasPrefix(out.String(), "{\n  \"version\": \"1.0\",\n") || !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("not the pretty-printed header.json:\n%s", out.String())
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.npy")
	if err := os.WriteFile(bad, []byte("\x93NUMPY\x01\x00\x10\x00{'descr': 5}   \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A header for three float64s, with the data of one.
	hdr, err := npy.EncodeHeader("<f8", false, []int64{3})
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.npy")
	if err := os.WriteFile(short, append(hdr, make([]byte, 8)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"inspect", bad}, exitFail, "header does not contain exactly the keys"},
		{[]string{"inspect", filepath.Join(dir, "missing.npy")}, exitFail, "does not exist"},
		{[]string{"inspect"}, exitUsage, "needs FILE.npy, or ARCHIVE KEY"},
		{[]string{"inspect", "a", "b", "c"}, exitUsage, `unexpected argument "c"`},
		{[]string{"inspect", short}, exitFail, short + ": truncated: the header's shape and dtype need 24 bytes of data from byte 128, but the file ends at byte 136 (16 bytes missing)\n"},
		{[]string{"inspect", corpusDir + "numpy_savez_compressed.npz"}, exitUsage, "is an archive: name one of its keys: "},
		{[]string{"inspect", corpusDir + "numpy_savez_compressed.npz", "nope"}, exitFail, `no member "nope"; its keys: `},
		{[]string{"inspect", corpusDir + "names.npz", "up/../evil"}, exitFail, "the member up/../evil.npy is not served (name has a '..' component); its keys: "},
		{[]string{"inspect", "--nope", bad}, exitUsage, ""},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errb.String())
		}
		if !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, errb.String(), tc.msg)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q", tc.args, out.String())
		}
		if tc.code == exitFail && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: want one line on stderr, got %q", tc.args, errb.String())
		}
	}
}

// TestNPYWhereAnArchiveIsExpected: a .npy given to inspect with a key is
// named as one, with what to do instead; ls lists it as an archive of one
// array.
func TestNPYWhereAnArchiveIsExpected(t *testing.T) {
	hdr, err := npy.EncodeHeader("<f8", false, []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.npy")
	if err := os.WriteFile(path, append(hdr, make([]byte, 8)...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"inspect", path, "key"}, &out, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "is a .npy file, not an .npz archive") || !strings.Contains(errb.String(), "npzfs inspect "+path) {
		t.Errorf("inspect with a key: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	code = run([]string{"ls", "--verify", path}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "a.npy ") || !strings.Contains(out.String(), "<f8") || !strings.HasSuffix(out.String(), "1 member, 1 served, 1 verified\n") {
		t.Errorf("ls --verify of a .npy: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
