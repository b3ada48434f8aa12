// Package inflate is a DEFLATE (RFC 1951) decompressor built for random
// access: while it inflates it can record checkpoints (a bit position in the
// compressed stream plus the 32 KiB window before it) and later resume from
// one, so a read anywhere in a deflated member inflates at most one span.
// It uses the standard library only.
package inflate

// This file fixes the API other packages build on. The implementation
// replaces the bodies; the signatures are the contract.

import (
	"errors"
	"io"
)

// Errors a ReaderAt reports besides *CorruptError. Each is wrapped with the
// offset it was found at; test with errors.Is.
var (
	// ErrTooLong: the stream inflates to more than the declared size.
	ErrTooLong = errors.New("inflate: stream is longer than its declared size")
	// ErrTooShort: the stream ends before the declared size.
	ErrTooShort = errors.New("inflate: stream ends before its declared size")
	// ErrChecksum: the CRC-32 of the whole output does not match.
	ErrChecksum = errors.New("inflate: CRC-32 mismatch")
)

// CorruptError reports invalid DEFLATE data at a byte offset of the
// compressed stream.
type CorruptError struct {
	Offset int64
	Msg    string
}

func (e *CorruptError) Error() string { return "inflate: corrupt input: " + e.Msg }

// Options tune a ReaderAt. The zero value is the default.
type Options struct {
	// SpanSize is the output distance between checkpoints; 0 means 1 MiB.
	SpanSize int64
	// Cache holds inflated spans, shared by every ReaderAt given it; nil
	// means a small private cache.
	Cache *Cache
}

// Cache is an LRU of inflated spans with a byte budget, safe for concurrent
// use, shareable between readers.
type Cache struct{ budget int64 }

// NewCache returns a cache that holds at most budget bytes of spans.
func NewCache(budget int64) *Cache { return &Cache{budget: budget} }

// NewReader returns a streaming inflater over a raw DEFLATE stream.
func NewReader(r io.Reader) io.Reader { panic("inflate: not implemented yet") }

// ReaderAt is random access into one raw DEFLATE stream of compressedSize
// bytes at the start of src, which must inflate to exactly size bytes with
// the given CRC-32. It is safe for concurrent use.
type ReaderAt struct{}

// NewReaderAt builds the reader; nothing is read until the first ReadAt.
func NewReaderAt(src io.ReaderAt, compressedSize, size int64, crc uint32, opts *Options) *ReaderAt {
	return &ReaderAt{}
}

// ReadAt implements io.ReaderAt over the inflated bytes.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return 0, errors.New("inflate: not implemented yet")
}

// Size is the declared inflated size.
func (r *ReaderAt) Size() int64 { return 0 }

// IndexStats reports the checkpoints recorded so far and the bytes their
// stored windows take.
func (r *ReaderAt) IndexStats() (checkpoints int, windowBytes int64) { return 0, 0 }
