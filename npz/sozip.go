package npz

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/source"
	"github.com/npzfs/npzfs/zip"
)

// A deflated member written as the SOZip profile writes it (npzfs pack,
// npzfs.savez, GDAL, sozipfile) is followed by its hidden index, which
// says where each chunk of its stream starts: its inflater then reads
// anywhere in it at once, with no first pass and no saved index. The
// index is read at most once a member, when first needed: by the
// inflater, at the first read past its first span that its index does
// not cover (asked before the store and the sidecar, and writing
// nothing to the store); by HasSavedIndex; by what says which members
// have one (SOZip, header.json). One that is there and does not match
// the member is logged and not used, and so are chunks the inflater
// finds wrong: the member is then read as any deflated member.

// sozipState is what a member's look for its SOZip index found: the
// index, or none (x nil).
type sozipState struct {
	x *zip.SOZipIndex
	// dropLogged: the inflater's dropping of the index was logged.
	dropLogged atomic.Bool
}

// SOZip describes a member's SOZip index: each chunk of ChunkSize bytes
// of the member (the last fewer) inflates alone.
type SOZip struct {
	ChunkSize int64
	Chunks    int
}

// SOZip is the member's SOZip index, or nil when it has none: it is not
// deflated, no index follows its data, or the one there does not match
// it (which is logged). The first call reads it (and the member's local
// header, if not read yet); an error is a read that failed in a way
// that may pass, and the next call reads again.
func (m *Member) SOZip(ctx context.Context) (*SOZip, error) {
	st, err := m.sozip(ctx)
	if st == nil || st.x == nil {
		return nil, err
	}
	return &SOZip{ChunkSize: st.x.ChunkSize, Chunks: st.x.Chunks()}, nil
}

// sozip is the member's look for its SOZip index, made once (two first
// looks at once may both read; the first to finish is kept): nil for a
// member that cannot have one (not deflated, or its local header
// unusable), or an error that may pass.
func (m *Member) sozip(ctx context.Context) (*sozipState, error) {
	if m.e.Method != zip.Deflated || m.Encrypted() || m.IsDir() {
		return nil, nil
	}
	l := m.locate(ctx)
	switch {
	case l.err != nil && passing(l.err):
		return nil, l.err
	case l.err != nil:
		return nil, nil
	}
	if st := l.soz.Load(); st != nil {
		return st, nil
	}
	x, err := m.readSOZip(ctx, l.dataOff)
	if err != nil && passing(err) {
		return nil, err
	}
	if l.soz.CompareAndSwap(nil, &sozipState{x: x}) && err != nil && !errors.Is(err, zip.ErrNoSOZipIndex) {
		m.a.notef("npz: %q: its SOZip index is not used: %v", m.Name(), err)
	}
	return l.soz.Load(), nil
}

// sozipGuess is how many bytes after a member's data its SOZip index
// takes when its chunks are of 32 KiB (the spec's usual size; npzfs pack
// writes 1 MiB), with its local header and a name of up to 256 bytes,
// and at most 1 MiB: what a source.Prefetcher is told before the index
// is read, so that a remote archive fetches it in one request.
func sozipGuess(size int64) int64 {
	return min(zip.LocalHeaderLen+256+zip.SOZipHeaderLen+8*(size/(32<<10)+1), 1<<20)
}

// readSOZip reads the SOZip index after the member's data, which starts
// at dataOff.
func (m *Member) readSOZip(ctx context.Context, dataOff int64) (*zip.SOZipIndex, error) {
	e := m.zipEntry()
	e.Method, e.Size = m.e.Method, m.e.Size
	if m.st.Load()&flagDescriptor != 0 {
		e.Flags |= zip.FlagDataDescriptor
	}
	if end := dataOff + m.e.CompressedSize; end < m.a.size {
		m.a.r.prefetch(ctx, []source.Range{{Off: end, Len: min(sozipGuess(m.e.Size), m.a.size-end)}})
	}
	return zip.ReadSOZipIndex(m.a.r.at(ctx), m.a.size, &e, dataOff)
}

// OpenChunks gives the inflater the member's SOZip index as its chunks
// (see inflate.ChunkSource): none (fs.ErrNotExist) when it has none, or
// a failure that may pass.
func (x *memberIndex) OpenChunks(ctx context.Context) (*inflate.Chunks, error) {
	st, err := x.m.sozip(ctx)
	switch {
	case err != nil:
		return nil, err
	case st == nil || st.x == nil:
		return nil, fs.ErrNotExist
	}
	return &inflate.Chunks{Size: st.x.ChunkSize, Starts: st.x.Offsets}, nil
}

// chunksDropped logs, once, that the inflater refused or dropped the
// member's SOZip index: the member is read from its start from then on,
// as any deflated member.
func (x *memberIndex) chunksDropped(why error) {
	st, _ := x.m.sozip(context.Background()) // looked for already: reads nothing
	if st != nil && st.dropLogged.Swap(true) {
		return
	}
	x.m.a.notef("npz: %q: its SOZip index is not used: %v; the member is read as one without", x.m.Name(), why)
}
