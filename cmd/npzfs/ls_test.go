package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/hostile"
	"github.com/npzfs/npzfs/internal/testfiles"
	"github.com/npzfs/npzfs/npy"
)

const corpusDir = "../../npz/testdata/"

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestLs(t *testing.T) {
	code, out, errs := runCmd("ls", corpusDir+"numpy_savez_compressed.npz")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 15 { // heading, 13 members, summary
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	col := strings.Index(lines[0], "DTYPE")
	for _, want := range []struct{ prefix, fields string }{
		{"ints.npy ", "<i8 (2, 3, 4) C 320 deflate 42.2%"},
		{"fortran.npy ", "<f8 (3, 4) F 224 deflate"},
		{"scalar.npy ", "<f8 () C 136 deflate"},
		{"empty.npy ", "<i4 (0, 3) C 128 deflate"},
		{"structured.npy ", "record(3 fields, 11 bytes) (4,) C 236"},
		{"objects.npy ", "|O (3,) C 317 deflate"},
	} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, want.prefix) {
				found = true
				if strings.Index(l, strings.Fields(want.fields)[0]) != col {
					t.Errorf("column of DTYPE not aligned in %q", l)
				}
				if got := strings.Join(strings.Fields(l[len(want.prefix):]), " "); !strings.HasPrefix(got, want.fields) {
					t.Errorf("%s: %q, want %q...", want.prefix, got, want.fields)
				}
			}
		}
		if !found {
			t.Errorf("no line for %s", want.prefix)
		}
	}
	if lines[len(lines)-1] != "13 members, 13 served" {
		t.Errorf("summary %q", lines[len(lines)-1])
	}
}

func TestLsReasons(t *testing.T) {
	code, out, _ := runCmd("ls", corpusDir+"names.npz")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"served as abs.npy",
		"name has a '..' component",
		"shadowed by a later member of the same name",
		`no views: a folder of members takes the name "a"`,
		`shadowed: a folder "b" holds other members`,
		`"nul\x00.npy"`, `"bad\xff.npy"`,
		"no views: npy: not a .npy stream",
		"but the member ends at byte 200 (728 bytes missing)",
		"29 members, 21 served",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q", want)
		}
	}
	_, out, _ = runCmd("ls", corpusDir+"methods.npz")
	for _, want := range []string{"cannot read: method 12 (bzip2)", "cannot read: method 93 (zstd)", "cannot read: encrypted"} {
		if !strings.Contains(out, want) {
			t.Errorf("methods listing lacks %q", want)
		}
	}
}

func TestLsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"ls"}, exitUsage, "needs ARCHIVE"},
		{[]string{"ls", "--bogus", "x"}, exitUsage, ""}, // main.go's parseFlags prints nothing for a bad flag
		{[]string{"ls", corpusDir + "missing.npz"}, exitFail, "does not exist"},
		{[]string{"ls", corpusDir + "names.json"}, exitFail, "not a zip archive"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errs, tc.msg) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errs)
		}
		if tc.code == exitFail && strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: stderr is not one line: %q", tc.args, errs)
		}
	}
	if code, _, _ := runCmd("ls", "--help"); code != exitOK {
		t.Errorf("ls --help: exit %d", code)
	}
}

func TestInspectArchive(t *testing.T) {
	for _, key := range []string{"fortran", "fortran.npy"} {
		var out, errb bytes.Buffer
		code := inspectArchive(context.Background(), corpusDir+"numpy_savez.npz", key, nil, &out, &errb)
		var h map[string]any
		if code != exitOK || errb.Len() != 0 || json.Unmarshal(out.Bytes(), &h) != nil {
			t.Fatalf("inspect %s: exit %d, %q, %q", key, code, out.String(), errb.String())
		}
		if h["fortran_order"] != true {
			t.Errorf("inspect %s: %s", key, out.String())
		}
	}
	for _, tc := range []struct{ archive, key, msg string }{
		{"numpy_savez.npz", "nothing", `no member "nothing"`},
		{"names.npz", "bad_magic", "bad magic"},
		{"names.npz", "notes.txt", "not a .npy member"},
		{"methods.npz", "bzip2", "method 12"},
		{"missing.npz", "x", "does not exist"},
	} {
		var out, errb bytes.Buffer
		code := inspectArchive(context.Background(), corpusDir+tc.archive, tc.key, nil, &out, &errb)
		if code != exitFail || out.Len() != 0 || !strings.Contains(errb.String(), tc.msg) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("inspect %s %s: exit %d, %q, %q", tc.archive, tc.key, code, out.String(), errb.String())
		}
	}
}

// TestInspectArchiveCommand runs "npzfs inspect ARCHIVE KEY" through the
// dispatcher.
func TestInspectArchiveCommand(t *testing.T) {
	code, out, errs := runCmd("inspect", corpusDir+"numpy_slash_keys.npz", "group/sub/y")
	var h map[string]any
	if code != exitOK || errs != "" || json.Unmarshal([]byte(out), &h) != nil {
		t.Fatalf("exit %d, %q, %q", code, out, errs)
	}
	code, out, errs = runCmd("inspect", corpusDir+"numpy_slash_keys.npz", "group/none")
	if code != exitFail || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "npzfs inspect: ") {
		t.Errorf("missing key: exit %d, %q, %q", code, out, errs)
	}
}

// TestLsProblems: problems of the archive as a whole follow the summary.
func TestLsProblems(t *testing.T) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range []string{"a.txt", "b.txt"} {
		fw, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(name))
	}
	w.Close()
	z := buf.Bytes()
	// The end record (the last 22 bytes) claims 3 entries.
	binary.LittleEndian.PutUint16(z[len(z)-12:], 3)
	binary.LittleEndian.PutUint16(z[len(z)-14:], 3)
	p := filepath.Join(t.TempDir(), "p.npz")
	if err := os.WriteFile(p, z, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd("ls", p)
	if code != exitOK || !strings.HasSuffix(out, "2 members, 2 served\narchive: end record claims 3 entries, the central directory has 2\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestLsVerify: --verify reads every member whole. A stored member with a
// flipped data byte (which the mount serves as it is: stored reads are not
// checked) fails its CRC-32; a deflated member with a wrong CRC-32 fails
// to read; a good member has no note; without --verify nothing is read.
func TestLsVerify(t *testing.T) {
	data := []byte(strings.Repeat("stored member bytes ", 50))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"flipped.txt", "good.txt"} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "deflated.txt", Method: zip.Deflate})
	w.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	z := buf.Bytes()
	z[30+len("flipped.txt")+7] ^= 1 // a data byte of the first member
	cd := int(binary.LittleEndian.Uint32(z[len(z)-6:]))
	i := bytes.LastIndex(z[cd:], []byte("PK\x01\x02")) + cd // deflated.txt's entry
	z[i+16] ^= 1                                            // its CRC-32
	path := filepath.Join(t.TempDir(), "v.npz")
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	code, plain, _ := runCmd("ls", path)
	if code != exitOK {
		t.Errorf("ls without --verify: exit %d, want 0", code)
	}
	code, out, errs := runCmd("ls", "--verify", path)
	if code != exitFail {
		t.Fatalf("exit %d, stderr %q; want exit 1 (two members fail)", code, errs)
	}
	// Why, on stderr too: a line for each failing member.
	if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "npzfs ls: "+path+": flipped.txt: reading fails: CRC-32 mismatch") ||
		!strings.HasPrefix(lines[1], "npzfs ls: "+path+": deflated.txt: reading fails: ") {
		t.Errorf("stderr %q; want a line for each failing member", errs)
	}
	if !strings.Contains(out, "\n3 members, 1 served, 1 verified, 2 failed verification\n") {
		t.Errorf("summary does not count the failures apart:\n%s", out)
	}
	if strings.Contains(plain, "reading fails") {
		t.Errorf("ls without --verify read the members:\n%s", plain)
	}
	for prefix, want := range map[string]string{"flipped.txt ": "CRC-32 mismatch: its bytes give", "deflated.txt ": "CRC-32 mismatch", "good.txt ": ""} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				found = true
				if got := strings.Contains(l, "reading fails"); got != (want != "") || !strings.Contains(l, want) {
					t.Errorf("%q, want a note with %q", l, want)
				}
			}
		}
		if !found {
			t.Errorf("no line for %s:\n%s", prefix, out)
		}
	}
}

// unreadableArchive writes hostile.Unreadable: a good member, one of
// method 14 (LZMA), which npzfs serves but cannot read, and one it does
// not serve.
func unreadableArchive(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "u.npz")
	if err := os.WriteFile(path, hostile.Unreadable(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLsVerifyUnreadable: a member of a method npzfs cannot read is
// counted as unreadable, not served, and --verify exits 1 for it as
// unzip -t would.
func TestLsVerifyUnreadable(t *testing.T) {
	path := unreadableArchive(t)
	code, out, _ := runCmd("ls", path)
	if code != exitOK || !strings.Contains(out, "\n3 members, 1 served, 1 unreadable, 1 not served\n") {
		t.Errorf("ls: exit %d\n%s", code, out)
	}
	code, out, errs := runCmd("ls", "--verify", path)
	if code != exitFail || errs != "npzfs ls: "+path+": lzma.npy: member \"lzma.npy\" uses compression method 14 (lzma), which npzfs cannot read\n" {
		t.Errorf("ls --verify: exit %d, stderr %q, want 1 and a line naming the member\n%s", code, errs, out)
	}
}

// TestLsVerifyZipBomb: ls --verify of a zip bomb (a member that inflates
// to more than it declares) exits 1, and says why on stderr as well as
// in the table, for a script that keeps only stderr.
func TestLsVerifyZipBomb(t *testing.T) {
	var bomb []byte
	for _, c := range hostile.Cases() {
		if c.Name == "zip-bomb" {
			bomb = c.Archive
		}
	}
	path := filepath.Join(t.TempDir(), "bomb.npz")
	if err := os.WriteFile(path, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd("ls", "--verify", path)
	if code != exitFail || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "npzfs ls: "+path+": bomb.npy: reading fails: ") {
		t.Fatalf("exit %d, stderr %q; want 1 and one line naming bomb.npy\n%s", code, errs, out)
	}
	why := strings.TrimPrefix(strings.TrimSuffix(errs, "\n"), "npzfs ls: "+path+": bomb.npy: ")
	if !strings.Contains(out, why) {
		t.Errorf("stderr says %q, the table does not:\n%s", why, out)
	}
	// With --json the document says it, stdout stays one document.
	code, out, errs = runCmd("ls", "--verify", "--json", path)
	if code != exitFail || errs != "" || !json.Valid([]byte(out)) || !strings.Contains(out, `"state": "failed"`) {
		t.Errorf("--json: exit %d, stderr %q:\n%s", code, errs, out)
	}
}

// TestLsSeveral: ls of several archives lists them as a folder's are
// listed, each line starting with the archive's name as given, however
// long, the last
// line counting archives; one that cannot be opened (a folder among
// them too) is said on stderr and makes the exit code 1; --json gives
// one document of their listings.
func TestLsSeveral(t *testing.T) {
	// Paths longer than the NAME column's cap: each line names its
	// archive still.
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-long-folder-name/", 3))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := testfiles.Copy(t, corpusDir+"numpy_savez.npz", dir, "a.npz")
	b := testfiles.Copy(t, "../../npy/testdata/good/record_aligned.npy", dir, "b.npy")
	code, out, errs := runCmd("ls", a, b)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || errs != "" || !strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "ARCHIVE NAME DTYPE") {
		t.Fatalf("ls A B: exit %d, stderr %q:\n%s", code, errs, out)
	}
	if !strings.Contains(out, "\n"+a+"  ints.npy ") || !strings.Contains(out, "\n"+b+"  b.npy ") {
		t.Errorf("lines do not name their archives:\n%s", out)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "2 archives, ") {
		t.Errorf("summary %q", last)
	}
	missing := filepath.Join(dir, "missing.npz")
	code, out, errs = runCmd("ls", a, missing, dir, b)
	if code != exitFail || !strings.Contains(out, "\n2 archives, ") ||
		errs != "npzfs ls: "+missing+" does not exist (check the path)\n"+
			"npzfs ls: "+dir+" is a folder: give an archive in it, as "+dir+"/NAME.npz\n" {
		t.Errorf("ls A MISSING FOLDER B: exit %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = runCmd("ls", "--json", a, missing, b)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitFail || errs != "" {
		t.Fatalf("ls --json A MISSING B: exit %d, stderr %q, %v:\n%s", code, errs, err, out)
	}
	var archives []struct{ Archive string }
	var errors []struct{ Archive, Error string }
	json.Unmarshal(doc["archives"], &archives)
	json.Unmarshal(doc["errors"], &errors)
	if _, ok := doc["folder"]; ok || len(archives) != 2 || archives[0].Archive != a || archives[1].Archive != b ||
		len(errors) != 1 || errors[0].Archive != missing || !strings.Contains(errors[0].Error, "does not exist") {
		t.Errorf("ls --json A MISSING B: %s", out)
	}
}

// TestLsJSON: --json gives one object per member with the table's facts
// and reasons, and the counts, as a program would read them.
func TestLsJSON(t *testing.T) {
	code, out, errs := runCmd("ls", "--json", "--verify", unreadableArchive(t))
	if code != exitFail || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var got struct {
		Members []map[string]any `json:"members"`
		Counts  map[string]int   `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Members) != 3 {
		t.Fatalf("%d members", len(got.Members))
	}
	good, escape, lzma := got.Members[0], got.Members[1], got.Members[2]
	if escape["state"] != "not served" || escape["path"] != nil || !strings.Contains(escape["reason"].(string), "..") {
		t.Errorf("../escape.txt: %v", escape)
	}
	if good["name"] != "good.txt" || good["state"] != "served" || good["verify"] != "ok" || good["size"] != 10.0 || good["method"] != "stored" {
		t.Errorf("good.txt: %v", good)
	}
	if lzma["state"] != "unreadable" || !strings.Contains(lzma["reason"].(string), "method 14") || lzma["verify"] != nil {
		t.Errorf("lzma.txt: %v", lzma)
	}
	if got.Counts["served"] != 1 || got.Counts["unreadable"] != 1 || got.Counts["not_served"] != 1 || got.Counts["members"] != 3 {
		t.Errorf("counts %v", got.Counts)
	}

	code, out, _ = runCmd("ls", "--json", corpusDir+"numpy_savez_compressed.npz")
	var corpus struct {
		Members []map[string]any `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &corpus); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	for _, m := range corpus.Members {
		if m["name"] == "fortran.npy" && (m["dtype"] != "<f8" || m["fortran_order"] != true || m["views"] != true || len(m["shape"].([]any)) != 2) {
			t.Errorf("fortran.npy: %v", m)
		}
		// A 0-d array has a shape, (), and C order is said, not left out.
		if shape, ok := m["shape"].([]any); m["name"] == "scalar.npy" && (!ok || len(shape) != 0 || m["fortran_order"] != false) {
			t.Errorf("scalar.npy: %v", m)
		}
	}
	if !strings.Contains(out, `"dtype": "<`) {
		t.Errorf("dtypes are escaped:\n%s", out)
	}
}

// TestLsFolder: ls of a folder lists every archive and .npy file under
// it, each line starting with its path in the folder, names one it
// cannot open (exit 1), and --json gives each archive's listing.
func TestLsFolder(t *testing.T) {
	dir := t.TempDir()
	testfiles.Copy(t, corpusDir+"numpy_savez.npz", dir, "a.npz")
	testfiles.Copy(t, "../../npy/testdata/good/record_aligned.npy", dir, "sub/rec.npy")
	code, out, errs := runCmd("ls", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || errs != "" || !strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "ARCHIVE NAME DTYPE") {
		t.Fatalf("ls FOLDER: exit %d, stderr %q:\n%s", code, errs, out)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "2 archives, ") {
		t.Errorf("summary %q", last)
	}
	if !strings.Contains(out, "\nsub/rec.npy  rec.npy ") || !strings.Contains(out, "\na.npz        ints.npy ") || !strings.Contains(out, "   131200  stored  100.0%") {
		t.Errorf("lines do not name their archives:\n%s", out)
	}

	os.WriteFile(filepath.Join(dir, "bad.npz"), []byte("not a zip"), 0o644)
	code, out, errs = runCmd("ls", "--json", dir)
	var doc struct {
		Folder   string
		Archives []struct {
			Archive string
			Members []struct {
				Name  string
				DType string
				Descr json.RawMessage
			}
		}
		Errors []struct{ Archive, Error string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("ls --json FOLDER: %v\n%s", err, out)
	}
	if code != exitFail || errs != "" || len(doc.Archives) != 2 || len(doc.Errors) != 1 || doc.Errors[0].Archive != "bad.npz" {
		t.Errorf("ls --json FOLDER with a bad archive: exit %d, stderr %q: %+v", code, errs, doc)
	}
	// Files whose bytes do not agree with their names are refused as a
	// mount of the folder refuses them.
	testfiles.Copy(t, "../../npy/testdata/good/record_aligned.npy", dir, "npy.npz")
	testfiles.Copy(t, corpusDir+"numpy_savez.npz", dir, "zip.npy")
	code, _, errs = runCmd("ls", dir)
	for _, want := range []string{
		"npzfs ls: npy.npz: npy.npz is named .npz but holds a .npy file (name it .npy)\n",
		"npzfs ls: zip.npy: zip.npy is named .npy but holds a zip archive (name it .npz)\n",
	} {
		if code != exitFail || !strings.Contains(errs, want) {
			t.Errorf("ls FOLDER with misnamed files: exit %d, stderr %q, want %q", code, errs, want)
		}
	}
	// A record's dtype is numpy's dtype.str, its descr as header.json
	// gives it.
	for _, a := range doc.Archives {
		if a.Archive != "sub/rec.npy" {
			continue
		}
		m := a.Members[0]
		var descr []any
		if !strings.HasPrefix(m.DType, "|V") || json.Unmarshal(m.Descr, &descr) != nil || len(descr) != 5 {
			t.Errorf("a record's dtype %q, descr %s", m.DType, m.Descr)
		}
	}
}

func TestHumanSize(t *testing.T) {
	code, out, _ := runCmd("ls", "-h", corpusDir+"zip64.npz")
	if code != exitOK || strings.Contains(out, "HUMAN") || !regexp.MustCompile(`\s\d+(\.\d)?[KMG]?\s+stored`).MatchString(out) {
		t.Errorf("ls -h: exit %d:\n%s", code, out)
	}
}

// TestLsCountsFolderEntries: an archive's entry for a folder ("d/") is
// counted as served in the table's summary and in --json alike, and
// --verify has nothing in it to fail.
func TestLsCountsFolderEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.npz")
	z := hostile.Zip([]hostile.Member{{Name: "d/"}, {Name: "d/a.npy", Data: hostile.NPY("<i8", []int64{3}, make([]byte, 24))}})
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd("ls", "--verify", path); code != exitOK || !strings.HasSuffix(out, "\n2 members, 2 served, 2 verified\n") {
		t.Errorf("ls --verify: exit %d\n%s", code, out)
	}
	code, out, _ := runCmd("ls", "--json", path)
	var doc struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil {
		t.Fatalf("ls --json: exit %d, %v", code, err)
	}
	if c := doc.Counts; c["members"] != 2 || c["served"] != 2 || c["unreadable"]+c["failed"]+c["not_served"] != 0 {
		t.Errorf("ls --json counts %v, want 2 members, 2 served", c)
	}
}

// TestLsTruncatedNPY: ls, with --verify or not, of a .npy cut short
// says so in one line and exits 1 (it used to list it, "1 verified").
func TestLsTruncatedNPY(t *testing.T) {
	hdr, err := npy.EncodeHeader("<f8", false, []int64{100})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.npy")
	if err := os.WriteFile(path, append(hdr, make([]byte, 784)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ls", path}, {"ls", "--verify", path}} {
		code, out, errs := runCmd(args...)
		if code != exitFail || out != "" || !strings.Contains(errs, "truncated: the header's shape and dtype need 800 bytes of data from byte 128, but the file ends at byte 912 (16 bytes missing)") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
