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

// TestFaultInHuge: fresh memory (as the heap's is when readyHeap grows
// it) is advised for huge pages (the mapping's flag "hg") and, where the
// kernel has them, backed by them.
func TestFaultInHuge(t *testing.T) {
	b, err := unix.Mmap(-1, 0, 16<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	faultInHuge(b)
	mid := uint64(uintptr(unsafe.Pointer(&b[len(b)/2])))
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	// Each mapping: "start-end perms ...", then fields, VmFlags last.
	var in, found bool
	var huge int64
	for _, line := range strings.Split(string(smaps), "\n") {
		var lo, hi uint64
		if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			if n, _ := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); n == 2 {
				in = lo <= mid && mid < hi
			}
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(line, "AnonHugePages:"):
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &huge)
		case strings.HasPrefix(line, "VmFlags:"):
			found = true
			if !strings.Contains(line+" ", " hg ") {
				t.Errorf("the mapping is not advised for huge pages: %s", line)
			}
		}
	}
	if !found {
		t.Fatal("the memory's mapping is not in /proc/self/smaps")
	}
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if !strings.Contains(string(thp), "[never]") && huge < 2<<10 {
		t.Errorf("transparent huge pages are %q, but the mapping holds %d KiB of them", strings.TrimSpace(string(thp)), huge)
	}
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
