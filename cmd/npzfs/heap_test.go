package main

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
)

// TestReadyHeapCoversTheOpen: what opening an archive of many small
// arrays allocates fits in what readyHeapFor readies for its directory,
// so the open's memory is the readied, faulted-in memory (see heap.go).
// If the open comes to allocate more per member, this says so.
func TestReadyHeapCoversTheOpen(t *testing.T) {
	const members = 20000
	path := filepath.Join(t.TempDir(), "many.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := npy.EncodeHeader("<f4", false, []int64{4})
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(f)
	for i := range members {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("arr_%d.npy", i), Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(hdr)
		fw.Write(make([]byte, 16))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dir := directoryOf(path)
	if dir.Len < members*46 {
		t.Fatalf("directory of %d bytes for %d members", dir.Len, members)
	}

	defer pauseGC()()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := npz.Open(path, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := len(a.Members()); n != members {
		t.Fatalf("%d members, want %d", n, members)
	}
	used := int64(after.TotalAlloc - before.TotalAlloc)
	readied := dir.Len * heapPerDirectoryByte
	t.Logf("directory %d bytes; the open allocated %d (%.1f a directory byte); readied %d", dir.Len, used, float64(used)/float64(dir.Len), readied)
	if used > readied {
		t.Errorf("the open allocated %d bytes, more than the %d readied for it (%d per directory byte)", used, readied, heapPerDirectoryByte)
	}
}

// TestFaultInHuge: memory laid out as the heap's may be (an object
// starting past a 2 MiB boundary, other objects' small pages before it)
// is advised for huge pages (the mapping's flag "hg") and, where the
// kernel has them, backed by them, the 2 MiB pages at its ends included.
func TestFaultInHuge(t *testing.T) {
	m, err := unix.Mmap(-1, 0, 24<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	start := uintptr(unsafe.Pointer(&m[0]))
	a := int((start+hugePage-1)&^(hugePage-1) - start) // the first 2 MiB boundary
	m[a+4096] = 1                                      // another object's small page
	b := m[a+1<<20+4096 : a+17<<20]
	faultInHuge(b)
	if m[a+4096] != 1 {
		t.Fatal("a byte before the memory changed")
	}
	flags, huge := mapping(t, uintptr(unsafe.Pointer(&b[0])))
	if !strings.Contains(flags+" ", " hg ") {
		t.Errorf("the mapping is not advised for huge pages: %s", flags)
	}
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if !strings.Contains(string(thp), "[never]") && huge < 18<<10 {
		t.Errorf("transparent huge pages are %q, but the mapping holds %d KiB of them, not the 18 MiB around the memory", strings.TrimSpace(string(thp)), huge)
	}
}

// mapping gives the VmFlags line and AnonHugePages (KiB) of the mapping
// holding addr, from /proc/self/smaps.
func mapping(t *testing.T, addr uintptr) (flags string, hugeKiB int64) {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	// Each mapping: "start-end perms ...", then fields, VmFlags last.
	in, found := false, false
	for _, line := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			var lo, hi uint64
			if n, _ := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); n == 2 {
				in = lo <= uint64(addr) && uint64(addr) < hi
			}
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(line, "AnonHugePages:"):
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &hugeKiB)
		case strings.HasPrefix(line, "VmFlags:"):
			flags, found = line, true
		}
	}
	if !found {
		t.Fatalf("no mapping holds %#x in /proc/self/smaps", addr)
	}
	return flags, hugeKiB
}

// TestPauseGC: pauses nest, and resume restores the setting once,
// however often it is called.
func TestPauseGC(t *testing.T) {
	orig := debug.SetGCPercent(-1)
	debug.SetGCPercent(orig)
	resume := pauseGC()
	inner := pauseGC()
	inner()
	if gc := debug.SetGCPercent(-1); gc != -1 {
		t.Errorf("the inner resume restarted the collector (GOGC %d)", gc)
	}
	resume()
	debug.SetGCPercent(-1) // a resume called again must not undo this
	resume()
	if gc := debug.SetGCPercent(orig); gc != -1 {
		t.Errorf("a second resume changed the collector's setting to %d", gc)
	}
}

// TestReadyHeap: the readied memory goes back to the heap, and what is
// allocated next reuses it rather than growing the heap.
func TestReadyHeap(t *testing.T) {
	defer pauseGC()()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	readyHeap(16 << 20)
	var keep [][]byte
	for range 64 {
		keep = append(keep, make([]byte, 200<<10))
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 20<<20 {
		t.Errorf("the heap grew by %d bytes for 16 MiB readied and 12.5 MiB allocated: the readied memory was kept or not reused", grew)
	}
}

// TestResumeSoon: the collector stays paused, under a memory limit, and
// resumes with the limit restored: after resumeAfter, or after a
// collection that leaves the heap over three quarters of the limit, but
// not after one that leaves it light.
func TestResumeSoon(t *testing.T) {
	defer func(d time.Duration) { resumeAfter = d }(resumeAfter)
	for _, c := range []struct {
		name    string
		after   time.Duration
		collect bool // collect once paused
		fill    bool // keep a heap over three quarters of the limit through it
		early   bool // the collection resumes the collector
	}{
		{"after resumeAfter", 10 * time.Millisecond, false, false, false},
		{"after a full collection", time.Hour, true, true, true},
		{"not after a light collection", 100 * time.Millisecond, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resumeAfter = c.after
			orig := debug.SetGCPercent(-1)
			debug.SetGCPercent(orig)
			origLimit := debug.SetMemoryLimit(-1)
			resumed := make(chan struct{})
			resume := pauseGC()
			resumeSoon(func() { resume(); close(resumed) })
			limit := debug.SetMemoryLimit(-1)
			if limit >= origLimit || limit <= resumeLimit {
				t.Errorf("memory limit %d while paused (was %d)", limit, origLimit)
			}
			if gc := debug.SetGCPercent(-1); gc != -1 {
				t.Errorf("the collector runs (GOGC %d) before resuming", gc)
			}
			seen := collectionsSeen.Load() // before the allocation, which may itself collect
			var keep []byte
			if c.fill {
				keep = make([]byte, limit/4*3+1<<20)
			}
			if c.collect {
				runtime.GC()
				for collectionsSeen.Load() == seen {
					runtime.Gosched() // the finalizer runs after the collection
				}
				if !c.early {
					select {
					case <-resumed:
						t.Fatal("a collection that left the heap light resumed the collector")
					default:
					}
				}
			}
			runtime.KeepAlive(keep)
			select {
			case <-resumed:
			case <-time.After(time.Minute): // a hang guard, not a timing
				t.Fatal("not resumed")
			}
			// The limit is restored just after resume returns.
			for debug.SetMemoryLimit(-1) != origLimit {
				runtime.Gosched()
			}
			if gc := debug.SetGCPercent(orig); gc != orig {
				t.Errorf("GOGC %d after resuming, want %d", gc, orig)
			}
		})
	}
}
