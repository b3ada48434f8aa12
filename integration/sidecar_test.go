//go:build linux

package integration

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/testserver"
)

// getObject reads a whole object, or fails.
func getObject(t *testing.T, srv *testserver.S3, bucket, key string) []byte {
	t.Helper()
	b := tryGet(srv, bucket, key)
	if b == nil {
		t.Fatalf("cannot get s3://%s/%s", bucket, key)
	}
	return b
}

// readRaw reads 4 KiB of f at off and checks them against want.
func readRaw(t *testing.T, what, path string, want []byte, off int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 4096)
	if _, err := f.ReadAt(p, off); err != nil || !bytes.Equal(p, want[off:off+4096]) {
		t.Errorf("%s: 4 KiB at %d of %s: %v, or wrong bytes", what, off, path, err)
	}
}

// noiseInS3 starts versitygw and puts noiseArchive's archive there as
// s3://bucket/key; it returns the server, the array's bytes and the
// archive's.
func noiseInS3(t *testing.T, bucket, key string) (*testserver.S3, []byte, []byte) {
	t.Helper()
	archive, raw := noiseArchive(t, t.TempDir())
	data, _ := os.ReadFile(archive)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, bucket)
	s3.Put(t, bucket, key, data)
	return s3, raw, data
}

// TestRemoteSidecarShared: npzfs index --sidecar on one machine puts the
// sidecar beside an S3 archive; on another (a fresh index folder) a run
// finds it there, holding every index, and keeps it; a mount on a third
// reads 4 KiB at 90% of the deflated member with at most 4 requests (the
// sidecar's start, with its first index's table, then at once the
// span's window and the span) and every byte right.
func TestRemoteSidecarShared(t *testing.T) {
	needFuse(t)
	s3, raw, _ := noiseInS3(t, "side", "ds/noise.npz")
	url := "s3://side/ds/noise.npz"
	r := npzfs(t, "index", "--sidecar", url, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stdout, "; sidecar s3://side/ds/noise.npzidx\n") {
		t.Fatalf("index --sidecar: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	put := getObject(t, s3, "side", "ds/noise.npzidx")
	r = npzfs(t, "index", "--sidecar", url, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stdout, "1 already saved") || !strings.Contains(r.stdout, "; sidecar s3://side/ds/noise.npzidx already there\n") {
		t.Errorf("index --sidecar on another machine: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if now := getObject(t, s3, "side", "ds/noise.npzidx"); !bytes.Equal(now, put) {
		t.Error("the sidecar was put again")
	}

	p, err := faultproxy.Start(s3.Endpoint, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mount(t, url, "--endpoint", p.URL, "--index-dir", t.TempDir(), "--log", log)
	rawBin := filepath.Join(mnt, "noise", "raw.bin")
	if _, err := os.Stat(rawBin); err != nil { // its npy header
		t.Fatal(err)
	}
	before := p.Requests()
	off := int64(len(raw)) * 9 / 10
	readRaw(t, "with the sidecar", rawBin, raw, off)
	if n := p.Requests() - before; n > 4 {
		t.Errorf("the first read at 90%% made %d requests, want at most 4", n)
	}
	for _, off := range []int64{1 << 20, int64(len(raw)) / 2, int64(len(raw)) - 4096} {
		readRaw(t, "with the sidecar", rawBin, raw, off)
	}
	clear(t, mnt)
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("not used")) {
		t.Errorf("the log: %s", b)
	}
}

// TestRemoteSidecarConcurrentIndex: two npzfs index --sidecar of one S3
// archive at once (two machines, two index folders) both succeed, and
// one of them puts the sidecar: the other finds it there, or loses the
// conditional put to it and keeps it.
func TestRemoteSidecarConcurrentIndex(t *testing.T) {
	s3, raw, _ := noiseInS3(t, "race", "noise.npz")
	url := "s3://race/noise.npz"
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		idx := t.TempDir()
		wg.Go(func() {
			results[i] = npzfs(t, "index", "--sidecar", url, "--endpoint", s3.Endpoint, "--index-dir", idx, "--workers", "1")
		})
	}
	wg.Wait()
	written := 0
	for _, r := range results {
		if r.code != 0 {
			t.Errorf("index: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		switch {
		case strings.Contains(r.stdout, "; sidecar s3://race/noise.npzidx\n"):
			written++
		case !strings.Contains(r.stdout, "; sidecar s3://race/noise.npzidx already there\n"):
			t.Errorf("index: %q", r.stdout)
		}
	}
	if written != 1 {
		t.Errorf("%d of the two put the sidecar, want 1", written)
	}
	if needFuseOK() {
		mnt := mount(t, url, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
		readRaw(t, "after the race", filepath.Join(mnt, "noise", "raw.bin"), raw, int64(len(raw))*9/10)
	}
}

// needFuseOK reports whether tests can mount here.
func needFuseOK() bool { return checkFuse() == "" }

// TestRemoteSidecarRefused: a sidecar beside an S3 archive that is
// another archive's, of an older version of it, truncated, with flipped
// bytes in its table, or replaced while a mount reads with it, is said
// in the log and not used (or no longer), and every byte reads right.
func TestRemoteSidecarRefused(t *testing.T) {
	needFuse(t)
	s3, raw, data := noiseInS3(t, "bad", "noise.npz")
	index := func(key string) []byte {
		t.Helper()
		r := npzfs(t, "index", "--sidecar", "s3://bad/"+key, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("index %s: %d %q", key, r.code, r.stderr)
		}
		return getObject(t, s3, "bad", strings.TrimSuffix(key, ".npz")+".npzidx")
	}
	// Another version of the archive (other noise), indexed before the
	// archive was replaced by this one; and another archive's sidecar.
	older, _ := noiseArchiveOf(t, t.TempDir(), 99)
	olderData, _ := os.ReadFile(older)
	s3.Put(t, "bad", "noise.npz", olderData)
	olderSide := index("noise.npz")
	s3.Put(t, "bad", "noise.npz", data)
	good := index("noise.npz")
	otherData, _ := os.ReadFile(remoteArchive(t, t.TempDir()))
	s3.Put(t, "bad", "other/remote.npz", otherData)
	otherSide := index("other/remote.npz")
	flipped := bytes.Clone(good)
	i := bytes.Index(flipped, []byte("NPZFSIDX"))
	flipped[i+48+9] ^= 0x20 // a bit position in its table
	sidecars := map[string][]byte{
		"truncated":          good[:len(good)-200],
		"flipped":            flipped,
		"an older version's": olderSide,
		"another archive's":  otherSide,
	}
	wantLog := map[string]string{
		"truncated":          "index sidecar",
		"flipped":            "not used",
		"an older version's": "holds no index of it",
		"another archive's":  "holds no index of it",
	}
	for what, side := range sidecars {
		s3.Put(t, "bad", "noise.npzidx", side)
		log := filepath.Join(t.TempDir(), "npzfs.log")
		mnt := mount(t, "s3://bad/noise.npz", "--endpoint", s3.Endpoint, "--index-dir", t.TempDir(), "--log", log)
		for _, off := range []int64{int64(len(raw)) * 9 / 10, 1 << 20, int64(len(raw)) - 4096} {
			readRaw(t, what, filepath.Join(mnt, "noise", "raw.bin"), raw, off)
		}
		clear(t, mnt)
		if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte(wantLog[what])) {
			t.Errorf("%s: the log does not say %q: %s", what, wantLog[what], b)
		}
	}

	// Replaced while a mount reads with it: what was fetched of it is
	// still the old sidecar's (pinned to its ETag), and what was not is
	// refused, the index then dropped; either way every byte is right.
	s3.Put(t, "bad", "noise.npzidx", good)
	mnt := mount(t, "s3://bad/noise.npz", "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
	rawBin := filepath.Join(mnt, "noise", "raw.bin")
	readRaw(t, "before the sidecar is replaced", rawBin, raw, int64(len(raw))*9/10)
	s3.Put(t, "bad", "noise.npzidx", flipped)
	for _, off := range []int64{1 << 20, int64(len(raw)) / 3, int64(len(raw)) - 4096} {
		readRaw(t, "after the sidecar was replaced", rawBin, raw, off)
	}
}

// TestPrefixIndexAndLs: npzfs ls of an S3 prefix prints what it prints
// for the local folder; npzfs index --sidecar of the prefix puts a
// sidecar beside each archive with members that need an index (none
// beside the shards, whose compressed members are small), and a mount of
// the prefix on another machine reads deep into them with those
// sidecars.
func TestPrefixIndexAndLs(t *testing.T) {
	src := shardFolder(t, 6)
	_, raw := noiseArchive(t, filepath.Join(src, "part2"))
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "pix")
	putFolder(t, s3, "pix", "ds/", src)
	url := "s3://pix/ds/"
	want := npzfs(t, "ls", src)
	got := npzfs(t, "ls", url, "--endpoint", s3.Endpoint)
	if got.stdout != want.stdout || got.code != want.code || got.code != 1 || !strings.Contains(got.stderr, "broken.npz") {
		t.Errorf("ls %s: exit %d, %s\n%s\nwant exit %d\n%s", url, got.code, got.stderr, got.stdout, want.code, want.stdout)
	}
	r := npzfs(t, "index", "--sidecar", url, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir())
	// noise's member needs an index: one sidecar; shard0001's and
	// shard0005's compressed members are too small to need one; the
	// broken archive fails.
	if r.code != 1 || !strings.Contains(r.stdout, " small skipped; ") || !strings.Contains(r.stdout, "; sidecar s3://pix/ds/part2/noise.npzidx") || !strings.Contains(r.stderr, "broken.npz") {
		t.Errorf("index --sidecar %s: exit %d, %q %q", url, r.code, r.stdout, r.stderr)
	}
	if tryGet(s3, "pix", "ds/part2/noise.npzidx") == nil {
		t.Error("no sidecar ds/part2/noise.npzidx")
	}
	for _, key := range []string{"ds/part1/shard0001.npzidx", "ds/part2/shard0005.npzidx"} {
		if tryGet(s3, "pix", key) != nil {
			t.Errorf("a sidecar %s, of members that need no index", key)
		}
	}
	if !needFuseOK() {
		return
	}
	p, err := faultproxy.Start(s3.Endpoint, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mnt := mount(t, url, "--endpoint", p.URL, "--index-dir", t.TempDir())
	rawBin := filepath.Join(mnt, "part2", "noise.npz", "noise", "raw.bin")
	if _, err := os.Stat(rawBin); err != nil {
		t.Fatal(err)
	}
	before := p.Requests()
	readRaw(t, "a prefix's archive with its sidecar", rawBin, raw, int64(len(raw))*9/10)
	if n := p.Requests() - before; n > 4 {
		t.Errorf("the first read at 90%% made %d requests, want at most 4", n)
	}
}

// TestHTTPFolderMount: a folder nginx lists in JSON (autoindex_format
// json) mounts as the local folder does; one it does not list is
// refused in one line saying what the server must offer; either, given
// without its trailing /, is said to be a folder.
func TestHTTPFolderMount(t *testing.T) {
	needFuse(t)
	src := shardFolder(t, 8)
	ng := testserver.StartNginx(t, filepath.Dir(src), "autoindex on;", "autoindex_format json;")
	url := ng.URL + "/" + filepath.Base(src) + "/"
	mnt := mount(t, url)
	if n := checkSame(t, src, mnt); n != 8*2+1 {
		t.Errorf("compared %d files, want %d", n, 8*2+1)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "broken.npz", "npzfs-error.txt")); err != nil || !strings.Contains(string(b), "central directory") {
		t.Errorf("broken.npz/npzfs-error.txt: %q, %v", b, err)
	}
	plain := testserver.StartNginx(t, filepath.Dir(src))
	dir := t.TempDir()
	r := npzfs(t, "mount", plain.URL+"/"+filepath.Base(src)+"/", dir)
	oneLine(t, "a folder without a listing", r, 1)
	if !strings.Contains(r.stderr, "autoindex_format json") || !strings.Contains(r.stderr, "index.json") || isMounted(dir) {
		t.Errorf("a folder without a listing: %q", r.stderr)
		clear(t, dir)
	}
	// Without its trailing /, nginx redirects to the folder (then lists
	// it, or refuses): it is said to be a folder.
	for _, base := range []string{ng.URL, plain.URL} {
		u := base + "/" + filepath.Base(src)
		r := npzfs(t, "mount", u, dir)
		oneLine(t, "a folder without its /", r, 1)
		if want := u + " is not an archive but a folder: give it with a trailing / (" + u + "/)"; !strings.Contains(r.stderr, want) || isMounted(dir) {
			t.Errorf("a folder without its /: %q, want %q", r.stderr, want)
			clear(t, dir)
		}
	}
}

// tryGet reads a whole object, or nil when it cannot.
func tryGet(srv *testserver.S3, bucket, key string) []byte {
	out, err := srv.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		return nil
	}
	return b.Bytes()
}

// deepCost mounts url (through the proxy p, with flags), reads 4 KiB at
// 90% of its noise member and checks them; it returns what the read
// cost: the mount's remote requests and bytes fetched (npzfs status),
// and the requests the proxy had for the sidecar's object.
func deepCost(t *testing.T, what, url string, p *faultproxy.Proxy, sidecarAsked *atomic.Int64, raw []byte, flags ...string) (requests, fetched, sidecar int64) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "npzfs.log")
	mnt := mount(t, url, append([]string{"--index-dir", t.TempDir(), "--log", log}, flags...)...)
	rawBin := filepath.Join(mnt, "noise", "raw.bin")
	if _, err := os.Stat(rawBin); err != nil { // its npy header
		t.Fatal(err)
	}
	before, asked := status(t, mnt).Remote, sidecarAsked.Load()
	// In a process of its own, so that a read waiting for the sidecar
	// (for as long as the flags let a request go on) is found, and ended.
	off := int64(len(raw)) * 9 / 10
	dd := exec.Command("dd", "if="+rawBin, "bs=4096", "skip="+strconv.FormatInt(off/4096, 10), "count=1", "status=none")
	var out bytes.Buffer
	dd.Stdout = &out
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, dd) {
		t.Fatalf("%s: the deep read did not end: it waits for the sidecar", what)
	}
	if got := out.Bytes(); dd.ProcessState.ExitCode() != 0 || !bytes.Equal(got, raw[off/4096*4096:][:4096]) {
		t.Errorf("%s: the deep read: exit %d, %d bytes, or wrong ones", what, dd.ProcessState.ExitCode(), len(got))
	}
	after := status(t, mnt).Remote
	sidecar = sidecarAsked.Load() - asked
	clear(t, mnt)
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "does not match") || strings.Contains(string(b), "not used") {
		t.Errorf("%s: the log blames the index:\n%s", what, b)
	}
	return after.Requests - before.Requests, after.BytesFetched - before.BytesFetched, sidecar
}

// TestRemoteSidecarSilent: a sidecar beside an S3 archive that the
// server never answers, or trickles, costs a deep read (4 KiB at 90% of
// a deflated member) no more than that archive with no sidecar at all:
// the read inflates from the stream, not waiting for the sidecar's
// request (which may go on for an hour), and fetches no more bytes than
// without a sidecar (the requests they take vary with read-ahead's
// timing, with a sidecar or without); the sidecar costs its own
// requests alone, and is not blamed for the network.
func TestRemoteSidecarSilent(t *testing.T) {
	needFuse(t)
	s3, raw, _ := noiseInS3(t, "quiet", "noise.npz")
	url := "s3://quiet/noise.npz"
	p, err := faultproxy.Start(s3.Endpoint, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sidecarAsked atomic.Int64
	sidecarFault := func(f faultproxy.Fault) func(int64, *http.Request) faultproxy.Fault {
		return func(_ int64, r *http.Request) faultproxy.Fault {
			if !strings.HasSuffix(r.URL.Path, ".npzidx") {
				return faultproxy.None
			}
			sidecarAsked.Add(1)
			return f
		}
	}
	// A request may go on for an hour: a read that waited for the
	// sidecar would not end (deepCost's guard).
	flags := []string{"--endpoint", p.URL, "--stall-timeout", "1h", "--remote-timeout", "1h"}
	p.SetFaults(sidecarFault(faultproxy.None))
	reqs, fetched, side := deepCost(t, "no sidecar", url, p, &sidecarAsked, raw, flags...)
	t.Logf("no sidecar: the deep read made %d requests (%d for the sidecar), fetched %d bytes", reqs, side, fetched)
	if side == 0 || fetched == 0 {
		t.Fatalf("no sidecar: the deep read made %d requests for the sidecar and fetched %d bytes", side, fetched)
	}

	if r := npzfs(t, "index", "--sidecar", url, "--endpoint", s3.Endpoint, "--index-dir", t.TempDir()); r.code != 0 {
		t.Fatalf("index --sidecar: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// The sidecar serves: the same read costs a few requests.
	sideReqs, sideBytes, _ := deepCost(t, "a sidecar", url, p, &sidecarAsked, raw, flags...)
	t.Logf("a sidecar: the deep read made %d requests, fetched %d bytes", sideReqs, sideBytes)
	if sideBytes >= fetched {
		t.Errorf("with a sidecar the deep read fetched %d bytes, without one %d", sideBytes, fetched)
	}
	for _, f := range []faultproxy.Fault{faultproxy.Silent, faultproxy.Trickle} {
		p.SetFaults(sidecarFault(f))
		r, b, s := deepCost(t, "a "+f.String()+" sidecar", url, p, &sidecarAsked, raw, flags...)
		t.Logf("a %s sidecar: the deep read made %d requests (%d for the sidecar), fetched %d bytes", f, r, s, b)
		if b > fetched {
			t.Errorf("a %s sidecar: the deep read fetched %d bytes, without a sidecar %d", f, b, fetched)
		}
	}
}
