package inflate

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"runtime"
	"testing"
	"unsafe"
)

// TestHelperBudgetShared: readers sharing a budget of one helper start
// no more between them: while one reader's helper runs, another's deep
// read goes on alone (and reads right), and once that helper is done, a
// third reader has one.
func TestHelperBudgetShared(t *testing.T) {
	data := noisyFloat32(3<<20, 71)
	comp := deflate(t, data, 6)
	budget := NewHelperBudget(1)
	helpedBy := func(src io.ReaderAt, hooks *testHooks) *ReaderAt {
		r := NewReaderAt(src, int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
			&Options{SpanSize: 64 << 10, Cache: NewCache(8 << 20), Helpers: 2, HelperBudget: budget, test: hooks})
		r.front.helpChunk = int64(len(comp)) / 3
		return r
	}
	g := newCtxGate(comp, int64(len(comp))*6/10) // the first reader's helper waits here
	waiting := make(chan struct{}, 4)
	first := helpedBy(g, waits(waiting, forRun))
	deep := int64(len(data)) - 1000
	done := readAsync(context.Background(), first, data, deep, 1000)
	<-waiting // the index waits for the helper's run
	if budget.Busy() != 1 || first.front.helpStarts.Load() != 1 {
		t.Fatalf("budget busy %d, helpers started %d times", budget.Busy(), first.front.helpStarts.Load())
	}
	second := helpedBy(bytes.NewReader(comp), nil)
	checkRead(t, second, data, deep, 1000)
	if second.front.helpStarts.Load() != 0 {
		t.Fatal("helpers started past the budget")
	}
	close(g.open)
	waitReads(t, done)
	first.Release()
	if budget.Busy() != 0 {
		t.Fatalf("budget busy %d after the helpers ended", budget.Busy())
	}
	third := helpedBy(bytes.NewReader(comp), nil)
	defer third.Release()
	checkRead(t, third, data, deep, 1000)
	if third.front.helpStarts.Load() != 1 {
		t.Fatal("no helper with room in the budget")
	}
}

// TestHelperBudgetPrefetch: a sequential reader inside the index
// prefetches only with room in its budget.
func TestHelperBudgetPrefetch(t *testing.T) {
	data := mixed(6<<20, 72)
	comp := deflate(t, data, 6)
	budget := NewHelperBudget(2)
	ra := NewReaderAt(bytes.NewReader(comp), int64(len(comp)), int64(len(data)), crc32.ChecksumIEEE(data),
		&Options{SpanSize: 128 << 10, Cache: NewCache(4 << 20), HelperBudget: budget})
	checkRead(t, ra, data, int64(len(data))-100, 100) // indexes it all, in one read
	budget.take(2)
	got, err := readSeq(ra, 0, 64<<10, 128<<10, 3)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sequential read: %v, or wrong bytes", err)
	}
	if n := ra.ahead.prefetches.Load(); n != 0 {
		t.Fatalf("%d prefetches with no room in the budget", n)
	}
	budget.give(2)
	if got, err = readSeq(ra, 0, 64<<10, 128<<10, 4); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sequential read: %v, or wrong bytes", err)
	}
	if ra.ahead.prefetches.Load() == 0 {
		t.Fatal("no prefetch with room in the budget")
	}
	waitAhead(t, ra)
	if budget.Busy() != 0 {
		t.Fatalf("budget busy %d after the prefetches ended", budget.Busy())
	}
}

// TestHelperBudgetLimit: a budget of 0 follows GOMAXPROCS.
func TestHelperBudgetLimit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if b := NewHelperBudget(0); b.Limit() != 1 || DefaultHelperBudget().Limit() != 1 {
		t.Fatalf("at GOMAXPROCS 1: limits %d, %d", b.Limit(), DefaultHelperBudget().Limit())
	}
	runtime.GOMAXPROCS(3)
	if b := NewHelperBudget(0); b.Limit() != 3 || NewHelperBudget(5).Limit() != 5 {
		t.Fatalf("at GOMAXPROCS 3: limits %d, %d", b.Limit(), NewHelperBudget(5).Limit())
	}
}

// TestHelperBytes: what a helper holds once it has found a start and
// run from it is within HelperBytes.
func TestHelperBytes(t *testing.T) {
	data := mixed(3<<20, 73)
	comp := deflate(t, data, 1)
	const span = 64 << 10
	s := &stream{src: bytes.NewReader(comp), csize: int64(len(comp)), size: int64(len(data)),
		crc: crc32.ChecksumIEEE(data), span: span, cache: NewCache(1 << 20)}
	p := newPass(s, context.Background(), 2, checkpoint{state: stHeader})
	var w passWorker
	p.task(&w, 1, true)
	if !p.starts[1].ok || p.runs[1].err != nil {
		t.Fatalf("no run from chunk 1: %v", p.runs[1].err)
	}
	e := &w.packer.sparse
	held := int64(cap(w.region)+2*cap(w.markers)+cap(w.buf)+cap(w.touched)+cap(w.masked)+cap(p.starts[1].win)) +
		int64(2*cap(e.tokens)+2*cap(e.cl)+cap(e.out)) + int64(unsafe.Sizeof(decoder{})) + inBufSize
	if held > HelperBytes(span) {
		t.Fatalf("a helper holds %d bytes, HelperBytes says %d at most", held, HelperBytes(span))
	}
}
