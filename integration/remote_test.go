//go:build linux

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/testserver"
)

// remoteArchive writes an archive larger than what a remote mount fetches
// at first (4 MiB of tail), so reads go through fetched blocks: a 12 MiB
// stored array, a deflated array of noise and one of a ramp.
func remoteArchive(t *testing.T, dir string) string {
	t.Helper()
	noise := make([]byte, 6<<20)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range noise {
		noise[i] = byte(r.Uint32() & 0x3f)
	}
	arrays := []arrayMember{
		newArray(t, "stored.npy", "<f4", []int64{3 << 20}, f32s(3<<20), false),
		newArray(t, "noise.npy", "|u1", []int64{6 << 20}, noise, true),
		newArray(t, "ramp.npy", "<i8", []int64{1 << 19}, i64s(1<<19), true),
	}
	ms := make([]member, len(arrays))
	for i, a := range arrays {
		ms[i] = a.member
	}
	path := filepath.Join(dir, "remote.npz")
	writeZip(t, path, ms)
	return path
}

// corpusArchives are the archives of the npz corpus, and one larger.
func corpusArchives(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../npz/testdata/*.npz")
	if err != nil || len(paths) < 10 {
		t.Fatalf("npz corpus: %v, %d archives", err, len(paths))
	}
	return append(paths, remoteArchive(t, t.TempDir()))
}

// sameTree checks that every file of the local mount reads back the same
// through the remote one (or fails on both), and that both list the same
// names.
func sameTree(t *testing.T, what, local, remote string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		rp := filepath.Join(remote, rel)
		if d.IsDir() {
			want, _ := os.ReadDir(p)
			got, err := os.ReadDir(rp)
			if err != nil || len(got) != len(want) {
				t.Errorf("%s: %s: %d entries (%v), local %d", what, rel, len(got), err, len(want))
			}
			return nil
		}
		n++
		want, werr := os.ReadFile(p)
		got, gerr := os.ReadFile(rp)
		if d.Name() == "header.json" {
			// Only a local archive's stored arrays say where their
			// data lies in the archive file.
			want = archiveOffset.ReplaceAll(want, nil)
		}
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: %s: %d bytes, %v; local %d bytes, %v", what, rel, len(got), gerr, len(want), werr)
		}
		if werr != nil && !errors.Is(gerr, syscall.EIO) {
			t.Errorf("%s: %s: remote error %v, want EIO like the local %v", what, rel, gerr, werr)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Errorf("%s: walking the local mount: %v (%d files)", what, err, n)
	}
}

var archiveOffset = regexp.MustCompile(`\n  "archive_offset": \d+,`)

// s3Env gives npzfs (and its daemon) the test server's credentials and
// nothing from this machine's AWS files.
func s3Env(t *testing.T, srv *testserver.S3) {
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestRemoteCorpus: every archive of the corpus, served by nginx and by an
// S3 gateway, reads back through every view exactly as a local mount of
// it does.
func TestRemoteCorpus(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archives := corpusArchives(t)
	ng := testserver.StartNginx(t, www)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "corpus")
	for _, a := range archives {
		data, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(a)
		os.WriteFile(filepath.Join(www, name), data, 0o644)
		s3.Put(t, "corpus", "npz/"+name, data)
	}
	for _, a := range archives {
		name := filepath.Base(a)
		local := mount(t, a)
		sameTree(t, "http "+name, local, mount(t, ng.URL+"/"+name))
		sameTree(t, "s3 "+name, local, mount(t, "s3://corpus/npz/"+name, "--endpoint", s3.Endpoint))
	}
}

// TestRemoteNumpyCAndOd: numpy's memory map, a C program's mmap and od
// read a remote mount, and the mount shows the URL without its query.
func TestRemoteNumpyCAndOd(t *testing.T) {
	needFuse(t)
	needNumpy(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	ng := testserver.StartNginx(t, www)
	dir := mount(t, ng.URL+"/remote.npz?X-Amz-Signature=hushhush", "--header", "Authorization: Bearer hushhush")
	out, err := exec.Command(python, "-c", `
import sys, numpy as np
a = np.load(sys.argv[1] + "/stored.npy", mmap_mode="r")
b = np.load(sys.argv[2])["stored"]
n = np.load(sys.argv[1] + "/noise.npy", mmap_mode="r")
m = np.load(sys.argv[2])["noise"]
print(type(a).__name__, a.shape, bool((a == b).all()), float(a[-1]), bool((n == m).all()))
`, dir, archive).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "memmap (3145728,) True 786331.75 True" {
		t.Errorf("numpy: %v: %s", err, out)
	}
	od, err := exec.Command("od", "-A", "d", "-t", "f4", "-j", "4", "-N", "8", filepath.Join(dir, "stored", "raw.bin")).Output()
	if err != nil || !strings.Contains(string(od), "-99.75") || !strings.Contains(string(od), "-99.5") {
		t.Errorf("od: %v: %s", err, od)
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	df, _ := exec.Command("df", dir).CombinedOutput()
	mnt, _ := exec.Command("mount").CombinedOutput()
	var cmdlines []byte
	for _, pid := range daemons(dir) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cmdlines = append(cmdlines, b...)
	}
	for what, b := range map[string][]byte{"/proc/mounts": mounts, "df": df, "mount": mnt, "the daemon's command line": cmdlines} {
		if bytes.Contains(b, []byte("hushhush")) {
			t.Errorf("%s shows a secret: %s", what, b)
		}
	}
	if !bytes.Contains(mounts, []byte(ng.URL+"/remote.npz "+dir)) {
		t.Errorf("/proc/mounts lacks the URL without its query:\n%s", mounts)
	}
}

// TestRemoteRequests: a mount costs one request (the tail, which holds
// the whole central directory), and np.load with a memory map plus one
// element of the stored array a few more, counted in nginx's log.
func TestRemoteRequests(t *testing.T) {
	needFuse(t)
	needNumpy(t)
	www := t.TempDir()
	remoteArchive(t, www)
	ng := testserver.StartNginx(t, www)
	dir := mount(t, ng.URL+"/remote.npz")
	if got := ng.Requests(); len(got) != 1 || !strings.Contains(got[0], `"bytes=-`) {
		t.Errorf("mounting made these requests: %q", got)
	}
	out, err := exec.Command(python, "-c", `
import sys, numpy as np
a = np.load(sys.argv[1] + "/stored.npy", mmap_mode="r")
print(float(a[1000000]))
`, dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "249900.0" {
		t.Errorf("numpy: %v: %s", err, out)
	}
	if got := ng.Requests(); len(got) > 3 {
		t.Errorf("mount, np.load and one element made %d requests, want at most 3: %q", len(got), got)
	}
}

// TestRemoteFaults: through a proxy that spoils one request in three
// (500, 503 SlowDown, a 200 for a range, a reset body, a truncated one),
// every byte still reads back exactly, over HTTP and S3; when every
// request fails, reads fail with EIO and the daemon lives on, and reads
// work again once the server mends.
func TestRemoteFaults(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	ng := testserver.StartNginx(t, www)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "faults")
	s3.Put(t, "faults", "remote.npz", data)
	local := mount(t, archive)
	all := []faultproxy.Fault{faultproxy.Status500, faultproxy.SlowDown, faultproxy.Whole200, faultproxy.Reset, faultproxy.Truncate}
	for _, tc := range []struct {
		name, upstream, path string
		flags                []string
	}{
		{"http", ng.URL, "/remote.npz", nil},
		{"s3", s3.Endpoint, "", nil},
	} {
		p, err := faultproxy.Start(tc.upstream, faultproxy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		url, flags := p.URL+tc.path, tc.flags
		if tc.name == "s3" {
			url, flags = "s3://faults/remote.npz", []string{"--endpoint", p.URL}
		}
		dir := mount(t, url, flags...)
		p.SetFaults(faultproxy.Every(3, all...))
		sameTree(t, tc.name+" with faults", local, dir)
		if p.Faults() < int64(len(all)) {
			t.Errorf("%s: only %d faults injected in %d requests", tc.name, p.Faults(), p.Requests())
		}
		// Every request fails: EIO, and the daemon lives. (A fresh
		// mount: the first has every byte in its cache, and the
		// kernel's.)
		dir = mount(t, url, flags...)
		p.SetFaults(func(int64, *http.Request) faultproxy.Fault { return faultproxy.Status500 })
		pids := daemons(dir)
		if _, err := os.ReadFile(filepath.Join(dir, "noise.npy")); !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: reading while every request fails: %v, want EIO", tc.name, err)
		}
		// Its views folder is empty for now, and not remembered so.
		if _, err := os.Stat(filepath.Join(dir, "noise", "raw.bin")); err == nil {
			t.Errorf("%s: noise/raw.bin found while its header cannot be fetched", tc.name)
		}
		if len(pids) != 1 || !processAlive(pids[0]) {
			t.Fatalf("%s: daemon %v gone after failed reads", tc.name, pids)
		}
		p.SetFaults(nil)
		got, err := os.ReadFile(filepath.Join(dir, "noise", "raw.bin"))
		want, _ := os.ReadFile(filepath.Join(local, "noise", "raw.bin"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: after the server mends: %d bytes, %v", tc.name, len(got), err)
		}
	}
}

// TestRemoteObjectReplaced: an archive replaced on the server while
// mounted: bytes read before still read, bytes not yet fetched fail with
// EIO (never the new object's), over HTTP and S3.
func TestRemoteObjectReplaced(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	data, _ := os.ReadFile(archive)
	ng := testserver.StartNginx(t, www)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "rep")
	s3.Put(t, "rep", "remote.npz", data)
	local := mount(t, archive)
	want, _ := os.ReadFile(filepath.Join(local, "stored", "raw.bin"))
	changed := changedArchive(data)
	for _, tc := range []struct {
		name, url string
		flags     []string
		replace   func()
	}{
		{"http", ng.URL + "/remote.npz", nil, func() { replaceServed(www, changed) }},
		{"s3", "s3://rep/remote.npz", []string{"--endpoint", s3.Endpoint}, func() { s3.Put(t, "rep", "remote.npz", changed) }},
	} {
		dir := mount(t, tc.url, tc.flags...)
		f, err := os.Open(filepath.Join(dir, "stored", "raw.bin"))
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 4096)
		if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, want[:4096]) {
			t.Errorf("%s: first read: %v", tc.name, err)
		}
		tc.replace()
		deep := make([]byte, 4096)
		if _, err := f.ReadAt(deep, 8<<20); !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: read of the replaced object: %v, want EIO", tc.name, err)
		}
		if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, want[:4096]) {
			t.Errorf("%s: bytes read before the change: %v", tc.name, err)
		}
		f.Close()
	}
}

// changedArchive is remoteArchive's bytes data changed in its stored
// array, its last 5 MiB (the tail a mount fetches first) kept.
func changedArchive(data []byte) []byte {
	changed := bytes.Clone(data)
	for i := 1000; i < len(changed)-(5<<20); i += 4096 {
		changed[i] ^= 0xff
	}
	return changed
}

// replaceServed replaces remote.npz in nginx's folder www by b, with a
// later time: nginx's ETag is the file's mtime and size, so a file
// replaced in the same second by one of the same size would have the
// same.
func replaceServed(www string, b []byte) {
	tmp := filepath.Join(www, "new.tmp")
	os.WriteFile(tmp, b, 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(tmp, later, later)
	os.Rename(tmp, filepath.Join(www, "remote.npz"))
}

// TestRemoteMountFailures: what cannot be mounted says why in one line,
// without the URL's query, and leaves nothing mounted.
func TestRemoteMountFailures(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	os.WriteFile(filepath.Join(www, "notzip.npz"), bytes.Repeat([]byte("not a zip "), 1000), 0o644)
	os.WriteFile(filepath.Join(www, "empty.npz"), nil, 0o644)
	ng := testserver.StartNginx(t, www)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "fail")
	s3.Put(t, "fail", "empty.npz", nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{ng.URL + "/missing.npz?sig=hushhush"}, "not found (HTTP 404)"},
		{[]string{ng.URL + "/notzip.npz"}, "not a readable .npz archive"},
		{[]string{"http://127.0.0.1:1/x.npz"}, "connection refused"},
		{[]string{ng.URL + "/empty.npz"}, "/empty.npz: the object is empty (0 bytes): not an archive"},
		{[]string{"s3://fail/empty.npz", "--endpoint", s3.Endpoint}, "s3://fail/empty.npz: the object is empty (0 bytes): not an archive"},
		{[]string{"s3://fail/missing.npz", "--endpoint", s3.Endpoint}, "not found"},
		{[]string{"s3://nobucket/x.npz", "--endpoint", s3.Endpoint}, "no such bucket"},
		{[]string{"s3://fail/x.npz", "--endpoint", s3.Endpoint, "--no-sign-request"}, "access denied"},
	} {
		dir := t.TempDir()
		args := append([]string{"mount", tc.args[0], dir}, tc.args[1:]...)
		r := npzfs(t, args...)
		oneLine(t, tc.args[0], r, 1)
		if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "hushhush") {
			t.Errorf("%s: %q, want one line with %q and no query", tc.args[0], r.stderr, tc.want)
		}
		if isMounted(dir) {
			t.Errorf("%s: mounted", tc.args[0])
			clear(t, dir)
		}
	}
}

// TestRemoteErrorsOneLine: the remote errors a new user meets are one
// line each, with what to do, and come quickly where nothing can
// succeed: no credentials anywhere the SDK looks, a prefix where an
// object is wanted and the reverse, a mistyped URL scheme. The bound on
// time is ten times the promise (3 s), to catch a retry loop or a hang,
// not to time the machine.
func TestRemoteErrorsOneLine(t *testing.T) {
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "errs")
	data, err := os.ReadFile(remoteArchive(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	s3.Put(t, "errs", "run/a.npz", data)
	ep := s3.Endpoint
	for _, tc := range []struct {
		what string
		args []string
		env  []string // set to "" for this case
		want []string
	}{
		{"no credentials", []string{"ls", "s3://errs/run/a.npz", "--endpoint", ep},
			[]string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"},
			[]string{"no AWS credentials found", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "--no-sign-request"}},
		{"a prefix where an object is wanted", []string{"inspect", "s3://errs/run/", "ramp", "--endpoint", ep}, nil,
			[]string{"is a folder", "s3://errs/run/NAME.npz"}},
		{"an object name that is a prefix", []string{"ls", "s3://errs/run", "--endpoint", ep}, nil,
			[]string{"is not an object but a prefix", "trailing /"}},
		{"a mistyped scheme", []string{"ls", "htp://127.0.0.1/a.npz"}, nil,
			[]string{`unknown URL scheme "htp://"`}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			for _, k := range tc.env {
				t.Setenv(k, "")
			}
			start := time.Now()
			r := npzfs(t, tc.args...)
			took := time.Since(start)
			oneLine(t, tc.what, r, 1)
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%s: %q lacks %q", tc.what, r.stderr, w)
				}
			}
			if strings.Contains(r.stderr, "SDK") || strings.Contains(r.stderr, "operation error") {
				t.Errorf("%s: the SDK's own text: %q", tc.what, r.stderr)
			}
			if took > 30*time.Second {
				t.Errorf("%s: took %v", tc.what, took)
			}
			t.Logf("%s: %v", tc.what, took)
		})
	}
}

// TestRemoteLsAndInspect: npzfs ls and inspect take the same URLs as
// mount, over HTTP and S3, and print what they print for the local file.
func TestRemoteLsAndInspect(t *testing.T) {
	www := t.TempDir()
	archive := remoteArchive(t, www)
	data, _ := os.ReadFile(archive)
	ng := testserver.StartNginx(t, www)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "lsin")
	s3.Put(t, "lsin", "remote.npz", data)
	wantLs := npzfs(t, "ls", archive)
	wantIn := npzfs(t, "inspect", archive, "ramp")
	if wantLs.code != 0 || wantIn.code != 0 {
		t.Fatalf("local: ls %d %s, inspect %d %s", wantLs.code, wantLs.stderr, wantIn.code, wantIn.stderr)
	}
	for _, args := range [][]string{
		{ng.URL + "/remote.npz?sig=hushhush"},
		{"s3://lsin/remote.npz", "--endpoint", s3.Endpoint},
	} {
		ls := npzfs(t, append([]string{"ls", args[0]}, args[1:]...)...)
		in := npzfs(t, append([]string{"inspect", args[0], "ramp"}, args[1:]...)...)
		if ls.code != 0 || ls.stdout != wantLs.stdout {
			t.Errorf("ls %s: exit %d, %s\n%s\nwant\n%s", args[0], ls.code, ls.stderr, ls.stdout, wantLs.stdout)
		}
		// header.json of a local stored array also says where its data
		// lies in the archive file; a remote one does not.
		if in.code != 0 || in.stdout != string(archiveOffset.ReplaceAll([]byte(wantIn.stdout), nil)) {
			t.Errorf("inspect %s: exit %d, %s\n%s", args[0], in.code, in.stderr, in.stdout)
		}
		miss := npzfs(t, append([]string{"inspect", args[0], "nothere"}, args[1:]...)...)
		if miss.code != 1 || !strings.Contains(miss.stderr, "ramp") || strings.Contains(miss.stderr, "hushhush") {
			t.Errorf("inspect %s nothere: exit %d, %q", args[0], miss.code, miss.stderr)
		}
	}
}

// TestRemoteIndexSplits: npzfs index of an archive served over HTTP
// splits a large member's first pass among two threads, reading the
// object by ranges from both, and a mount of the same URL then reads the
// member whole right through the index it saved.
func TestRemoteIndexSplits(t *testing.T) {
	www := t.TempDir()
	_, raw := noiseArchive(t, www)
	ng := testserver.StartNginx(t, www)
	url := ng.URL + "/noise.npz"
	idx := t.TempDir()
	r := npzfs(t, "index", "--workers", "2", url, "--index-dir", idx)
	if m := indexedLine.FindStringSubmatch(r.stdout); r.code != 0 || m == nil || m[1] != "1" || m[3] != "1" {
		t.Fatalf("npzfs index %s: exit %d, stdout %q, stderr %q", url, r.code, r.stdout, r.stderr)
	}
	dir := mount(t, url, "--index-dir", idx)
	got, err := os.ReadFile(filepath.Join(dir, "noise", "raw.bin"))
	if err != nil || !bytes.Equal(got, raw) {
		t.Errorf("reading the member whole: %v, or wrong bytes", err)
	}
	clear(t, dir)
}

// TestRemoteDiskCache: with --disk-cache, a second mount of the unchanged
// object reads every file with one request (the tail); a replaced object
// is fetched anew and read right, never from the old one's blocks.
func TestRemoteDiskCache(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	data, _ := os.ReadFile(archive)
	cache := t.TempDir()
	ng := testserver.StartNginx(t, www)
	local := mount(t, archive)
	url := ng.URL + "/remote.npz"
	dir := mount(t, url, "--disk-cache", cache)
	sameTree(t, "first mount", local, dir)
	clear(t, dir)
	before := len(ng.Requests())
	dir = mount(t, url, "--disk-cache", cache)
	sameTree(t, "second mount", local, dir)
	if got := ng.Requests()[before:]; len(got) != 1 || !strings.Contains(got[0], `"bytes=-`) {
		t.Errorf("the second mount made these requests, want the tail alone: %q", got)
	}
	clear(t, dir)

	// Replaced by an archive of the same size (nginx's ETag changes
	// with the mtime).
	changed := bytes.Clone(data)
	for i := 1000; i < len(changed)-(5<<20); i += 4096 {
		changed[i] ^= 0xff
	}
	newLocal := filepath.Join(t.TempDir(), "remote.npz")
	os.WriteFile(newLocal, changed, 0o644)
	tmp := filepath.Join(www, "new.tmp")
	os.WriteFile(tmp, changed, 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(tmp, later, later)
	os.Rename(tmp, filepath.Join(www, "remote.npz"))
	before = len(ng.Requests())
	dir = mount(t, url, "--disk-cache", cache)
	// Lazy, as a remote member no sidecar covers is served: the changed
	// bytes break the CRC-32s, which a local mount verifies first.
	newDir := mount(t, newLocal, "--verify=lazy")
	sameTree(t, "replaced", newDir, dir)
	if got := len(ng.Requests()) - before; got < 3 {
		t.Errorf("the replaced object was read with %d requests: from the old one's blocks?", got)
	}
}

// TestRemoteSavedIndexFaults: a remote archive mounted with its saved
// indexes. While every request fails, reads fail with EIO and the index
// stays (in its folder, and in use: the log refuses no index); once the
// server mends, reads are right. When the object is replaced, the old
// content's indexes leave the folder.
func TestRemoteSavedIndexFaults(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	archive := remoteArchive(t, www)
	data, _ := os.ReadFile(archive)
	ng := testserver.StartNginx(t, www)
	local := mount(t, archive)
	p, err := faultproxy.Start(ng.URL, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url := p.URL + "/remote.npz"
	idx := t.TempDir()
	if r := npzfs(t, "index", url, "--index-dir", idx); r.code != 0 {
		t.Fatalf("npzfs index %s: exit %d, %q %q", url, r.code, r.stdout, r.stderr)
	}
	saved := map[string][]byte{}
	for _, f := range indexFiles(t, idx) {
		saved[f], _ = os.ReadFile(f)
	}
	if len(saved) != 2 {
		t.Fatalf("%d indexes saved", len(saved))
	}
	want := map[string][]byte{}
	for _, name := range []string{"noise", "ramp"} {
		want[name], _ = os.ReadFile(filepath.Join(local, name, "raw.bin"))
	}
	read := func(dir, name string, off int64) error {
		b := make([]byte, 64<<10)
		n, err := readAt(filepath.Join(dir, name, "raw.bin"), b, off)
		if !bytes.Equal(b[:n], want[name][off:off+int64(n)]) {
			t.Errorf("%s at %d: wrong bytes", name, off)
		}
		return err
	}

	log := filepath.Join(t.TempDir(), "npzfs.log")
	dir := mount(t, url, "--index-dir", idx, "--log", log)
	if err := read(dir, "noise", 5<<20); err != nil {
		t.Fatalf("deep read with the saved index: %v", err)
	}
	p.SetFaults(func(int64, *http.Request) faultproxy.Fault { return faultproxy.Status500 })
	if err := read(dir, "noise", 1<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("read while every request fails: %v, want EIO", err)
	}
	p.SetFaults(nil)
	for _, off := range []int64{1 << 20, 3 << 20} {
		if err := read(dir, "noise", off); err != nil {
			t.Errorf("read at %d after the server mended: %v", off, err)
		}
	}
	clear(t, dir)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("saved index")) || bytes.Contains(b, []byte("does not match")) {
		t.Errorf("an index was refused for a failed fetch: %s", b)
	}
	for f, b := range saved {
		if now, err := os.ReadFile(f); err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s was not kept: %v", f, err)
		}
	}

	// Replaced: the indexes the mount used are of content that is gone.
	dir = mount(t, url, "--index-dir", idx)
	for _, name := range []string{"noise", "ramp"} {
		if err := read(dir, name, int64(len(want[name])-100000)); err != nil {
			t.Fatalf("%s: deep read: %v", name, err)
		}
	}
	stored, err := os.Open(filepath.Join(dir, "stored", "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer stored.Close()
	replaceServed(www, changedArchive(data))
	if _, err := stored.ReadAt(make([]byte, 4096), 8<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the replaced object: %v, want EIO", err)
	}
	stored.Close()
	clear(t, dir)
	if left := indexFiles(t, idx); len(left) != 0 {
		t.Errorf("indexes of the replaced object left: %v", left)
	}
}

// readAt reads len(b) bytes of file at off.
func readAt(file string, b []byte, off int64) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(b, off)
}

// TestRemoteDiskCacheReadOnly: a --disk-cache folder the daemon cannot
// write to refuses the mount in one line, whether it is empty or holds
// blocks of the archive (which it could serve but never keep more of).
func TestRemoteDiskCacheReadOnly(t *testing.T) {
	via := withoutDAC(t)
	www := t.TempDir()
	remoteArchive(t, www)
	ng := testserver.StartNginx(t, www)
	url := ng.URL + "/remote.npz"
	filled, empty := t.TempDir(), t.TempDir()
	clear(t, mount(t, url, "--disk-cache", filled))
	for _, dir := range []string{filled, empty} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			os.Chown(p, nobody, nobody)
			if d != nil && d.IsDir() {
				return os.Chmod(p, 0o555)
			}
			return os.Chmod(p, 0o444)
		})
	}
	for _, c := range []struct{ name, dir string }{{"filled", filled}, {"empty", empty}} {
		mnt := t.TempDir()
		clearLater(t, mnt)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r := run(t, exec.CommandContext(ctx, via[0], append(via[1:], bin, "mount", "--disk-cache", c.dir, url, mnt)...))
		cancel()
		oneLine(t, c.name, r, 1)
		if !strings.Contains(r.stderr, "disk cache") || !strings.Contains(r.stderr, "permission denied") {
			t.Errorf("%s: %q does not say the disk cache cannot be written", c.name, r.stderr)
		}
	}
}
