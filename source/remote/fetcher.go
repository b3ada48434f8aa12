// Package remote turns an object that can be read by byte ranges (an HTTP
// resource, an S3 object) into a source.Source for npz: it pins every read
// to the object seen when it was opened, caches aligned blocks in memory
// (and optionally on disk), merges and prefetches requests, and retries
// what can be retried. The protocol lives behind Fetcher, in packages of
// its own (httpsrc, s3src).
package remote

import (
	"context"
	"time"
)

// Object is what opening a remote object learned about it.
type Object struct {
	// Size is the object's size in bytes.
	Size int64
	// Identity names this version of the object (a strong ETag, else
	// Last-Modified; for S3 the ETag and VersionId): equal identities mean
	// equal bytes.
	Identity string
	// ModTime is the object's modification time, zero if unknown.
	ModTime time.Time
}

// Fetcher reads one remote object by byte ranges.
type Fetcher interface {
	// OpenTail fetches the last n bytes of the object (all of it when it
	// is shorter) in one request, and learns the object's size and
	// identity from the same answer: mounting an archive starts there,
	// since the zip end records and, for most archives, the whole central
	// directory are in its tail.
	OpenTail(ctx context.Context, n int64) (Object, []byte, error)
	// Fetch fills p with the bytes at off, in one request pinned to the
	// object OpenTail saw: an error wrapping source.ErrChanged when the
	// object is no longer that one. A short or misplaced answer is an
	// error, never data.
	Fetch(ctx context.Context, p []byte, off int64) error
	// String names the object for messages, without credentials or a
	// signed query string.
	String() string
}
