package npz

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
	"unsafe"
)

// Record signatures and fixed lengths, from PKWARE's APPNOTE.TXT.
const (
	sigLocal   = 0x04034b50
	sigCentral = 0x02014b50
	sigEnd     = 0x06054b50
	sigEnd64   = 0x06064b50
	sigLoc64   = 0x07064b50

	localLen   = 30 // local file header, before name and extra
	centralLen = 46 // central directory header, before name, extra, comment
	endLen     = 22 // end of central directory record, before the comment
	loc64Len   = 20 // zip64 end of central directory locator
	end64Len   = 56 // zip64 end of central directory record, fixed part

	maxCommentLen = 0xffff

	flagEncrypted       = 1 << 0
	flagDataDescriptor  = 1 << 3
	flagStrongEncrypted = 1 << 6
	flagUTF8            = 1 << 11

	extraZip64     = 0x0001
	extraTimestamp = 0x5455 // Info-ZIP extended timestamp

	methodStored   = 0
	methodDeflated = 8
)

var le = binary.LittleEndian

// directory is what the end records say about the central directory.
type directory struct {
	entries uint64 // declared number of entries
	offset  int64  // where the central directory starts
	size    int64  // its length in bytes
	zip64   bool   // the values came from a zip64 end record
	comment string // the archive comment
	// shift is how many bytes precede the zip data: offsets recorded in
	// the archive are that much short when data was prepended to it (a
	// script or stub before the zip, without zip -A to fix the offsets).
	// offset above already includes it.
	shift int64
}

// readAtFull reads len(p) bytes at off; a short read is reported as
// io.ErrUnexpectedEOF.
func readAtFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// findDirectory locates the end of central directory record by scanning
// back from the end of the archive (it lies in the last 65,535+22 bytes,
// the comment being at most 65,535 bytes), then the zip64 locator and end
// record if there are any, and checks that the central directory they
// describe lies within the archive, before the end records.
func findDirectory(r io.ReaderAt, size int64) (directory, error) {
	var d directory
	if size < endLen {
		return d, &FormatError{Offset: 0, Msg: fmt.Sprintf("archive of %d bytes is too short to hold an end of central directory record", size)}
	}
	tail := int64(endLen + maxCommentLen)
	if tail > size {
		tail = size
	}
	buf := make([]byte, tail)
	base := size - tail
	if err := readAtFull(r, buf, base); err != nil {
		return d, &FormatError{Offset: base, Msg: "cannot read the end of the archive", Err: err}
	}
	// Prefer a record whose comment ends exactly at the end of the file (a
	// comment may itself contain the signature); else take the last record
	// whose comment fits, as trailing bytes after the comment are common.
	at := -1
	for i := len(buf) - endLen; i >= 0; i-- {
		if buf[i] == 'P' && le.Uint32(buf[i:]) == sigEnd {
			n := int(le.Uint16(buf[i+20:]))
			if i+endLen+n == len(buf) {
				at = i
				break
			}
			if at < 0 && i+endLen+n < len(buf) {
				at = i
			}
		}
	}
	if at < 0 {
		return d, &FormatError{Offset: size, Msg: "no end of central directory record: not a zip archive"}
	}
	endOff := base + int64(at)
	e := buf[at:]
	disk, cdDisk := le.Uint16(e[4:]), le.Uint16(e[6:])
	d.entries = uint64(le.Uint16(e[10:]))
	d.size = int64(le.Uint32(e[12:]))
	d.offset = int64(le.Uint32(e[16:]))
	d.comment = string(e[endLen : endLen+int(le.Uint16(e[20:]))])
	limit := endOff // the central directory ends at or before this offset

	saturated := d.entries == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff
	if endOff >= loc64Len {
		loc := make([]byte, loc64Len)
		if err := readAtFull(r, loc, endOff-loc64Len); err == nil && le.Uint32(loc) == sigLoc64 {
			off := le.Uint64(loc[8:])
			d64, err := readEnd64(r, off, endOff-loc64Len)
			if p := endOff - loc64Len - end64Len; err != nil && p >= 0 && uint64(p) > off {
				// Data prepended to the archive moves the zip64 end
				// record from where the locator says: it is usually
				// just before the locator.
				if d, err2 := readEnd64(r, uint64(p), endOff-loc64Len); err2 == nil {
					d64, err, off = d, nil, uint64(p)
				}
			}
			switch {
			case err == nil:
				d.entries, d.offset, d.size, d.zip64 = d64.entries, d64.offset, d64.size, true
				disk, cdDisk = 0, 0 // the zip64 record's disk numbers were checked
				limit = int64(off)
			case saturated:
				return d, err
			}
		}
	}
	if disk != 0 || cdDisk != 0 {
		return d, &FormatError{Offset: endOff, Msg: "multi-disk archives are not supported"}
	}
	if d.offset < 0 || d.size < 0 || d.offset > limit || d.size > limit-d.offset {
		return d, &FormatError{Offset: endOff, Msg: fmt.Sprintf("central directory (%d bytes at byte %d) does not lie before the end record at byte %d", d.size, d.offset, limit)}
	}
	d.shift = prependedBytes(r, d, limit)
	d.offset += d.shift
	return d, nil
}

// prependedBytes finds data prepended to an archive, as Info-ZIP ("extra
// bytes at beginning") and Go's archive/zip do: the central directory
// normally ends where the end record (or the zip64 one) starts, so a gap
// there, with no directory entry where the end record says the directory
// starts but one where the gap moves it, is that many bytes before the zip
// data, and every offset the archive records is short by as many. A gap
// with the directory where it is said to be is bytes between the directory
// and the end record instead, and shifts nothing.
func prependedBytes(r io.ReaderAt, d directory, limit int64) int64 {
	gap := limit - (d.offset + d.size)
	if gap <= 0 || d.size < centralLen {
		return 0
	}
	sig := make([]byte, 4)
	if readAtFull(r, sig, d.offset) == nil && le.Uint32(sig) == sigCentral {
		return 0
	}
	if readAtFull(r, sig, d.offset+gap) == nil && le.Uint32(sig) == sigCentral {
		return gap
	}
	return 0
}

// readEnd64 reads the zip64 end of central directory record at off, which
// must end at or before limit (where the locator is).
func readEnd64(r io.ReaderAt, off uint64, limit int64) (directory, error) {
	var d directory
	if off > uint64(limit) || uint64(limit)-off < end64Len {
		return d, &FormatError{Offset: limit, Msg: fmt.Sprintf("zip64 locator points at byte %d, not before itself", off)}
	}
	b := make([]byte, end64Len)
	if err := readAtFull(r, b, int64(off)); err != nil {
		return d, &FormatError{Offset: int64(off), Msg: "cannot read the zip64 end record", Err: err}
	}
	if le.Uint32(b) != sigEnd64 {
		return d, &FormatError{Offset: int64(off), Msg: "bad zip64 end record signature"}
	}
	if le.Uint32(b[16:]) != 0 || le.Uint32(b[20:]) != 0 {
		return d, &FormatError{Offset: int64(off), Msg: "multi-disk archives are not supported"}
	}
	d.entries = le.Uint64(b[32:])
	size, offset := le.Uint64(b[40:]), le.Uint64(b[48:])
	if size > 1<<62 || offset > 1<<62 {
		return d, &FormatError{Offset: int64(off), Msg: "zip64 end record has an impossible central directory size or offset"}
	}
	d.size, d.offset = int64(size), int64(offset)
	return d, nil
}

// errEntry is a central directory entry that cannot be used; the rest of
// the directory may still be.
type errEntry struct {
	off int64
	msg string
}

// dirChunk is how much of the central directory is read at once. A
// directory's size is only a claim: it is read as its entries are, so one
// that says it is 1 GiB but ends after a few entries costs a chunk.
const dirChunk = 4 << 20

// parseDirectory reads the central directory and fills one Member per
// entry. Entries are read while the signature matches, so archives with
// more than 65,535 entries written without zip64 (whose count wrapped)
// still open. An entry whose fixed part and lengths are readable but whose
// contents are not usable is kept with skip set; an unreadable entry ends
// the directory, and is an error only if it is the first.
func (a *Archive) parseDirectory(d directory) error {
	// A lying count allocates no more than the directory can hold, nor
	// more than 65,536 members before they are found; the mismatch is
	// reported below.
	a.members = make([]Member, 0, min(d.entries, uint64(d.size/centralLen), 1<<16))
	// buf holds directory bytes [base, base+len(buf)). The names are
	// substrings of all, a string over buf, which is never written again:
	// this saves a copy per name.
	var buf []byte
	var all string
	var base int64
	// fill makes buf hold directory bytes [pos, pos+k), k <= d.size-pos.
	fill := func(pos, k int64) error {
		if pos >= base && pos+k <= base+int64(len(buf)) {
			return nil
		}
		buf = make([]byte, min(max(k, dirChunk), d.size-pos))
		base = pos
		if err := readAtFull(a.r, buf, d.offset+pos); err != nil {
			return &FormatError{Offset: d.offset + pos, Msg: "cannot read the central directory", Err: err}
		}
		all = unsafe.String(&buf[0], len(buf))
		return nil
	}
	for pos := int64(0); pos < d.size; {
		off := d.offset + pos
		if d.size-pos < centralLen {
			if len(a.members) == 0 {
				return &FormatError{Offset: off, Msg: "bad central directory entry signature"}
			}
			a.problemf("central directory ends early at byte %d after %d entries: bad entry signature", off, len(a.members))
			break
		}
		if err := fill(pos, centralLen); err != nil {
			return err
		}
		e := buf[pos-base : pos-base+centralLen]
		if le.Uint32(e) != sigCentral {
			if len(a.members) == 0 {
				return &FormatError{Offset: off, Msg: "bad central directory entry signature"}
			}
			a.problemf("central directory ends early at byte %d after %d entries: bad entry signature", off, len(a.members))
			break
		}
		nameLen, extraLen, commentLen := int64(le.Uint16(e[28:])), int64(le.Uint16(e[30:])), int64(le.Uint16(e[32:]))
		n := centralLen + nameLen + extraLen + commentLen
		if n > d.size-pos {
			if len(a.members) == 0 {
				return &FormatError{Offset: off, Msg: "central directory entry runs past the directory's end"}
			}
			a.problemf("central directory ends early at byte %d after %d entries: entry runs past the directory's end", off, len(a.members))
			break
		}
		if err := fill(pos, n); err != nil {
			return err
		}
		e = buf[pos-base : pos-base+centralLen]
		a.members = append(a.members, Member{a: a, index: int32(len(a.members))})
		m := &a.members[len(a.members)-1]
		nameStart := pos - base + centralLen
		m.parseEntry(e, all[nameStart:nameStart+nameLen], buf[nameStart+nameLen:nameStart+nameLen+extraLen], off, a.size, d.shift)
		pos += n
	}
	if uint16(len(a.members)) != uint16(d.entries) && !(d.zip64 && uint64(len(a.members)) == d.entries) {
		a.problemf("end record claims %d entries, the central directory has %d", d.entries, len(a.members))
	}
	return nil
}

// parseEntry fills m from the fixed part e of a central directory entry,
// its raw name and its extra field. off is the entry's offset; shift is
// added to the local header offset it records (see directory.shift).
func (m *Member) parseEntry(e []byte, rawName string, extra []byte, off, archiveSize, shift int64) {
	m.flags = le.Uint16(e[8:])
	m.method = le.Uint16(e[10:])
	dosTime, dosDate := le.Uint16(e[12:]), le.Uint16(e[14:])
	m.crc = le.Uint32(e[16:])
	csize, size := uint64(le.Uint32(e[20:])), uint64(le.Uint32(e[24:]))
	disk := uint64(le.Uint16(e[34:]))
	lhOff := uint64(le.Uint32(e[42:]))
	m.mtime = dosToUnix(dosDate, dosTime)

	name, ok := decodeName(rawName, m.flags)
	m.name = name
	if !ok {
		m.skip("name is not valid UTF-8 though flagged as UTF-8")
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
				m.mtime = int64(int32(le.Uint32(data[1:])))
			}
		}
	}
	lhOff += uint64(shift)
	switch {
	case needZip64:
		m.skip(fmt.Sprintf("central directory entry at byte %d lacks the zip64 sizes or offset it needs", off))
	case disk != 0:
		m.skip("member lies on another disk of a multi-disk archive")
	case lhOff > uint64(archiveSize) || csize > uint64(archiveSize) || uint64(archiveSize)-lhOff < localLen+csize:
		m.skip(fmt.Sprintf("member data (%d bytes after the local header at byte %d) runs past the end of the %d-byte archive", csize, lhOff, archiveSize))
	case size > 1<<62:
		m.skip(fmt.Sprintf("impossible size %d", size))
	}
	if m.skipped() {
		// Keep what can be shown; a skipped member is never read.
		size, csize, lhOff = min(size, 1<<62), min(csize, 1<<62), min(lhOff, 1<<62)
	}
	m.csize, m.size, m.lhOff = int64(csize), int64(size), int64(lhOff)
}

// maxInflateRatio bounds what deflate can make of each compressed byte.
// The longest match is 258 bytes, and the shortest codes are 1 bit: a
// block whose literal/length code gives 1 bit to length 258 and to end of
// block, and whose distance code has one 1-bit code, makes 258 bytes from
// every 2 bits, 1,032 from a byte, and its header, first literal and end
// take more. So a member declaring more than 1,032 bytes per compressed
// byte cannot be what its stream holds.
const maxInflateRatio = 1032

// impossibleSize says why m's declared size cannot be right, from the
// central directory alone, or "": a stored member whose size is not its
// compressed size, or a deflated one declaring more than deflate can make
// of its compressed bytes.
func (m *Member) impossibleSize() string {
	switch m.method {
	case methodStored:
		if m.csize != m.size && !m.Encrypted() {
			return fmt.Sprintf("stored member declares %d bytes but holds %d: its size cannot be right", m.size, m.csize)
		}
	case methodDeflated:
		if !m.Encrypted() && m.csize < (1<<62)/maxInflateRatio && m.size > maxInflateRatio*m.csize {
			return fmt.Sprintf("deflated member declares %d bytes, more than deflate can make of its %d compressed bytes (at most %d)", m.size, m.csize, maxInflateRatio*m.csize)
		}
	}
	return ""
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

// readLocal reads m's local header and returns the offset of its data.
// Only the signature, the name and the name and extra lengths are used:
// sizes and CRC come from the central directory (local ones may be zero,
// with a data descriptor, or saturated, with a zip64 extra). The name must
// be the central directory's, as Python's zipfile (and so np.load)
// requires: a local header that names another member, or whose name
// length is off (which would shift the data), is not this member's.
func (m *Member) readLocal() (int64, error) {
	// The header and, in the same read, the name it should hold (a name
	// decoded from CP437 is longer than its bytes, never shorter).
	b := make([]byte, min(int64(localLen+len(m.name)), max(m.a.size-m.lhOff, localLen)))
	if err := readAtFull(m.a.r, b, m.lhOff); err != nil {
		return 0, &FormatError{Offset: m.lhOff, Msg: fmt.Sprintf("cannot read the local header of %q", m.name), Err: err}
	}
	if le.Uint32(b) != sigLocal {
		return 0, &FormatError{Offset: m.lhOff, Msg: fmt.Sprintf("bad local header signature for %q", m.name)}
	}
	nameLen := int(le.Uint16(b[26:]))
	if localLen+nameLen > len(b) {
		return 0, &FormatError{Offset: m.lhOff, Msg: fmt.Sprintf("local header of %q has a name of %d bytes, not the central directory's", m.name, nameLen)}
	}
	if name, _ := decodeName(string(b[localLen:localLen+nameLen]), m.flags); name != m.name {
		return 0, &FormatError{Offset: m.lhOff, Msg: fmt.Sprintf("local header of %q names %q instead", m.name, name)}
	}
	off := m.lhOff + localLen + int64(nameLen) + int64(le.Uint16(b[28:]))
	if off > m.a.size || m.csize > m.a.size-off {
		return 0, &FormatError{Offset: m.lhOff, Msg: fmt.Sprintf("data of %q (%d bytes from byte %d) runs past the end of the %d-byte archive", m.name, m.csize, off, m.a.size)}
	}
	return off, nil
}
