package zip

import (
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// Writing. A Writer writes an archive to an io.Writer as archive/zip's
// does: each entry's local header and data in turn, then the central
// directory and the end records. Unlike archive/zip it leaves the entry's
// data to its caller (compressed or not, in any number of writes) and
// writes no data descriptor: the local header carries the CRC-32 and the
// sizes, so a caller that learns them only from the data writes the
// header first with what it knows and writes it again, at the same
// length, once the data is written (FileHeader.AppendLocal, at
// FileHeader.Offset). The local header may carry padding, so that the
// data that follows starts where the caller wants it (Pad).

// Extra field IDs the writer writes.
const (
	// ExtraPadding pads a local header so that the data after it is
	// aligned: the ID Android's zipalign gives its padding field, laid
	// out as zipalign lays it out (the alignment as a uint16, then zero
	// bytes). Readers skip extra fields they do not know.
	ExtraPadding = 0xd935

	paddingFixed = 6 // the padding field's ID, length and alignment
)

// maxUint32 is the largest size or offset a field of 32 bits holds
// without zip64; 0xffffffff itself says "in the zip64 extra field".
const maxUint32 = 0xffffffff

// Versions needed to extract, as APPNOTE numbers them.
const (
	versionDeflate = 20
	versionZip64   = 45
	creatorUnix    = 3 // the "version made by" high byte: attributes are Unix modes
)

// Unix modes written as external attributes.
const (
	modeFile = 0o100644
	modeDir  = 0o040755
)

// FileHeader is an entry as Writer writes it: what its local header and
// its central directory record say.
type FileHeader struct {
	// Name is the entry's name, UTF-8 (flagged so when it is not ASCII);
	// a directory's ends in "/".
	Name           string
	Method         uint16
	Modified       time.Time
	CRC32          uint32
	CompressedSize int64
	Size           int64
	// Zip64 has the local header hold the sizes in a zip64 extra field,
	// as it must when either reaches 4 GiB: set it before the first
	// AppendLocal when they may (see MayNeedZip64), since the header
	// keeps its length. Writer.ForceZip64 sets it for every entry.
	Zip64 bool
	// Align, when not 0, pads the local header with an ExtraPadding
	// field so that the byte AlignSkip bytes into the entry's data lies
	// at a multiple of Align (a power of two up to MaxAlign) in the
	// archive: a stored array's data, past its .npy header, on a page.
	// The padding depends on Offset, so the header keeps its length
	// when written again at the same offset.
	Align     int64
	AlignSkip int64
	// Offset is where the local header is: Writer.WriteLocal sets it.
	Offset int64
}

// MaxAlign is the largest FileHeader.Align.
const MaxAlign = 1 << 15

// MayNeedZip64 reports whether an entry of size bytes needs, or when
// deflated may need, zip64 sizes in its local header: deflate can make a
// little more than it is given (a stored block's 5 bytes per 64 KiB, a
// SOZip chunk's flushes), so this leaves a margin of 1/16.
func MayNeedZip64(size int64) bool { return size >= maxUint32-maxUint32/16 }

// pad is the padding that moves at, a position in the archive that no
// padding would leave where it is, to the next multiple of align: 0 when
// it is one already, else at least paddingFixed bytes.
func pad(at, align int64) int64 {
	p := (align - at%align) % align
	for p != 0 && p < paddingFixed {
		p += align
	}
	return p
}

// padding is the length of the local header's padding field (see Align).
func (h *FileHeader) padding() int64 {
	if h.Align <= 0 {
		return 0
	}
	return pad(h.Offset+h.unpadded()+h.AlignSkip, h.Align)
}

// unpadded is the local header's length without padding.
func (h *FileHeader) unpadded() int64 {
	n := int64(localLen + len(h.Name))
	if h.Zip64 {
		n += 4 + 16
	}
	return n
}

// utf8Flag is the general-purpose flag the name calls for: UTF-8 when it
// is not ASCII.
func (h *FileHeader) utf8Flag() uint16 {
	for i := 0; i < len(h.Name); i++ {
		if h.Name[i] >= 0x80 {
			return flagUTF8
		}
	}
	return 0
}

// check refuses what no local header or directory record can say.
func (h *FileHeader) check() error {
	switch {
	case len(h.Name) > 0xffff:
		return fmt.Errorf("zip: name of %d bytes is longer than 65,535", len(h.Name))
	case !utf8.ValidString(h.Name):
		return fmt.Errorf("zip: name %q is not UTF-8", h.Name)
	case h.Align < 0 || h.Align > MaxAlign || h.Align&(h.Align-1) != 0 || h.AlignSkip < 0:
		return fmt.Errorf("zip: alignment %d (of the byte %d into the data): want a power of two up to %d", h.Align, h.AlignSkip, MaxAlign)
	case h.Size < 0 || h.CompressedSize < 0 || h.Offset < 0:
		return errors.New("zip: negative size or offset")
	}
	return nil
}

// LocalLen is the length of the entry's local header, name and extra
// fields included.
func (h *FileHeader) LocalLen() int64 { return h.unpadded() + h.padding() }

// DataOffset is where the entry's data starts, after its local header.
func (h *FileHeader) DataOffset() int64 { return h.Offset + h.LocalLen() }

// AppendLocal appends the entry's local header to b: its sizes and
// CRC-32 as h has them now; without Zip64, sizes must be below 4 GiB.
func (h *FileHeader) AppendLocal(b []byte) ([]byte, error) {
	if err := h.check(); err != nil {
		return b, err
	}
	version, csize, size := uint16(versionDeflate), uint32(h.CompressedSize), uint32(h.Size)
	if h.Zip64 {
		version, csize, size = versionZip64, maxUint32, maxUint32
	} else if h.Size >= maxUint32 || h.CompressedSize >= maxUint32 {
		return b, fmt.Errorf("zip: %q: sizes of 4 GiB or more (%d, %d compressed) in a local header without zip64", h.Name, h.Size, h.CompressedSize)
	}
	extra := h.LocalLen() - localLen - int64(len(h.Name))
	b = le.AppendUint32(b, sigLocal)
	b = le.AppendUint16(b, version)
	b = h.appendFixed(b, csize, size, int(extra))
	b = append(b, h.Name...)
	if h.Zip64 {
		// The local zip64 field holds both sizes, whatever they are.
		b = le.AppendUint16(b, extraZip64)
		b = le.AppendUint16(b, 16)
		b = le.AppendUint64(b, uint64(h.Size))
		b = le.AppendUint64(b, uint64(h.CompressedSize))
	}
	if p := h.padding(); p > 0 {
		b = le.AppendUint16(b, ExtraPadding)
		b = le.AppendUint16(b, uint16(p-4))
		b = le.AppendUint16(b, uint16(h.Align))
		b = append(b, make([]byte, p-paddingFixed)...)
	}
	return b, nil
}

// appendFixed appends the fields a local header and a directory record
// share, from the flags to the extra field's length, with the sizes as
// the record holds them.
func (h *FileHeader) appendFixed(b []byte, csize, size uint32, extra int) []byte {
	dosDate, dosTime := unixToDOS(h.Modified)
	b = le.AppendUint16(b, h.utf8Flag())
	b = le.AppendUint16(b, h.Method)
	b = le.AppendUint16(b, dosTime)
	b = le.AppendUint16(b, dosDate)
	b = le.AppendUint32(b, h.CRC32)
	b = le.AppendUint32(b, csize)
	b = le.AppendUint32(b, size)
	b = le.AppendUint16(b, uint16(len(h.Name)))
	return le.AppendUint16(b, uint16(extra))
}

// appendCentral appends the entry's central directory record to b, with
// a zip64 extra field for each size and the offset that needs one (all
// three with force), and an extended timestamp when the MS-DOS time
// cannot say when it was modified.
func (h *FileHeader) appendCentral(b []byte, force bool) []byte {
	var z64 []byte
	field := func(v int64) uint32 {
		if force || v >= maxUint32 {
			z64 = le.AppendUint64(z64, uint64(v))
			return maxUint32
		}
		return uint32(v)
	}
	size, csize, off := field(h.Size), field(h.CompressedSize), field(h.Offset)
	version := uint16(versionDeflate)
	if len(z64) > 0 || h.Zip64 {
		version = versionZip64
	}
	dosDate, dosTime := unixToDOS(h.Modified)
	stamp := !h.Modified.IsZero() && dosToUnix(dosDate, dosTime) != h.Modified.Unix()
	extra := 0
	if len(z64) > 0 {
		extra += 4 + len(z64)
	}
	if stamp {
		extra += 4 + 5
	}
	mode := uint32(modeFile)
	if isDir(h.Name) {
		mode = modeDir<<16 | 0x10 // and the MS-DOS directory attribute
	} else {
		mode <<= 16
	}
	b = le.AppendUint32(b, sigCentral)
	b = le.AppendUint16(b, creatorUnix<<8|version)
	b = le.AppendUint16(b, version)
	b = h.appendFixed(b, csize, size, extra)
	b = le.AppendUint16(b, 0) // comment length
	b = le.AppendUint16(b, 0) // disk number
	b = le.AppendUint16(b, 0) // internal attributes
	b = le.AppendUint32(b, mode)
	b = le.AppendUint32(b, off)
	b = append(b, h.Name...)
	if len(z64) > 0 {
		b = le.AppendUint16(b, extraZip64)
		b = le.AppendUint16(b, uint16(len(z64)))
		b = append(b, z64...)
	}
	if stamp {
		b = le.AppendUint16(b, extraTimestamp)
		b = le.AppendUint16(b, 5)
		b = append(b, 1) // the modification time alone
		b = le.AppendUint32(b, uint32(int32(max(min(h.Modified.Unix(), 1<<31-1), -1<<31))))
	}
	return b
}

func isDir(name string) bool { return len(name) > 0 && name[len(name)-1] == '/' }

// unixToDOS is t as an MS-DOS date and time, in UTC (as dosToUnix reads
// them back), clamped to the years MS-DOS times can say (1980 to 2107);
// the zero time is 1980-01-01.
func unixToDOS(t time.Time) (date, tm uint16) {
	t = t.UTC()
	switch {
	case t.Year() < 1980:
		return 1<<5 | 1, 0
	case t.Year() > 2107:
		return 127<<9 | 12<<5 | 31, 23<<11 | 59<<5 | 29
	}
	date = uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
	tm = uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()/2)
	return date, tm
}

// Writer writes a zip archive: local headers and data as its caller
// gives them, then, at Close, the central directory of the entries added
// (Add) and the end records, zip64 ones where the count, the directory's
// size or its offset need them.
type Writer struct {
	w       io.Writer
	off     int64
	dir     []byte // the central directory so far
	count   int64
	comment string
	closed  bool
	// ForceZip64 writes every local header and directory record with
	// zip64 sizes, and the zip64 end records, whatever the sizes: what
	// an archive of members over 4 GiB looks like, for tests.
	ForceZip64 bool
}

// NewWriter returns a Writer that writes to w, from w's offset 0.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Offset is how many bytes have been written: where the next one goes.
func (w *Writer) Offset() int64 { return w.off }

// Write writes entry data (or anything else) as it is.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.off += int64(n)
	return n, err
}

// Rewind moves the writer back to off, at most Offset, for a caller that
// dropped the bytes it wrote from there (an entry it writes again, in
// another way): what is written next goes to off.
func (w *Writer) Rewind(off int64) error {
	if off < 0 || off > w.off {
		return fmt.Errorf("zip: rewind to byte %d of %d written", off, w.off)
	}
	w.off = off
	return nil
}

// WriteLocal sets h.Offset to Offset and writes h's local header there,
// with what h says now (see FileHeader.AppendLocal).
func (w *Writer) WriteLocal(h *FileHeader) error {
	if w.ForceZip64 {
		h.Zip64 = true
	}
	h.Offset = w.off
	b, err := h.AppendLocal(nil)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Add records h, its data written and its sizes and CRC-32 final, in the
// central directory. An entry not added (an index SOZip hides) has a
// local header but is listed nowhere.
func (w *Writer) Add(h *FileHeader) error {
	if err := h.check(); err != nil {
		return err
	}
	w.dir = h.appendCentral(w.dir, w.ForceZip64)
	w.count++
	return nil
}

// SetComment sets the archive comment, at most 65,535 bytes.
func (w *Writer) SetComment(c string) error {
	if len(c) > maxCommentLen {
		return fmt.Errorf("zip: comment of %d bytes is longer than 65,535", len(c))
	}
	w.comment = c
	return nil
}

// Close writes the central directory and the end records. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return errors.New("zip: writer closed twice")
	}
	w.closed = true
	start := w.off
	if _, err := w.Write(w.dir); err != nil {
		return err
	}
	size := w.off - start
	end := make([]byte, 0, end64Len+loc64Len+endLen+len(w.comment))
	if w.ForceZip64 || w.count >= 0xffff || size >= maxUint32 || start >= maxUint32 {
		end = le.AppendUint32(end, sigEnd64)
		end = le.AppendUint64(end, end64Len-12) // what follows this field
		end = le.AppendUint16(end, creatorUnix<<8|versionZip64)
		end = le.AppendUint16(end, versionZip64)
		end = le.AppendUint32(end, 0) // this disk
		end = le.AppendUint32(end, 0) // the directory's disk
		end = le.AppendUint64(end, uint64(w.count))
		end = le.AppendUint64(end, uint64(w.count))
		end = le.AppendUint64(end, uint64(size))
		end = le.AppendUint64(end, uint64(start))
		end = le.AppendUint32(end, sigLoc64)
		end = le.AppendUint32(end, 0) // the zip64 end record's disk
		end = le.AppendUint64(end, uint64(w.off))
		end = le.AppendUint32(end, 1) // disks
	}
	end = le.AppendUint32(end, sigEnd)
	end = le.AppendUint16(end, 0)
	end = le.AppendUint16(end, 0)
	end = le.AppendUint16(end, uint16(min(w.count, 0xffff)))
	end = le.AppendUint16(end, uint16(min(w.count, 0xffff)))
	end = le.AppendUint32(end, uint32(min(size, maxUint32)))
	end = le.AppendUint32(end, uint32(min(start, maxUint32)))
	end = le.AppendUint16(end, uint16(len(w.comment)))
	end = append(end, w.comment...)
	w.dir = nil
	_, err := w.Write(end)
	return err
}
