package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/source"
)

// Table sizes: how many members a table reply holds at most, by default
// and at most, without and with headers (each of which may cost a read).
const (
	tableCount        = 65536
	tableHeadersCount = 1024
	headerReaders     = 8 // headers read at once for a table reply
)

// Member kinds.
const (
	kindFolder = "folder" // a directory entry
	kindArray  = "array"  // its bytes start with the .npy magic, as np.load tells arrays
	kindOther  = "other"  // any other member
	kindMember = "member" // a member whose bytes were not looked at (no headers asked)
)

// entry is one member in a table reply (docs/serve.md).
type entry struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	Key            string `json:"key"`
	Kind           string `json:"kind"`
	Size           int64  `json:"size"`
	CompressedSize int64  `json:"compressed_size"`
	Method         string `json:"method"`
	CRC32          uint32 `json:"crc32"`
	Readable       bool   `json:"readable"`
	Reason         string `json:"reason,omitempty"`
	// With headers:
	ArchiveOffset *int64   `json:"archive_offset,omitempty"`
	Descr         string   `json:"descr,omitempty"`
	DType         string   `json:"dtype,omitempty"`
	Shape         *[]int64 `json:"shape,omitempty"`
	FortranOrder  *bool    `json:"fortran_order,omitempty"`
	DataOffset    *int64   `json:"data_offset,omitempty"`
	DataLength    *int64   `json:"data_length,omitempty"`
	HeaderError   string   `json:"header_error,omitempty"`
}

// table answers a table request: the members from first on, as many as
// fit in a reply.
func (s *server) table(ctx context.Context, q *request, done func()) {
	limit := int64(tableCount)
	if q.Headers {
		limit = tableHeadersCount
	}
	first, count := int64(0), limit
	if q.First != nil {
		first = *q.First
	}
	if q.Count != nil {
		count = min(*q.Count, limit)
	}
	total := int64(len(s.members))
	if first < 0 || first > total || count < 0 {
		done()
		s.fail(q.ID, codeRange, fmt.Sprintf("bad table request: first %d, count %d, of an archive of %d members", first, max(count, 0), total), nil)
		return
	}
	ms := s.members[first:min(first+count, total)]
	entries := make([]entry, len(ms))
	workers.Run(ctx, len(ms), headerReaders, func(_, i int) { entries[i] = s.entry(ctx, ms[i], q.Headers) })
	if ctx.Err() != nil {
		done()
		s.fail(q.ID, codeCancelled, "cancelled", nil)
		return
	}
	var b strings.Builder
	n := 0
	for ; n < len(entries) && (n == 0 || b.Len() < TableBytes); n++ {
		js, err := marshal(&entries[n])
		if err != nil {
			panic(err) // strings and numbers: a bug
		}
		if n > 0 {
			if b.Len()+len(js) > TableBytes {
				break
			}
			b.WriteByte(',')
		}
		b.Write(js)
	}
	done()
	s.out.send(struct {
		ID      uint64          `json:"id"`
		Kind    string          `json:"kind"`
		First   int64           `json:"first"`
		Total   int64           `json:"total"`
		Members json.RawMessage `json:"members"`
	}{q.ID, kindTable, first, total, json.RawMessage("[" + b.String() + "]")}, nil)
}

// entry describes m; with headers, what its bytes hold too.
func (s *server) entry(ctx context.Context, m *npz.Member, headers bool) entry {
	e := entry{
		Index: m.Index(), Name: m.Name(), Key: strings.TrimSuffix(m.Name(), ".npy"), Kind: kindMember,
		Size: m.Size(), CompressedSize: m.CompressedSize(), Method: npz.MethodName(m.Method()), CRC32: m.CRC32(),
	}
	if m.IsDir() {
		e.Kind, e.Reason = kindFolder, "a folder: it has no bytes"
		return e
	}
	if err := m.ReadError(); err != nil {
		e.Reason = bare(err)
	} else {
		e.Readable = true
	}
	if !headers {
		return e
	}
	e.Kind = kindOther
	if !e.Readable {
		return e
	}
	f := m.File()
	if _, off, ok, err := f.Extent(ctx); ok && err == nil {
		e.ArchiveOffset = &off
	}
	var magic [len(npy.Magic)]byte
	if m.Size() < int64(len(magic)) {
		return e
	}
	if _, err := f.ReadAtContext(ctx, magic[:], 0); err != nil && !(errors.Is(err, io.EOF) && m.Size() == int64(len(magic))) {
		e.Readable, e.Reason = false, "its first bytes cannot be read: "+bare(err)
		return e
	}
	if string(magic[:]) != npy.Magic {
		return e
	}
	e.Kind = kindArray
	h, err := s.header(ctx, m, f)
	if err != nil {
		e.HeaderError = bare(err)
		return e
	}
	s.describe(&e, h)
	return e
}

// header reads m's npy header: through npz for a member named as an
// array (which keeps what it learns), else here, checked as npz checks
// it.
func (s *server) header(ctx context.Context, m *npz.Member, f *npz.File) (*npy.Header, error) {
	if strings.HasSuffix(m.Name(), ".npy") && m.Served() {
		return m.Header(ctx)
	}
	h, err := npy.ReadHeader(bufio.NewReaderSize(io.NewSectionReader(source.WithContext(ctx, f), 0, m.Size()), 512), m.Size(), &npy.Options{MaxHeaderLen: s.opts.MaxHeaderLen})
	if err != nil {
		return nil, err
	}
	if h.DType == nil {
		return nil, errors.New("npy header has no dtype")
	}
	if dl := h.DataLength(m.Size()); dl < 0 || dl > m.Size()-h.DataOffset {
		return nil, fmt.Errorf("the header's shape and dtype need %d bytes of data from byte %d, but the member ends at byte %d", dl, h.DataOffset, m.Size())
	}
	return h, nil
}

// describe sets e's array facts from its npy header.
func (s *server) describe(e *entry, h *npy.Header) {
	descr, err := npy.Repr(h.Descr)
	if err != nil {
		e.HeaderError = bare(err)
		return
	}
	shape := h.Shape
	if shape == nil {
		shape = []int64{}
	}
	dataOff, dataLen := h.DataOffset, h.DataLength(e.Size)
	e.Descr, e.DType, e.Shape, e.FortranOrder = descr, h.DType.Str(), &shape, &h.FortranOrder
	e.DataOffset, e.DataLength = &dataOff, &dataLen
}

// bare is an error's message without the package prefix ("npz: ",
// "zip: ", "npy: ") that a note about one member does not need.
func bare(err error) string {
	s := err.Error()
	for _, p := range []string{"npz: ", "zip: ", "npy: "} {
		s = strings.TrimPrefix(s, p)
	}
	return oneLine(s)
}
