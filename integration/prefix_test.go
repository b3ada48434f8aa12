//go:build linux

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/testserver"
)

// putFolder uploads every file under src to bucket, keyed by prefix and
// its path under src.
func putFolder(t *testing.T, srv *testserver.S3, bucket, prefix, src string) {
	t.Helper()
	filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srv.Put(t, bucket, prefix+filepath.ToSlash(rel), b)
		return nil
	})
}

// deleteObject removes an object.
func deleteObject(t *testing.T, srv *testserver.S3, bucket, key string) {
	t.Helper()
	if _, err := srv.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete s3://%s/%s: %v", bucket, key, err)
	}
}

// names lists a folder of a mount, or fails.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ls %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestPrefixMount: an S3 prefix of shards mounts as a local folder of
// them does: every archive and .npy file reads back the same, sub-prefixes
// are folders, other objects are left out, a broken archive is a folder
// that says why. Mounting lists the top level with one request and asks
// for no object; looking into a shard costs at most the two requests a
// mount of that shard alone makes. A sub-prefix of more than a page of
// objects (1,000) is listed whole, a request a page. Sixteen readers across
// shards, with fewer kept open than they read, read every byte right.
func TestPrefixMount(t *testing.T) {
	needFuse(t)
	src := shardFolder(t, 24)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "pfx")
	putFolder(t, s3, "pfx", "ds/", src)
	for i := range 1005 {
		s3.Put(t, "pfx", fmt.Sprintf("ds/many/m%04d.npz", i), []byte("not an archive"))
	}
	p, err := faultproxy.Start(s3.Endpoint, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	mnt := mount(t, "s3://pfx/ds/", "--endpoint", p.URL, "--max-open", "4")
	if n := p.Requests(); n != 1 {
		t.Errorf("mounting made %d requests, want 1 (the top level's listing)", n)
	}
	top := strings.Join(names(t, mnt), " ")
	if !strings.HasPrefix(top, "broken.npz many part0 part1 part2 shard0000.npz shard0002.npz") || strings.Contains(top, "README") {
		t.Errorf("top of the mount: %s", top)
	}
	if n := p.Requests(); n != 1 {
		t.Errorf("ls of the top made %d more requests, want none (its listing is kept)", n-1)
	}
	before := p.Requests()
	if got := names(t, filepath.Join(mnt, "shard0006.npz")); strings.Join(got, " ") != "x x.npy x.ra y y.npy y.ra" {
		t.Errorf("shard0006.npz: %v", got)
	}
	if n := p.Requests() - before; n > 2 {
		t.Errorf("ls of a shard made %d requests, want at most 2", n)
	}
	before = p.Requests()
	if got := names(t, filepath.Join(mnt, "many")); len(got) != 1005 {
		t.Errorf("many/ lists %d names, want 1005", len(got))
	}
	if n := p.Requests() - before; n != 2 {
		t.Errorf("listing 1,005 objects made %d requests, want 2 (a page of 1,000, then the rest)", n)
	}
	if n := checkSame(t, src, mnt); n != 24*2+1 {
		t.Errorf("compared %d files, want %d", n, 24*2+1)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "broken.npz", "npzfs-error.txt")); err != nil || !strings.Contains(string(b), "central directory") {
		t.Errorf("broken.npz/npzfs-error.txt: %q, %v", b, err)
	}
	for _, q := range []string{"part1/grid", "part1/grid.ra", "part1/grid/raw.bin", "part1/shard0001.npz/x/header.json", "part1/shard0001.npz/y.ra"} {
		if _, err := os.Stat(filepath.Join(mnt, q)); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}

	// A fresh mount, so that nothing is cached: 16 readers at once.
	mnt = mount(t, "s3://pfx/ds/", "--endpoint", p.URL, "--max-open", "4")
	local := mount(t, src)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 12 {
				i := (g*5 + k) % 24
				dir := mnt
				if i%2 == 1 {
					dir = filepath.Join(mnt, "part"+strconv.Itoa(i%3))
				}
				name := fmt.Sprintf("shard%04d.npz", i)
				for _, f := range []string{"x.npy", "y/raw.bin", "x/raw.bin"} {
					got, err := os.ReadFile(filepath.Join(dir, name, f))
					want, _ := os.ReadFile(filepath.Join(strings.Replace(dir, mnt, local, 1), name, f))
					if err != nil || !bytes.Equal(got, want) || len(want) == 0 {
						t.Errorf("reader %d: %s/%s: %d bytes, %v; want %d", g, name, f, len(got), err, len(want))
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestPrefixChanges: objects added to, removed from and replaced in a
// mounted prefix appear, vanish and change once its listing is older
// than --list-ttl, and not before; a file of a replaced archive that was
// open fails its reads (EIO), never mixing old and new; the new one is
// served under new inode numbers.
func TestPrefixChanges(t *testing.T) {
	needFuse(t)
	src := shardFolder(t, 4)
	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "chg")
	putFolder(t, s3, "chg", "ds/", src)
	big := remoteArchive(t, t.TempDir())
	bigData, _ := os.ReadFile(big)
	s3.Put(t, "chg", "ds/big.npz", bigData)

	kept := mount(t, "s3://chg/ds/", "--endpoint", s3.Endpoint) // the default TTL, 60 s
	fresh := mount(t, "s3://chg/ds/", "--endpoint", s3.Endpoint, "--list-ttl", "0s")
	short := mount(t, "s3://chg/ds/", "--endpoint", s3.Endpoint, "--list-ttl", "1s")
	for _, m := range []string{kept, fresh, short} {
		names(t, m)
	}
	shard, _ := os.ReadFile(filepath.Join(src, "shard0000.npz"))
	s3.Put(t, "chg", "ds/added.npz", shard)
	deleteObject(t, s3, "chg", "ds/shard0002.npz")
	has := func(dir, name string) bool { return listed(t, dir, name) }
	if !has(kept, "shard0002.npz") || has(kept, "added.npz") {
		t.Errorf("within the TTL: %v", names(t, kept))
	}
	for _, m := range []string{fresh, short} {
		eventually(t, "the added and removed objects seen in "+m, func() bool {
			return !has(m, "shard0002.npz") && has(m, "added.npz")
		})
	}
	if b, err := os.ReadFile(filepath.Join(fresh, "added.npz", "y", "raw.bin")); err != nil || len(b) != 56 {
		t.Errorf("added.npz/y/raw.bin: %d bytes, %v", len(b), err)
	}

	// Replaced: an open file of the old object fails, the new one reads.
	want, _ := os.ReadFile(filepath.Join(mount(t, big), "stored", "raw.bin"))
	path := filepath.Join(fresh, "big.npz", "stored", "raw.bin")
	var before syscall.Stat_t
	syscall.Stat(path, &before)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 4096)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, want[:4096]) {
		t.Fatalf("first read: %v", err)
	}
	changed := changedArchive(bigData)
	s3.Put(t, "chg", "ds/big.npz", changed)
	if _, err := f.ReadAt(make([]byte, 4096), 8<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the replaced object's open file: %v, want EIO", err)
	}
	eventually(t, "the new object under new inode numbers", func() bool {
		var after syscall.Stat_t
		return syscall.Stat(path, &after) == nil && after.Ino != before.Ino
	})
	newLocal := filepath.Join(t.TempDir(), "big.npz")
	os.WriteFile(newLocal, changed, 0o644)
	// Lazy, as a remote member no sidecar covers is served: the changed
	// bytes break its CRC-32, which a local mount verifies first.
	wantNew, _ := os.ReadFile(filepath.Join(mount(t, newLocal, "--verify=lazy"), "stored", "raw.bin"))
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, wantNew) {
		t.Errorf("the new object: %d bytes, %v", len(got), err)
	}
}
