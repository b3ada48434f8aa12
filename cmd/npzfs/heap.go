package main

import (
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// Opening an archive allocates about nine times its central directory
// (some 550 bytes a member: the member table, the tree, the directory
// read in chunks), nearly all of it in a fresh process. Where a page
// fault is expensive, as in virtual machines that shadow the guest's page
// tables, touching that memory for the first time costs more than parsing
// it: on the machine of BENCHMARKS.md about 20 µs for each 4 KiB page, so
// 0.3 s of a 0.32 s open of a 100,000-member archive, against 20 ms once
// the pages are there. Memory faulted in as 2 MiB pages, in one system
// call, costs about 4 ms for 64 MiB there.
//
// So before opening a large archive the heap is grown once by what the
// open will allocate, in huge pages faulted in at once, and handed back
// for it to reuse; the collector is paused meanwhile (it would only scan
// a table still being built, and could return the pages to the system
// before they are used). A mount readies some more for its first
// requests: the first read of a deflated member with a saved index
// allocates about 1 MiB (its index, a window, a span), 5 ms of faults.
const (
	heapPerDirectoryByte = 10       // what an open allocates for each byte of central directory
	mountHeap            = 16 << 20 // what a mount's first requests allocate (buffers, spans, indexes)
	minHeapReady         = 8 << 20  // below this, an open's faults cost under 40 ms even there
	// maxHeapReady bounds the readied memory whatever the end record
	// claims: a directory claimed over a hole in a sparse file must not
	// make the daemon large (TestHostileSparseDirectory). It covers
	// about 230,000 members.
	maxHeapReady = 128 << 20
	hugePage     = 2 << 20
)

// pauseGC stops the collector until resume is first called; pauses nest.
func pauseGC() (resume func()) {
	gc := debug.SetGCPercent(-1)
	var once sync.Once
	return func() { once.Do(func() { debug.SetGCPercent(gc) }) }
}

// Once a mount is live, its first requests run on the readied heap: a
// collection then, with its stops and the scavenger splitting the huge
// pages to return them, costs more than the request (a first deflated
// read went from 2-5 ms to 7-15 ms). So the collector resumes a little
// later, and meanwhile a memory limit of resumeLimit above the heap makes
// it run only if reads allocate that much. The first requests have their
// heap readied already (mountHeap), so the limit is small: a burst that
// allocates more, as a listing of 100,000 members does, is collected as
// it goes (with a limit of 256 MiB that listing grew the daemon from 100
// to 340 MB; with 8 MiB it peaks at 92-99 MB, against 100-108 MB when
// the collector resumes at its first collection). But a limit that what
// survives a collection nearly fills would make the collector run over
// and over, as a full read of a deflated member's 16 MiB span cache does
// in a small heap (its speed fell from 470 to 270 MiB/s): after each
// collection, if the live heap is over three quarters of the limit, the
// collector resumes at once.
const resumeLimit = 8 << 20

// resumeAfter is when resumeSoon resumes the collector at the latest.
var resumeAfter = time.Second

// collectionsSeen counts the collections resumeSoon has looked at, for
// tests.
var collectionsSeen atomic.Int64

// resumeSoon calls resume, once, after resumeAfter or after a collection
// that leaves the heap over three quarters of its limit, whichever comes
// first; until then the heap is bounded (see above).
func resumeSoon(resume func()) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	orig := debug.SetMemoryLimit(-1) // GOMEMLIMIT's, by default none
	limit := min(orig, int64(ms.HeapSys)+resumeLimit)
	debug.SetMemoryLimit(limit)
	var once sync.Once
	var resumed atomic.Bool
	done := func() {
		once.Do(func() {
			resumed.Store(true)
			resume()
			debug.SetMemoryLimit(orig)
		})
	}
	time.AfterFunc(resumeAfter, done)
	afterEachCollection(func() bool {
		collectionsSeen.Add(1)
		if resumed.Load() {
			return false
		}
		if liveHeap() > uint64(limit/4*3) {
			done()
			return false
		}
		return true
	})
}

// afterEachCollection calls f after the next collection, and after each
// one after that for as long as f returns true. Each collection finds a
// sentinel unreachable and runs its finalizer, which arms the next.
// (Objects under 16 bytes may share a block and never be finalized.)
func afterEachCollection(f func() bool) {
	sentinel := new([32]byte)
	runtime.SetFinalizer(sentinel, func(*[32]byte) {
		if f() {
			afterEachCollection(f)
		}
	})
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// readyHeapFor readies the heap (readyHeap) for opening an archive whose
// central directory is dirLen bytes long, and extra bytes more.
func readyHeapFor(dirLen, extra int64) {
	n := dirLen * heapPerDirectoryByte
	if n < minHeapReady {
		n = 0
	}
	if n += extra; n > 0 {
		readyHeap(min(n, maxHeapReady))
	}
}

// readyHeap grows the heap by n bytes faulted in as huge pages, then
// frees them for the allocations to come. The collector must be paused
// (pauseGC). Where huge pages cannot be had it only costs the time of a
// collection.
func readyHeap(n int64) {
	b := make([]byte, n)
	faultInHuge(b)
	runtime.KeepAlive(b)
	b = nil
	runtime.GC() // b's pages go back to the heap, still faulted in
}

// faultInHuge asks for the memory of b to be huge pages, faulted in. The
// heap hands out the lowest free pages first, so the 2 MiB around b's
// unaligned start matter most: they are advised too and, where other
// objects already hold small pages of them, collapsed into a huge page
// (as khugepaged would do in time; the contents stay). Heap memory is
// mapped in aligned 4 MiB chunks, so these ranges are mapped; a failure
// leaves small pages, which are only slower.
func faultInHuge(b []byte) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := base &^ (hugePage - 1)
	hi := (base + uintptr(len(b)) + hugePage - 1) &^ (hugePage - 1)
	if madvise(lo, hi-lo, unix.MADV_HUGEPAGE) != nil {
		return
	}
	populate(lo, hi)
	if lo != base {
		madvise(lo, hugePage, unix.MADV_COLLAPSE)
	}
	if end := base + uintptr(len(b)); hi != end && hi-hugePage != lo {
		madvise(hi-hugePage, hugePage, unix.MADV_COLLAPSE)
	}
}

// madvise is madvise(2) on addresses (which may extend past any one Go
// object).
func madvise(addr, n uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// directory is where the central directory of the zip archive of size
// bytes in r is, and how long; its length is 0 if r holds no zip archive.
func directory(r io.ReaderAt, size int64) source.Range {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return source.Range{}
	}
	off, n := z.Directory()
	return source.Range{Off: off, Len: n}
}

// directoryOf is the directory of the archive at path.
func directoryOf(path string) source.Range {
	f, err := os.Open(path)
	if err != nil {
		return source.Range{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return source.Range{}
	}
	return directory(f, fi.Size())
}

// populate faults in the huge pages of [lo, hi), both 2 MiB aligned, with
// MADV_POPULATE_WRITE from one thread a core at once: where fresh memory
// is slow to come by (the host supplying it), the cores wait for it side
// by side.
func populate(lo, hi uintptr) {
	pages := (hi - lo) / hugePage
	n := min(uintptr(runtime.NumCPU()), pages)
	if n <= 1 {
		madvise(lo, hi-lo, unix.MADV_POPULATE_WRITE)
		return
	}
	var wg sync.WaitGroup
	for i := uintptr(0); i < n; i++ {
		a := lo + pages*i/n*hugePage
		b := lo + pages*(i+1)/n*hugePage
		wg.Add(1)
		go func() {
			defer wg.Done()
			madvise(a, b-a, unix.MADV_POPULATE_WRITE)
		}()
	}
	wg.Wait()
}
