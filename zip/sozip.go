package zip

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
)

// SOZip (the Seek-Optimized ZIP profile, sozip/sozip-spec 0.5) makes a
// deflated entry readable at any chunk: its writer flushes the deflate
// stream every ChunkSize bytes of input (a sync flush, then a full one,
// so that each chunk inflates alone, from an empty window), and puts,
// right after the entry's data, a stored entry that no central directory
// record lists (a hidden index, SOZipIndexName) holding where in the
// compressed stream each chunk starts. Readers that do not know SOZip see
// an ordinary archive.

// SOZipVersion is the version of the index format this package writes
// and reads.
const SOZipVersion = 1

// SOZipHeaderLen is the length of an index's header; the table of
// offsets follows it (after SkipBytes that readers skip).
const SOZipHeaderLen = 32

// sozipOffsetSize is the length of each offset in the table.
const sozipOffsetSize = 8

// ErrNoSOZipIndex is what ReadSOZipIndex's error wraps when no SOZip
// index follows the entry (another entry, or no local header, is
// there), or the entry is not deflated: the entry has none, where any
// other error is of an index that is there and cannot be used.
var ErrNoSOZipIndex = errors.New("zip: no SOZip index follows the entry")

// MaxSOZipChunks bounds the chunks of an index ReadSOZipIndex reads (a
// table of 128 MiB): a 512 GiB entry in chunks of 32 KiB.
const MaxSOZipChunks = 1 << 24

// SOZipIndex is a SOZip index: the chunk size, the sizes of the entry it
// indexes, and where each chunk but the first (which starts at 0) starts
// in its compressed stream.
type SOZipIndex struct {
	ChunkSize      int64
	Size           int64 // the entry's uncompressed size
	CompressedSize int64 // the entry's compressed size
	Offsets        []int64
	// SkipBytes is how many bytes lie between the header and the table
	// (0 when written by this package), which readers skip.
	SkipBytes int64
}

// SOZipIndexName is the name of the hidden index of the entry name:
// ".BASE.sozip.idx" in the entry's folder.
func SOZipIndexName(name string) string {
	dir, base := path.Split(name)
	return dir + "." + base + ".sozip.idx"
}

// SOZipChunks is how many chunks an entry of size bytes has at
// chunkSize: an index is for entries of more than one chunk.
func SOZipChunks(size, chunkSize int64) int64 {
	if size <= 0 || chunkSize <= 0 {
		return 0
	}
	return (size-1)/chunkSize + 1
}

// Chunks is how many chunks the index describes.
func (x *SOZipIndex) Chunks() int { return len(x.Offsets) + 1 }

// Chunk is where chunk i lies: bytes [off, off+n) of the entry, deflated
// as bytes [coff, coff+cn) of its compressed stream.
func (x *SOZipIndex) Chunk(i int) (off, n, coff, cn int64) {
	off = int64(i) * x.ChunkSize
	n = min(x.ChunkSize, x.Size-off)
	if i > 0 {
		coff = x.Offsets[i-1]
	}
	end := x.CompressedSize
	if i < len(x.Offsets) {
		end = x.Offsets[i]
	}
	return off, n, coff, end - coff
}

// tableAt is where the table of offsets starts in the index.
func (x *SOZipIndex) tableAt() int64 { return SOZipHeaderLen + x.SkipBytes }

// Len is the length of the index as an entry's data.
func (x *SOZipIndex) Len() int64 {
	return SOZipHeaderLen + x.SkipBytes + sozipOffsetSize*int64(len(x.Offsets))
}

// sozipError is a malformed or mismatched index, found at byte off of
// the index (of the archive, once ReadSOZipIndex rebases it).
func sozipError(off int64, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Msg: "SOZip index: " + fmt.Sprintf(format, args...)}
}

// rebase moves the offset of err, a *FormatError of an index read at at,
// into the archive.
func rebase(err error, at int64) error {
	if fe, ok := err.(*FormatError); ok {
		fe.Offset += at
	}
	return err
}

// Check reports what makes the index invalid, or nil: what the spec
// requires (a chunk size of 1 to 4 GiB less a byte, more than one chunk,
// as many offsets as chunks after the first, rising strictly, inside
// the compressed stream), and what deflate can make of each chunk's
// compressed bytes (at most MaxInflateRatio bytes a byte).
func (x *SOZipIndex) Check() error {
	switch {
	case x.ChunkSize <= 0 || x.ChunkSize > maxUint32:
		return sozipError(8, "chunk size %d is not 1 to 4294967295", x.ChunkSize)
	case x.Size <= x.ChunkSize || x.Size > 1<<62:
		return sozipError(16, "size %d is not more than one chunk of %d bytes", x.Size, x.ChunkSize)
	case x.CompressedSize <= 0 || x.CompressedSize > 1<<62:
		return sozipError(24, "impossible compressed size %d", x.CompressedSize)
	case x.SkipBytes < 0 || x.SkipBytes > maxUint32:
		return sozipError(4, "impossible skip of %d bytes", x.SkipBytes)
	case int64(len(x.Offsets)) != SOZipChunks(x.Size, x.ChunkSize)-1:
		return sozipError(x.tableAt(), "%d offsets for %d chunks of %d bytes of %d", len(x.Offsets), SOZipChunks(x.Size, x.ChunkSize), x.ChunkSize, x.Size)
	}
	prev := int64(0)
	for i, o := range x.Offsets {
		if o <= prev || o >= x.CompressedSize {
			return sozipError(x.tableAt()+sozipOffsetSize*int64(i), "chunk %d starts at byte %d of the compressed stream, not after %d and before its end at %d", i+1, o, prev, x.CompressedSize)
		}
		prev = o
	}
	for i := range x.Chunks() {
		if _, n, coff, cn := x.Chunk(i); n > MaxInflateRatio*cn {
			return sozipError(x.tableAt()+sozipOffsetSize*int64(max(i-1, 0)), "chunk %d: %d compressed bytes at byte %d cannot inflate to %d", i, cn, coff, n)
		}
	}
	return nil
}

// Matches reports whether the index is one of an entry of size bytes,
// compressed to csize.
func (x *SOZipIndex) Matches(size, csize int64) error {
	if x.Size != size || x.CompressedSize != csize {
		return sozipError(16, "made for %d bytes compressed to %d, not the entry's %d compressed to %d", x.Size, x.CompressedSize, size, csize)
	}
	return nil
}

// AppendBinary appends the index, as an entry's data, to b. It fails for
// an index Check refuses.
func (x *SOZipIndex) AppendBinary(b []byte) ([]byte, error) {
	if err := x.Check(); err != nil {
		return b, err
	}
	b = le.AppendUint32(b, SOZipVersion)
	b = le.AppendUint32(b, uint32(x.SkipBytes))
	b = le.AppendUint32(b, uint32(x.ChunkSize))
	b = le.AppendUint32(b, sozipOffsetSize)
	b = le.AppendUint64(b, uint64(x.Size))
	b = le.AppendUint64(b, uint64(x.CompressedSize))
	b = append(b, make([]byte, x.SkipBytes)...)
	for _, o := range x.Offsets {
		b = le.AppendUint64(b, uint64(o))
	}
	return b, nil
}

// ParseSOZipHeader reads an index's header, the first SOZipHeaderLen
// bytes of h: the index without its offsets, and how many bytes the
// whole index takes (its header, skipped bytes and table). It checks the
// version, the offset size and that the lengths can be.
func ParseSOZipHeader(h []byte) (*SOZipIndex, int64, error) {
	if len(h) < SOZipHeaderLen {
		return nil, 0, sozipError(0, "%d bytes are too short for its header", len(h))
	}
	if v := le.Uint32(h); v != SOZipVersion {
		return nil, 0, sozipError(0, "version %d, not %d", v, SOZipVersion)
	}
	if n := le.Uint32(h[12:]); n != sozipOffsetSize {
		return nil, 0, sozipError(12, "offsets of %d bytes, not %d", n, sozipOffsetSize)
	}
	x := &SOZipIndex{
		SkipBytes: int64(le.Uint32(h[4:])),
		ChunkSize: int64(le.Uint32(h[8:])),
	}
	size, csize := le.Uint64(h[16:]), le.Uint64(h[24:])
	if size > 1<<62 || csize > 1<<62 || x.ChunkSize == 0 || size <= uint64(x.ChunkSize) {
		return nil, 0, sozipError(8, "sizes %d and %d (compressed) in chunks of %d cannot be", size, csize, x.ChunkSize)
	}
	x.Size, x.CompressedSize = int64(size), int64(csize)
	n := SOZipChunks(x.Size, x.ChunkSize) - 1
	if n >= x.CompressedSize {
		// Offsets rise strictly from 0 and stay below the compressed
		// size: there cannot be as many.
		return nil, 0, sozipError(8, "%d chunks of %d bytes cannot start inside %d compressed bytes", n+1, x.ChunkSize, x.CompressedSize)
	}
	return x, SOZipHeaderLen + x.SkipBytes + sozipOffsetSize*n, nil
}

// ParseSOZipIndex parses and checks an index, b being the whole of its
// entry's data: its header (ParseSOZipHeader), exactly as many bytes as
// it says the index takes, and the offsets, as Check wants them.
func ParseSOZipIndex(b []byte) (*SOZipIndex, error) {
	x, n, err := ParseSOZipHeader(b)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != n {
		return nil, sozipError(0, "%d bytes, where its header says %d", len(b), n)
	}
	if err := x.parseOffsets(b[SOZipHeaderLen+x.SkipBytes:]); err != nil {
		return nil, err
	}
	return x, nil
}

// parseOffsets fills x.Offsets from the table t and checks x.
func (x *SOZipIndex) parseOffsets(t []byte) error {
	x.Offsets = make([]int64, len(t)/sozipOffsetSize)
	for i := range x.Offsets {
		o := le.Uint64(t[sozipOffsetSize*i:])
		x.Offsets[i] = int64(min(o, 1<<62))
	}
	return x.Check()
}

// ReadSOZipIndex reads the SOZip index of the entry e, whose data starts
// at dataOff in the archive of size bytes read from r: the local header
// right after its data (after its data descriptor, for an entry with
// one) must be of its hidden index (SOZipIndexName of its name, stored,
// its sizes in the header), which must be valid (ParseSOZipIndex, its
// CRC-32 right, at most MaxSOZipChunks chunks) and made for e's sizes.
// An entry that is not deflated or whose data is not followed by an
// index is a *FormatError too.
func ReadSOZipIndex(r io.ReaderAt, size int64, e *Entry, dataOff int64) (*SOZipIndex, error) {
	if e.Method != Deflated || e.Encrypted() {
		return nil, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("SOZip index: %q is not deflated", e.Name), Err: ErrNoSOZipIndex}
	}
	ie, at, err := findSOZipEntry(r, size, e, dataOff)
	if err != nil {
		return nil, err
	}
	var h [SOZipHeaderLen]byte
	if ie.Size < SOZipHeaderLen {
		return nil, sozipError(at, "of %q holds %d bytes", e.Name, ie.Size)
	}
	if err := ReadAtFull(r, h[:], at); err != nil {
		return nil, &FormatError{Offset: at, Msg: "cannot read a SOZip index", Err: err}
	}
	x, n, err := ParseSOZipHeader(h[:])
	switch {
	case err != nil:
		return nil, rebase(err, at)
	case n != ie.Size:
		return nil, sozipError(at, "of %q holds %d bytes, where its header says %d", e.Name, ie.Size, n)
	case SOZipChunks(x.Size, x.ChunkSize) > MaxSOZipChunks:
		return nil, sozipError(at+8, "of %q has more than %d chunks", e.Name, MaxSOZipChunks)
	}
	if err := x.Matches(e.Size, e.CompressedSize); err != nil {
		return nil, rebase(err, at)
	}
	t := make([]byte, n-x.tableAt())
	if err := ReadAtFull(r, t, at+x.tableAt()); err != nil {
		return nil, &FormatError{Offset: at, Msg: "cannot read a SOZip index", Err: err}
	}
	if crc := sozipCRC(r, h[:], t, at, x.SkipBytes); crc != ie.CRC32 {
		return nil, sozipError(at, "of %q fails its CRC-32 (%#08x, not %#08x)", e.Name, crc, ie.CRC32)
	}
	if err := x.parseOffsets(t); err != nil {
		return nil, rebase(err, at)
	}
	return x, nil
}

// findSOZipEntry finds the local header of e's hidden index, right after
// e's data, or after the data descriptor that may follow it (with or
// without its signature, with 32-bit or zip64 sizes), and returns it and
// where its data starts. No local header there, one of another name or
// one that does not hold its sizes is ErrNoSOZipIndex; one that cannot
// be read is the read's error.
func findSOZipEntry(r io.ReaderAt, size int64, e *Entry, dataOff int64) (Entry, int64, error) {
	want := SOZipIndexName(e.Name)
	after := []int64{0}
	if e.Flags&flagDataDescriptor != 0 {
		after = append(after, 12, 16, 20, 24)
	}
	end := dataOff + e.CompressedSize
	var firstErr error
	for _, d := range after {
		ie, at, err := LocalEntry(r, size, end+d)
		var fe *FormatError
		switch {
		case err != nil && errors.As(err, &fe) && (fe.Err == nil || errors.Is(fe.Err, io.ErrUnexpectedEOF) || errors.Is(fe.Err, io.EOF)):
			err = &FormatError{Offset: end + d, Msg: "SOZip index: " + fe.Msg, Err: ErrNoSOZipIndex}
		case err != nil:
		case ie.Name != want:
			err = &FormatError{Offset: end + d, Msg: fmt.Sprintf("SOZip index: the entry after %q is %q, not %q", e.Name, ie.Name, want), Err: ErrNoSOZipIndex}
		case ie.Method != Stored || ie.Encrypted() || ie.CompressedSize != ie.Size:
			err = sozipError(end+d, "%q is not stored", want)
		default:
			return ie, at, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return Entry{}, 0, firstErr
}

// sozipCRC is the CRC-32 of an index's bytes: header h, skip bytes read
// from r (at most 64 KiB at a time), table t.
func sozipCRC(r io.ReaderAt, h, t []byte, at, skip int64) uint32 {
	crc := crc32.ChecksumIEEE(h)
	buf := make([]byte, min(skip, 64<<10))
	for off := int64(0); off < skip; {
		n := min(int64(len(buf)), skip-off)
		if ReadAtFull(r, buf[:n], at+SOZipHeaderLen+off) != nil {
			return ^crc // cannot be checked: cannot match
		}
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		off += n
	}
	return crc32.Update(crc, crc32.IEEETable, t)
}
