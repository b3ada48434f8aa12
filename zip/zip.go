// Package zip reads the zip format as numpy's archives use it: the end
// records (zip64 included), the central directory, entry names, and local
// headers, from any io.ReaderAt, reading only what it must. It writes it
// too (Writer: local headers, padded for alignment, the central
// directory and end records), and reads and writes SOZip indexes
// (SOZipIndex). It knows nothing of what the entries hold: package npz
// serves them, package pack writes them.
package zip

import (
	"encoding/binary"
	"fmt"
	"io"
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

)

// FlagUTF8 is the general-purpose flag bit saying an entry's name is
// UTF-8 (see DecodeName).
const FlagUTF8 = flagUTF8

// FlagDataDescriptor is the general-purpose flag bit saying an entry's
// sizes and CRC-32 follow its data, in a data descriptor.
const FlagDataDescriptor = flagDataDescriptor

// Compression methods npzfs reads.
const (
	Stored   = 0
	Deflated = 8
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

// ReadAtFull reads len(p) bytes at off; a short read is reported as
// io.ErrUnexpectedEOF.
func ReadAtFull(r io.ReaderAt, p []byte, off int64) error {
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
		if startsLikeZip(r) {
			return d, &FormatError{Offset: size, Msg: fmt.Sprintf("no end of central directory record in %d bytes, though the file starts as a zip archive does: it looks cut short (truncated?)", size)}
		}
		return d, &FormatError{Offset: 0, Msg: fmt.Sprintf("archive of %d bytes is too short to hold an end of central directory record", size)}
	}
	tail := int64(endLen + maxCommentLen)
	if tail > size {
		tail = size
	}
	buf := make([]byte, tail)
	base := size - tail
	if err := ReadAtFull(r, buf, base); err != nil {
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
		if startsLikeZip(r) {
			return d, &FormatError{Offset: size, Msg: "no end of central directory record, though the file starts as a zip archive does: it looks cut short (truncated?)"}
		}
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
		if err := ReadAtFull(r, loc, endOff-loc64Len); err == nil && le.Uint32(loc) == sigLoc64 {
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

// startsLikeZip reports a file that starts with a local header, as a
// zip archive written from its start does: one with no end record is
// then most likely cut short (a download or copy that stopped), since
// the end record is the last thing written.
func startsLikeZip(r io.ReaderAt) bool {
	var sig [4]byte
	return ReadAtFull(r, sig[:], 0) == nil && le.Uint32(sig[:]) == sigLocal
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
	if ReadAtFull(r, sig, d.offset) == nil && le.Uint32(sig) == sigCentral {
		return 0
	}
	if ReadAtFull(r, sig, d.offset+gap) == nil && le.Uint32(sig) == sigCentral {
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
	if err := ReadAtFull(r, b, int64(off)); err != nil {
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
