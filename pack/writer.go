package pack

import (
	"fmt"
	"hash/crc32"

	"github.com/npzfs/npzfs/zip"
)

// writer writes the members as their chunks come, in order: each
// member's local header before its first chunk, and at its last its
// local header again (a deflated member's compressed size is known only
// then), its SOZip index (a member of more than one chunk) and its
// central directory record.
type writer struct {
	p   *packer
	zw  *zip.Writer
	res Result
	// The member being written.
	h       *zip.FileHeader
	crc     uint32  // of its bytes so far
	written int64   // its data so far (compressed, for a deflated member)
	offsets []int64 // where its chunks after the first start, for its index
}

func newWriter(p *packer) *writer {
	zw := zip.NewWriter(p.out)
	zw.ForceZip64 = p.opts.Zip64
	zw.SetComment(p.a.Comment()) // read from a zip: never too long
	return &writer{p: p, zw: zw}
}

// chunk writes j, which is the next chunk.
func (w *writer) chunk(j *job) error {
	if j.index == 0 {
		if err := w.begin(j.mb); err != nil {
			return err
		}
	}
	data := j.in
	if j.out != nil {
		data = j.out.Bytes()
		if j.index > 0 {
			w.offsets = append(w.offsets, w.written)
		}
	}
	if _, err := w.zw.Write(data); err != nil {
		return err
	}
	w.written += int64(len(data))
	w.crc = crc32.Update(w.crc, crc32.IEEETable, j.in)
	if j.last {
		return w.end(j.mb)
	}
	return nil
}

// begin writes mb's local header, with what is known before its data: a
// stored member's sizes and, for every member, the CRC-32 the input
// gives it (end checks the bytes against it).
func (w *writer) begin(mb *member) error {
	m := mb.m
	h := &zip.FileHeader{Name: m.Name(), Modified: m.ModTime(), CRC32: m.CRC32(), Size: m.Size(), CompressedSize: m.Size()}
	switch mb.how {
	case asDir:
		h.Size, h.CompressedSize, h.CRC32 = 0, 0, 0
	case asAligned:
		h.Align, h.AlignSkip = mb.align, mb.skip
	case asDeflated, asAuto:
		h.Method, h.CompressedSize = zip.Deflated, 0
	}
	h.Zip64 = zip.MayNeedZip64(h.Size)
	w.h, w.crc, w.written, w.offsets = h, 0, 0, w.offsets[:0]
	return w.zw.WriteLocal(h)
}

// end finishes mb, whose every chunk is written.
func (w *writer) end(mb *member) error {
	h := w.h
	if w.crc != h.CRC32 {
		return memberError(mb.m, fmt.Errorf("its bytes have the CRC-32 %#08x, not the archive's %#08x", w.crc, h.CRC32))
	}
	if h.Method == zip.Deflated {
		h.CompressedSize = w.written
		if mb.how == asAuto && h.CompressedSize > h.Size-h.Size/10 {
			return w.store(mb)
		}
		b, err := h.AppendLocal(nil)
		if err == nil {
			err = w.p.out.WriteAt(b, h.Offset)
		}
		if err == nil && len(w.offsets) > 0 {
			err = w.index(h)
		}
		if err != nil {
			return err
		}
	}
	w.count(mb)
	return w.zw.Add(h)
}

// index writes the SOZip index of h, written just now in chunks.
func (w *writer) index(h *zip.FileHeader) error {
	x := &zip.SOZipIndex{ChunkSize: w.p.opts.Chunk, Size: h.Size, CompressedSize: h.CompressedSize, Offsets: w.offsets}
	b, err := x.AppendBinary(nil)
	if err != nil {
		return err
	}
	n := int64(len(b))
	ih := &zip.FileHeader{Name: zip.SOZipIndexName(h.Name), Modified: h.Modified, CRC32: crc32.ChecksumIEEE(b), Size: n, CompressedSize: n}
	if err := w.zw.WriteLocal(ih); err != nil {
		return err
	}
	_, err = w.zw.Write(b)
	return err
}

// store writes mb again, stored with its array data aligned, over what
// deflating it wrote (which saved less than a tenth), reading it again.
func (w *writer) store(mb *member) error {
	p := w.p
	if err := p.out.Truncate(w.h.Offset); err != nil {
		return err
	}
	if err := w.zw.Rewind(w.h.Offset); err != nil {
		return err
	}
	mb.how = asAligned
	if err := w.begin(mb); err != nil {
		return err
	}
	f, size := mb.m.File(), mb.m.Size()
	buf := p.inBuf(p.opts.Chunk)
	defer p.recycle(&job{in: buf})
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if k, err := f.ReadAtContext(p.ctx, buf[:n], off); int64(k) != n {
			return p.readError(mb.m, err)
		}
		if _, err := w.zw.Write(buf[:n]); err != nil {
			return err
		}
		w.crc = crc32.Update(w.crc, crc32.IEEETable, buf[:n])
		off += n
	}
	return w.end(mb)
}

// count adds mb, written, to the result.
func (w *writer) count(mb *member) {
	r := &w.res
	r.Members++
	switch {
	case mb.how == asAligned:
		r.Aligned++
	case w.h.Method == zip.Stored:
		r.Stored++
	case len(w.offsets) > 0:
		r.Chunked++
	default:
		r.Deflate++
	}
}

// close writes the central directory and the end records.
func (w *writer) close() error { return w.zw.Close() }
