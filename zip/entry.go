package zip

import (
	"fmt"
	"io"
	"time"
	"unsafe"
)

// Entry is one central directory entry.
type Entry struct {
	// Name is the entry's name, decoded: UTF-8 as it is, anything else
	// from CP437 (see DecodeName).
	Name           string
	Flags          uint16 // general-purpose bit flags
	Method         uint16 // compression method (Stored, Deflated, ...)
	CRC32          uint32
	CompressedSize int64
	Size           int64
	Modified       int64 // Unix seconds: the extended timestamp, else the DOS time taken as UTC
	HeaderOffset   int64 // where its local header is, prepended bytes included
	Index          int32 // its position in the central directory
	// Unusable says why the entry's data cannot be found from the
	// directory alone (zip64 fields missing, another disk, past the end
	// of the archive, a name flagged UTF-8 that is not), or "".
	Unusable string
}

// Encrypted reports general-purpose flag bit 0 or 6.
func (e *Entry) Encrypted() bool { return e.Flags&(flagEncrypted|flagStrongEncrypted) != 0 }

// MaxInflateRatio bounds what deflate can make of each compressed byte.
// The longest match is 258 bytes, and the shortest codes are 1 bit: a
// block whose literal/length code gives 1 bit to length 258 and to end of
// block, and whose distance code has one 1-bit code, makes 258 bytes from
// every 2 bits, 1,032 from a byte, and its header, first literal and end
// take more. So an entry declaring more than 1,032 bytes per compressed
// byte cannot be what its stream holds.
const MaxInflateRatio = 1032

// ImpossibleSize says why the entry's declared size cannot be right, from
// the central directory alone, or "": a stored entry whose size is not its
// compressed size, or a deflated one declaring more than deflate can make
// of its compressed bytes.
func (e *Entry) ImpossibleSize() string {
	switch e.Method {
	case Stored:
		if e.CompressedSize != e.Size && !e.Encrypted() {
			return fmt.Sprintf("stored member declares %d bytes but holds %d: its size cannot be right", e.Size, e.CompressedSize)
		}
	case Deflated:
		if !e.Encrypted() && e.CompressedSize < (1<<62)/MaxInflateRatio && e.Size > MaxInflateRatio*e.CompressedSize {
			return fmt.Sprintf("deflated member declares %d bytes, more than deflate can make of its %d compressed bytes (at most %d)", e.Size, e.CompressedSize, MaxInflateRatio*e.CompressedSize)
		}
	}
	return ""
}

// dirChunk is how much of the central directory is read at once, into
// one buffer used again for every chunk. A directory's size is only a
// claim: it is read as its entries are, so one that says it is 1 GiB but
// ends after a few entries costs a chunk.
const dirChunk = 1 << 20

// Reader is an open zip archive: what its end records say, and a way to
// read its central directory.
type Reader struct {
	r        io.ReaderAt
	size     int64
	dir      directory
	problems []string
	pos      int64 // directory bytes read by Entries
}

// NewReader reads the end records of the archive of size bytes read from
// r: where the central directory is, how many entries it declares, the
// comment. It reads no entry: Entries does.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	if size < 0 {
		return nil, &FormatError{Offset: 0, Msg: "negative archive size"}
	}
	d, err := findDirectory(r, size)
	if err != nil {
		return nil, err
	}
	return &Reader{r: r, size: size, dir: d}, nil
}

// Declared is how many entries the end records declare, bounded by what
// the central directory's size can hold and by 65,536: a hint for
// allocating, since a count may lie (or have wrapped past 65,535).
func (z *Reader) Declared() int {
	return int(min(z.dir.entries, uint64(z.dir.size/centralLen), 1<<16))
}

// Entries reads the central directory, calling each with every entry in
// order. The Entry and the bytes of its Name are reused for the next
// entry: copy what is kept (strings.Clone for the name). Entries are read while
// the signature matches and inside the directory's declared length, as
// Python's zipfile reads them, whatever count the end record claims:
// archives with more than 65,535 entries written without zip64 (whose
// count wrapped) still open, and a count larger than the directory holds
// reads no further (archive/zip reads the count). An entry whose fixed
// part and lengths are readable but whose contents are not usable has
// Unusable set; an unreadable entry ends the directory, and is an error
// only if it is the first (Problems says so otherwise).
func (z *Reader) Entries(each func(*Entry)) error {
	z.problems = z.problems[:0]
	return z.readDirectory(z.dir, each)
}

// Progress is, while Entries runs, how many bytes of the central
// directory have been read (the current entry's included) and how many it
// is declared to hold: an estimate of the entries still to come.
func (z *Reader) Progress() (done, total int64) { return z.pos, z.dir.size }

// Directory is where the central directory is and how long, prepended
// bytes included (see Prefix).
func (z *Reader) Directory() (offset, size int64) { return z.dir.offset, z.dir.size }

// Comment is the archive comment.
func (z *Reader) Comment() string { return z.dir.comment }

// Prefix is how many bytes precede the zip data (prepended without fixing
// the archive's offsets): every offset is read shifted by them.
func (z *Reader) Prefix() int64 { return z.dir.shift }

// Problems lists what Entries found wrong with the archive as a whole
// that did not stop it (a directory that ends early, a wrong count).
func (z *Reader) Problems() []string { return z.problems }

func (z *Reader) problemf(format string, args ...any) {
	z.problems = append(z.problems, fmt.Sprintf(format, args...))
}

func (z *Reader) readDirectory(d directory, each func(*Entry)) error {
	// buf holds directory bytes [base, base+len(buf)), read again for
	// every chunk. Names are strings over buf (no copy per name), valid
	// until the next chunk is read: each entry is handed on before that.
	var buf []byte
	var all string
	var base int64
	// fill makes buf hold directory bytes [pos, pos+k), k <= d.size-pos.
	fill := func(pos, k int64) error {
		if pos >= base && pos+k <= base+int64(len(buf)) {
			return nil
		}
		n := min(max(k, dirChunk), d.size-pos)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		base = pos
		if err := ReadAtFull(z.r, buf, d.offset+pos); err != nil {
			return &FormatError{Offset: d.offset + pos, Msg: "cannot read the central directory", Err: err}
		}
		all = unsafe.String(&buf[0], len(buf))
		return nil
	}
	var count uint64
	var e Entry
	for pos := int64(0); pos < d.size; {
		off := d.offset + pos
		if d.size-pos < centralLen {
			if count == 0 {
				return &FormatError{Offset: off, Msg: "bad central directory entry signature"}
			}
			z.problemf("central directory ends early at byte %d after %s: bad entry signature", off, entryCount(count))
			break
		}
		if err := fill(pos, centralLen); err != nil {
			return err
		}
		fixed := buf[pos-base : pos-base+centralLen]
		if le.Uint32(fixed) != sigCentral {
			if count == 0 {
				return &FormatError{Offset: off, Msg: "bad central directory entry signature"}
			}
			z.problemf("central directory ends early at byte %d after %s: bad entry signature", off, entryCount(count))
			break
		}
		nameLen, extraLen, commentLen := int64(le.Uint16(fixed[28:])), int64(le.Uint16(fixed[30:])), int64(le.Uint16(fixed[32:]))
		n := centralLen + nameLen + extraLen + commentLen
		if n > d.size-pos {
			if count == 0 {
				return &FormatError{Offset: off, Msg: "central directory entry runs past the directory's end"}
			}
			z.problemf("central directory ends early at byte %d after %s: entry runs past the directory's end", off, entryCount(count))
			break
		}
		if err := fill(pos, n); err != nil {
			return err
		}
		fixed = buf[pos-base : pos-base+centralLen]
		nameStart := pos - base + centralLen
		e = Entry{Index: int32(min(count, 1<<31-1))}
		e.parse(fixed, all[nameStart:nameStart+nameLen], buf[nameStart+nameLen:nameStart+nameLen+extraLen], off, z.size, d.shift)
		count++
		pos += n
		z.pos = pos
		each(&e)
	}
	if uint16(count) != uint16(d.entries) && !(d.zip64 && count == d.entries) {
		z.problemf("end record claims %s, the central directory has %d", entryCount(d.entries), count)
	}
	return nil
}

// entryCount is "1 entry" or "n entries".
func entryCount(n uint64) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// unusable records the first reason the entry cannot be used.
func (e *Entry) unusable(reason string) {
	if e.Unusable == "" {
		e.Unusable = reason
	}
}

// parse fills e from the fixed part of a central directory entry, its raw
// name and its extra field. off is the entry's offset; shift is added to
// the local header offset it records (see directory.shift).
func (e *Entry) parse(fixed []byte, rawName string, extra []byte, off, archiveSize, shift int64) {
	e.Flags = le.Uint16(fixed[8:])
	e.Method = le.Uint16(fixed[10:])
	dosTime, dosDate := le.Uint16(fixed[12:]), le.Uint16(fixed[14:])
	e.CRC32 = le.Uint32(fixed[16:])
	csize, size := uint64(le.Uint32(fixed[20:])), uint64(le.Uint32(fixed[24:]))
	disk := uint64(le.Uint16(fixed[34:]))
	lhOff := uint64(le.Uint32(fixed[42:]))
	e.Modified = dosToUnix(dosDate, dosTime)

	name, ok := DecodeName(rawName, e.Flags)
	e.Name = name
	if !ok {
		e.unusable("name is not valid UTF-8 though flagged as UTF-8")
	}

	// Extra fields: zip64 sizes and offset, and the Unix modification time.
	needZip64 := size == 0xffffffff || csize == 0xffffffff || lhOff == 0xffffffff || disk == 0xffff
	for len(extra) >= 4 {
		id, n := le.Uint16(extra), int(le.Uint16(extra[2:]))
		if 4+n > len(extra) {
			break // a truncated extra field is ignored, as other readers do
		}
		data := extra[4 : 4+n]
		extra = extra[4+n:]
		switch id {
		case extraZip64:
			// Only the fields whose 32-bit value is saturated are present,
			// in this order.
			if size == 0xffffffff && len(data) >= 8 {
				size, data = le.Uint64(data), data[8:]
			} else if size == 0xffffffff {
				continue
			}
			if csize == 0xffffffff && len(data) >= 8 {
				csize, data = le.Uint64(data), data[8:]
			} else if csize == 0xffffffff {
				continue
			}
			if lhOff == 0xffffffff && len(data) >= 8 {
				lhOff, data = le.Uint64(data), data[8:]
			} else if lhOff == 0xffffffff {
				continue
			}
			if disk == 0xffff && len(data) >= 4 {
				disk = uint64(le.Uint32(data))
			} else if disk == 0xffff {
				continue
			}
			needZip64 = false
		case extraTimestamp:
			if len(data) >= 5 && data[0]&1 != 0 {
				e.Modified = int64(int32(le.Uint32(data[1:])))
			}
		}
	}
	lhOff += uint64(shift)
	switch {
	case needZip64:
		e.unusable(fmt.Sprintf("central directory entry at byte %d lacks the zip64 sizes or offset it needs", off))
	case disk != 0:
		e.unusable("member lies on another disk of a multi-disk archive")
	case lhOff > uint64(archiveSize) || csize > uint64(archiveSize) || uint64(archiveSize)-lhOff < localLen+csize:
		e.unusable(fmt.Sprintf("member data (%d bytes after the local header at byte %d) runs past the end of the %d-byte archive", csize, lhOff, archiveSize))
	case size > 1<<62:
		e.unusable(fmt.Sprintf("impossible size %d", size))
	}
	if e.Unusable != "" {
		// Keep what can be shown; an unusable entry is never read.
		size, csize, lhOff = min(size, 1<<62), min(csize, 1<<62), min(lhOff, 1<<62)
	}
	e.CompressedSize, e.Size, e.HeaderOffset = int64(csize), int64(size), int64(lhOff)
}

// dosToUnix converts an MS-DOS date and time (taken as UTC, as there is no
// zone) to Unix seconds.
func dosToUnix(date, tm uint16) int64 {
	if date == 0 {
		return 0
	}
	return time.Date(1980+int(date>>9), time.Month(date>>5&0xf), int(date&0x1f),
		int(tm>>11), int(tm>>5&0x3f), int(tm&0x1f)*2, 0, time.UTC).Unix()
}

// DataOffset reads e's local header and returns where its data starts.
// Only the signature, the name and the name and extra lengths are used:
// sizes and CRC come from the central directory (local ones may be zero,
// with a data descriptor, or saturated, with a zip64 extra). The name must
// be the central directory's, as Python's zipfile (and so np.load)
// requires: a local header that names another entry, or whose name
// length is off (which would shift the data), is not this entry's.
func (z *Reader) DataOffset(e *Entry) (int64, error) {
	return DataOffset(z.r, z.size, e)
}

// DataOffset is Reader.DataOffset for an archive of size bytes read from
// r, for those that keep entries but not the Reader.
func DataOffset(r io.ReaderAt, size int64, e *Entry) (int64, error) {
	// The header and, in the same read, the name it should hold (a name
	// decoded from CP437 is longer than its bytes, never shorter).
	b := make([]byte, LocalHeaderRead(size, e))
	if err := ReadAtFull(r, b, e.HeaderOffset); err != nil {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("cannot read the local header of %q", e.Name), Err: err}
	}
	return ParseLocalHeader(b, size, e)
}

// LocalHeaderRead is how many bytes from e's local header
// ParseLocalHeader needs, in an archive of size bytes.
func LocalHeaderRead(size int64, e *Entry) int64 {
	return min(int64(localLen+len(e.Name)), max(size-e.HeaderOffset, localLen))
}

// ParseLocalHeader is DataOffset for the bytes b of the archive (of size
// bytes) from e's local header on, of which it needs LocalHeaderRead (a
// caller may read more at once, as what follows the header).
func ParseLocalHeader(b []byte, size int64, e *Entry) (int64, error) {
	if int64(len(b)) < LocalHeaderRead(size, e) {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("cannot read the local header of %q", e.Name), Err: io.ErrUnexpectedEOF}
	}
	if le.Uint32(b) != sigLocal {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("bad local header signature for %q", e.Name)}
	}
	nameLen := int(le.Uint16(b[26:]))
	if localLen+nameLen > len(b) || int64(localLen+nameLen) > LocalHeaderRead(size, e) {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("local header of %q has a name of %d bytes, not the central directory's", e.Name, nameLen)}
	}
	if name, _ := DecodeName(string(b[localLen:localLen+nameLen]), e.Flags); name != e.Name {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("local header of %q names %q instead", e.Name, name)}
	}
	off := e.HeaderOffset + localLen + int64(nameLen) + int64(le.Uint16(b[28:]))
	if off > size || e.CompressedSize > size-off {
		return 0, &FormatError{Offset: e.HeaderOffset, Msg: fmt.Sprintf("data of %q (%d bytes from byte %d) runs past the end of the %d-byte archive", e.Name, e.CompressedSize, off, size)}
	}
	return off, nil
}

// LocalHeaderLen is the fixed part of a local header: its name and extra
// field follow.
const LocalHeaderLen = localLen

// LocalEntry reads the local header at off of an archive of size bytes on
// its own, without the central directory: the entry as the header says it
// (name, flags, method, CRC-32 and sizes, those of a zip64 extra field
// where the header's are saturated) and where its data starts. It fails
// for an entry whose sizes the header does not hold (they follow its
// data: flag bit 3). An archive whose writer puts the sizes in its local
// headers (an npzfs index sidecar, a SOZip index) has its entries found
// so, without reading its end.
func LocalEntry(r io.ReaderAt, size, off int64) (Entry, int64, error) {
	var e Entry
	var h [localLen]byte
	if err := ReadAtFull(r, h[:], off); err != nil {
		return e, 0, &FormatError{Offset: off, Msg: "cannot read a local header", Err: err}
	}
	if le.Uint32(h[:]) != sigLocal {
		return e, 0, &FormatError{Offset: off, Msg: "no local header"}
	}
	e.Flags, e.Method = le.Uint16(h[6:]), le.Uint16(h[8:])
	e.CRC32 = le.Uint32(h[14:])
	csize, usize := uint64(le.Uint32(h[18:])), uint64(le.Uint32(h[22:]))
	if e.Flags&flagDataDescriptor != 0 {
		return e, 0, &FormatError{Offset: off, Msg: "the local header does not hold the entry's sizes"}
	}
	nameLen, extraLen := int64(le.Uint16(h[26:])), int64(le.Uint16(h[28:]))
	b := make([]byte, nameLen+extraLen)
	if err := ReadAtFull(r, b, off+localLen); err != nil {
		return e, 0, &FormatError{Offset: off, Msg: "cannot read a local header's name", Err: err}
	}
	e.Name, _ = DecodeName(string(b[:nameLen]), e.Flags)
	if csize == maxUint32 || usize == maxUint32 {
		// The local zip64 field holds both sizes, the uncompressed first.
		extra := b[nameLen:]
		for len(extra) >= 4 && (le.Uint16(extra) != extraZip64 || le.Uint16(extra[2:]) < 16) {
			extra = extra[min(4+int(le.Uint16(extra[2:])), len(extra)):]
		}
		if len(extra) < 4+16 {
			return e, 0, &FormatError{Offset: off, Msg: "the local header does not hold the entry's sizes"}
		}
		usize, csize = le.Uint64(extra[4:]), le.Uint64(extra[12:])
	}
	if csize > 1<<62 || usize > 1<<62 {
		return e, 0, &FormatError{Offset: off, Msg: fmt.Sprintf("impossible sizes %d and %d in a local header", usize, csize)}
	}
	e.CompressedSize, e.Size, e.HeaderOffset = int64(csize), int64(usize), off
	data := off + localLen + nameLen + extraLen
	if data > size || e.CompressedSize > size-data {
		return e, 0, &FormatError{Offset: off, Msg: fmt.Sprintf("data of %q (%d bytes from byte %d) runs past the end of the %d-byte archive", e.Name, e.CompressedSize, data, size)}
	}
	return e, data, nil
}
