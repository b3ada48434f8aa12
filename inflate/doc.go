// Package inflate is a DEFLATE (RFC 1951) decompressor built for random
// access: while it inflates it can record checkpoints (a bit position in the
// compressed stream plus the 32 KiB window before it) and later resume from
// one, so a read anywhere in a deflated member inflates at most one span.
// It uses the standard library, package source for its reads, and
// internal/workers for the goroutines of its parallel pass.
//
// # Decoder
//
// The decoder is its input (bitReader: a 64-bit bit buffer refilled
// eight bytes at a time), its output (outBuf) and its tables (codes),
// and the state of its block. It decodes with one combined literal/length
// table (10-bit primary table plus sub-tables) and one distance table
// (8-bit primary). It writes into a flat buffer whose start holds the
// 32 KiB window, so matches are plain copies
// (word-at-a-time for short or overlapping ones). On amd64 its inner loop
// is in assembly (fast_amd64.s) and decodes through a 12-bit table of
// symbol pairs built for each block: one lookup yields one or two
// literals, or a length after a literal or none, and lengths and
// distances drop their extra bits with their codewords; elsewhere the same
// loop runs in Go. Both stop at the same symbol for the same target and
// mark the same window bytes as read. The Go loops (the decoder's, and
// the parallel pass's over markers) are written once, in loops.go.tmpl,
// from which go generate writes loops.go. It accepts exactly what
// compress/flate accepts: code sets must be complete, except a single
// one-bit code or an empty distance code, and symbols 286/287 and
// distances 30/31 are rejected, as are distances reaching before the start.
//
// # Checkpoints
//
// decode stops at the first symbol boundary at or past a target output
// offset, which may be in the middle of a block. A checkpoint records the
// output offset, the bit position of the next symbol, and for a Huffman
// block the bit position of its header (resuming re-reads the code tables
// there, then jumps to the symbol) or for a stored block the bytes left.
// Because the stop rule depends only on the target, re-inflating a span
// from its checkpoint stops exactly where the next checkpoint begins.
//
// # Windows
//
// When the span after a checkpoint is first inflated, the decoder marks
// which bytes of the window before it any match actually reads. Only those
// are kept (the rest zeroed) and the result is deflated, by an encoder
// for such windows (sparseEncoder: zero runs as copies, the other bytes as
// literals, one dynamic Huffman block); windows with no non-zero byte
// read cost nothing. For numpy-like data this is tens of kilobytes to a
// few megabytes per GiB of output.
//
// # ReaderAt
//
// The index grows lazily and sequentially, a span a turn, while reads in
// the indexed part run in parallel; every span inflated is put in a
// byte-bounded LRU Cache shared between readers. Spans are reference
// counted, so a span's buffer goes to the next span inflated once it is
// out of the cache and no read is copying from it: reading inflates into
// recycled buffers instead of making garbage of its size. The CRC-32, the
// declared size and the end of the stream are checked when the index
// reaches the end; errors in the stream stick, errors reading the source
// do not.
//
// A ReaderAt is made of four parts, each with one job and one lock, which
// call one another only downwards in this list (the ReaderAt, above
// them, serves a read from them, and runs the prefetches the scheduler
// says are due):
//
//   - scheduler (ahead.go), mu: follows the reads to tell a sequential
//     reader; owns the read-ahead goroutine (at most one, growing the
//     index a few spans ahead of the reader), and says which indexed
//     spans to prefetch into the cache (up to four at once, each a
//     goroutine with a place in the HelperBudget).
//   - frontier (frontier.go), turn.go's mu: the turn at growing the index
//     (one growth at a time; read-ahead holds it in reserve between its
//     spans) and the reads waiting for it, with a sync.Cond on mu. What a
//     growth uses (the running CRC-32, buffers, the helpers' work)
//     belongs to the holder of the turn, which is not a lock: it is
//     taken with none held and held across the locks below. It owns the
//     helper goroutines (help.go, each with a place in the
//     HelperBudget) and the goroutine packing each window while the next
//     span inflates (pack.go); the parallel first pass (parallel.go) runs
//     its workers with the turn, and a saved index is asked for without
//     it (ask.go, whose lock is a leaf) and loaded with it (saved.go).
//   - index (index.go), mu (a RWMutex): the checkpoints, their windows
//     and budget, a loaded index's state and the stream's error.
//   - spanCache (spans.go), mu: the spans being inflated (flights), so
//     that concurrent reads of a span inflate it once; below it the
//     shared Cache, with its own lock.
//
// The lock order is so: scheduler.mu, frontier.mu, index.mu; spanCache.mu,
// Cache.mu, the asker's lock and the window packer's lock are leaves,
// taken with nothing else held or after the others. No lock is held while
// a span inflates, while waiting for anything, or while calling out of
// the package: the reader never calls its caller (Options.Index is asked
// for a saved index holding none of them), and a caller learns what
// became of the index by asking (Progress). Release ends the background
// goroutines (their context) and waits for them.
//
// Every wait of a read ends when its context is done (a FUSE interrupt):
// for the turn (a sync.Cond, woken by context.AfterFunc), for a span
// another read inflates, for a window being packed, for a helper's run
// or a chunk's start a helper is finding, and for another read's asking
// of the IndexSource. The read returns the context's error; the work it
// waited for goes on for the others waiting, and what it makes is kept.
//
// # Helpers and prefetches
//
// The goroutines that inflate besides the reads, helpers and prefetches,
// take places in a HelperBudget shared by the readers given it
// (Options.HelperBudget; by default the process's, of GOMAXPROCS(0)
// goroutines), and are not started without one: the reads then inflate
// what they need themselves. Each holds at most HelperBytes(span) besides
// the spans it caches and the windows it records, so a budget costs at
// most its Limit times that.
//
// # Saved indexes
//
// MarshalIndex writes an index in the format indexfile.go documents;
// LoadIndex, or Options.Index, gives one to a reader. An IndexSource is
// an accelerator: asked with the context of the read that first needs
// the index past the first span, it answers with an index, with "none"
// (fs.ErrNotExist: not asked again), or with an error, after which the
// reads go on from the stream and a later one asks again, after a
// backoff (a second, doubling to a minute). Each span inflated
// from a loaded checkpoint is checked against the CRC-32 the index
// records for it. An index whose own checksums hold and that was made
// for this stream is evidence about it: a span that does not inflate to
// what it records is damage in the stream (ErrDamaged), from that span
// on, and the index is kept; an index at fault is discarded
// (ErrBadIndex); a failed read of the source, or of the saved index
// failing in a way that may pass (source.ErrTransient), changes nothing
// (see judge).
//
// # Chunks
//
// A stream written in chunks that each inflate alone (the SOZip
// profile: a sync flush and a full flush every so many bytes, so that
// each chunk starts on a byte, at a block header, with no match reaching
// before it) needs no first pass: given where its chunks start
// (Chunks, from a ChunkSource, asked before the saved index), a reader
// makes them its index, a checkpoint every few chunks with an empty
// window, complete at once. Chunks are no evidence: each span is
// inflated whole, reading no further than its compressed bytes, and
// must be exactly its length and end with nothing but empty blocks at
// the next chunk's start (chunks.go); its CRC-32 is kept, and the last
// span is served once the spans' CRC-32s, combined, are the stream's
// (the spans not yet inflated are inflated then, in parallel). A span
// that fails, or a CRC-32 that does not hold, drops the chunks: the
// stream is indexed from its start, and the IndexSource asked for a
// saved index. Spans from chunks are cached under keys of their own, so
// that none is ever served for a span of the stream indexed afresh.
//
// Inside any index, a read covering three spans or more has the spans
// after its first inflated into the cache meanwhile, on the places its
// HelperBudget has (readSpans).
//
// # Parallel first pass
//
// IndexAllParallel builds a whole index with several goroutines, each
// from a block boundary it finds in its chunk of the stream, decoding
// with the history before it unknown until that history no longer
// matters (see parallel.go); with Options.Helpers, a read far past the
// index has helpers, as many as its HelperBudget has room for, do the
// same for the chunks ahead while the index grows from the start (see
// help.go). Either way a chunk's start is
// trusted only once the decoding before it reaches it in exactly its
// recorded state, and the whole output's length and CRC-32 are checked.
package inflate
