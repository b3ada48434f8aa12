package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func openDisk(t *testing.T, dir string, max int64) *DiskCache {
	t.Helper()
	d, err := OpenDiskCache(dir, max, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func withDisk(d *DiskCache) *Options {
	return &Options{BlockSize: 4096, TailBytes: 8192, Backoff: time.Millisecond, StallTimeout: time.Second, Disk: d}
}

// blockFiles lists the block files under the cache folder dir.
func blockFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(dir, "v1"), func(path string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestDiskCacheServesALaterSource(t *testing.T) {
	dir := t.TempDir()
	f := newFake(256 << 10)
	s := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	readBack(t, s, f, 0, int64(len(f.data)))
	s.Close()
	fetches := f.count()
	if files := blockFiles(t, dir); len(files) < (256<<10-8192)/4096 {
		t.Fatalf("%d block files, want one for each block before the tail", len(files))
	}

	// A new source of the same object, with a new DiskCache on the
	// folder (a remount), fetches nothing but the tail.
	s2 := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	for off := int64(0); off < int64(len(f.data)); off += 10000 {
		readBack(t, s2, f, off, 12345)
	}
	if f.count() != fetches || s2.BytesFetched() != 8192 {
		t.Fatalf("the second source made %d fetches and fetched %d bytes; want none past its tail", f.count()-fetches, s2.BytesFetched())
	}

	// The object changes: its blocks are not the old ones.
	f.mu.Lock()
	for i := range f.data {
		f.data[i] ^= 0x5a
	}
	f.etag = `"v2"`
	f.mu.Unlock()
	s3 := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	readBack(t, s3, f, 0, int64(len(f.data)))
	if f.count() == fetches {
		t.Fatal("a changed object was served from the old one's blocks")
	}
}

func TestDiskCacheRefusesDamagedBlocks(t *testing.T) {
	dir := t.TempDir()
	f := newFake(64 << 10)
	s := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	readBack(t, s, f, 0, int64(len(f.data)))
	s.Close()
	files := blockFiles(t, dir)
	if len(files) < 6 {
		t.Fatalf("%d block files", len(files))
	}
	flip := func(path string, at int) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at] ^= 1
		os.WriteFile(path, b, 0o600)
	}
	flip(files[0], diskHeader+100) // data
	flip(files[1], 13)             // checksum
	flip(files[2], 8)              // length
	flip(files[3], 0)              // magic
	if err := os.Truncate(files[4], diskHeader+1000); err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile(files[len(files)-1])
	os.WriteFile(files[5], other, 0o600) // another block's file, valid in itself

	fetches := f.count()
	s2 := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	for i := int64(0); i < int64(len(f.data)); i += 4096 {
		readBack(t, s2, f, i, 4096)
	}
	// Every byte read back is right (above), and the six damaged blocks,
	// and they alone, were fetched again.
	if got := s2.BytesFetched() - 8192; f.count() == fetches || got != 6*4096 {
		t.Fatalf("%d bytes fetched again for 6 damaged blocks of 4096", got)
	}
	s2.Close() // its fetches have stored their blocks
	for _, p := range files[:6] {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("damaged block not stored again: %v", err)
		}
		var idx int64
		fmt.Sscanf(filepath.Base(p), "%x", &idx)
		if _, err := parseBlock(b, filepath.Base(filepath.Dir(p)), idx, 4096); err != nil {
			t.Fatalf("%s after refetch: %v", p, err)
		}
	}
}

func TestDiskCacheStaysInItsBound(t *testing.T) {
	dir := t.TempDir()
	const max = 20 * (4096 + diskHeader)
	d := openDisk(t, dir, max)
	f := newFake(1 << 20)
	s := open(t, f, withDisk(d))
	readBack(t, s, f, 0, int64(len(f.data)))
	s.Close()
	d.Close() // trimming runs in the background
	var total int64
	for _, p := range blockFiles(t, dir) {
		info, err := os.Stat(p)
		if err != nil {
			continue // trimmed meanwhile
		}
		total += info.Size()
	}
	if total > max || total == 0 {
		t.Fatalf("%d bytes of blocks on disk, bound %d", total, max)
	}
	if d.Used() > max {
		t.Fatalf("Used() = %d, bound %d", d.Used(), max)
	}
}

func TestDiskCacheNeedsAnIdentity(t *testing.T) {
	dir := t.TempDir()
	f := newFake(64 << 10)
	f.etag = ""
	s := open(t, f, withDisk(openDisk(t, dir, 1<<30)))
	readBack(t, s, f, 0, int64(len(f.data)))
	if files := blockFiles(t, dir); len(files) != 0 {
		t.Fatalf("an object with no ETag or date left %d block files", len(files))
	}
}

func TestDiskCacheSharedBySources(t *testing.T) {
	dir := t.TempDir()
	f := newFake(512 << 10)
	var wg sync.WaitGroup
	for w := range 4 {
		d := openDisk(t, dir, 1<<30)
		s, err := Open(context.Background(), f, withDisk(d))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(w * 3000); off < int64(len(f.data)); off += 7777 {
				p := make([]byte, 5000)
				n, err := s.ReadAt(p, off)
				want := f.data[off:min(off+5000, int64(len(f.data)))]
				if n != len(want) || string(p[:n]) != string(want) {
					t.Errorf("worker %d: %d bytes at %d: %v, wrong", w, n, off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestDiskCacheLogsABlockOnce: a block file that cannot be read is
// fetched instead at every read, and logged once.
func TestDiskCacheLogsABlockOnce(t *testing.T) {
	dir := t.TempDir()
	f := newFake(64 << 10)
	var mu sync.Mutex
	var log []string
	d, err := OpenDiskCache(dir, 1<<30, func(format string, args ...any) {
		mu.Lock()
		log = append(log, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := open(t, f, withDisk(d))
	readBack(t, s, f, 0, 4096)
	s.Close()
	files := blockFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d block files", len(files))
	}
	// In its place a folder: reading it fails, and so does storing it.
	os.Remove(files[0])
	os.Mkdir(files[0], 0o700)
	for range 3 { // each source fetches the block anew
		s := open(t, f, withDisk(d))
		readBack(t, s, f, 0, 4096)
		s.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	reads := 0
	for _, l := range log {
		if strings.Contains(l, "is a directory; fetching the block instead") {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("the unreadable block was logged %d times, want once: %q", reads, log)
	}
}
