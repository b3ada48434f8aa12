// Package remote reads an archive that lives on a server as a
// source.ContextReaderAt, fetching only the bytes that are read, in
// aligned blocks kept in a memory cache bounded in bytes. What a server
// is, and how to ask it for a range, is a Backend's job: packages
// remote/httpsrc and remote/s3src are the two there are. Every request is
// pinned to the object seen when the source was opened, so a replaced
// object makes reads fail (source.ErrChanged) and never mixes old and new
// bytes.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/npzfs/npzfs/source"
)

// Object is a remote object as it was when it was opened: what every
// later request is pinned to.
type Object struct {
	Size int64
	// ETag is the object's strong entity tag as the server sent it
	// (quotes included), or "" when it sent none or a weak one.
	ETag string
	// LastModified is the object's modification time, or zero.
	LastModified time.Time
	// Version is the object's version (S3's VersionId), or "".
	Version string
}

// Identity names the object's bytes: two objects with the same identity
// hold the same bytes, so it can key a cache that outlives the mount.
func (o Object) Identity() string {
	id := "size=" + strconv.FormatInt(o.Size, 10)
	if o.ETag != "" {
		id += " etag=" + o.ETag
	}
	if o.Version != "" {
		id += " version=" + o.Version
	}
	if !o.LastModified.IsZero() {
		id += " modified=" + o.LastModified.UTC().Format(time.RFC3339)
	}
	return id
}

// A Backend asks one server for byte ranges of one object. It checks
// that every answer is exactly what was asked (a server that sends the
// whole object, another range or a short body is an error, never data),
// and reports an object that is no longer the one it was opened as with
// an error wrapping source.ErrChanged. Errors that retrying cannot fix
// (not found, access denied, changed) are marked with Permanent; the
// Source retries the others. Errors and String never show credentials or
// signed query strings.
type Backend interface {
	// Tail fetches the last n bytes of the object (all of it when it is
	// shorter) and says what the object is.
	Tail(ctx context.Context, n int64) (Object, []byte, error)
	// Fetch returns the body of bytes [off, off+n) of obj, n > 0. The
	// Source reads exactly n bytes from it and closes it.
	Fetch(ctx context.Context, obj Object, off, n int64) (io.ReadCloser, error)
	// String names the object for messages and mount tables.
	String() string
}

// A HeadReader backend fetches the first n bytes of its object (all of
// it when it is shorter), and says what the object is, in one request,
// as Tail does its last: a Source's first request with Options.Head.
type HeadReader interface {
	Head(ctx context.Context, n int64) (Object, []byte, error)
}

// CheckEdge checks, for a backend's Tail (or Head, with head), that bytes
// first-last of total are the object's last n (its first n), or all of
// it when it is shorter.
func CheckEdge(first, last, total, n int64, head bool) error {
	want, which := max(total-n, 0), "last"
	if head {
		want, which = 0, "first"
	}
	if last-first+1 != min(n, total) || first != want {
		return fmt.Errorf("asked for the %s %d bytes, got bytes %d-%d of %d", which, n, first, last, total)
	}
	return nil
}

// PinRefused says what a 412 to a request for bytes of obj, pinned to
// it, means. Pinned by its ETag (If-Match), the object changed (an error
// wrapping source.ErrChanged). Pinned by its Last-Modified
// (If-Unmodified-Since, where the server sends no ETag), the server may
// also refuse an object that has not changed (one that compares the
// condition with a finer time than the second Last-Modified gives):
// now, what the object is now (its size and Last-Modified, asked with no
// condition), tells which, and nil means it is not known. Either way the
// error is permanent.
func PinRefused(name string, obj Object, now *Object) error {
	if obj.ETag != "" {
		return Permanent(fmt.Errorf("%s: %w (HTTP 412 to a request pinned to its ETag %s)", name, source.ErrChanged, obj.ETag))
	}
	refused := fmt.Sprintf("the server refused a read's condition (HTTP 412 to If-Unmodified-Since: %s, the Last-Modified it sent at open; it sends no ETag to pin reads to)", HTTPDate(obj.LastModified))
	switch {
	case now == nil:
		return Permanent(fmt.Errorf("%s: %s: the object may have changed, or the server may refuse that condition wrongly", name, refused))
	case now.Size != obj.Size || !now.LastModified.Equal(obj.LastModified):
		return Permanent(fmt.Errorf("%s: %w (it was %d bytes of %s, it is %d bytes of %s)", name, source.ErrChanged, obj.Size, HTTPDate(obj.LastModified), now.Size, HTTPDate(now.LastModified)))
	}
	return Permanent(fmt.Errorf("%s: %s, though the object has not changed (its size and Last-Modified are as they were): the server refuses that condition wrongly, so reads of bytes not fetched at open fail", name, refused))
}

// WrongTotal is the error of an answer to a read of obj whose
// Content-Range says the object is total bytes, not obj.Size. When the
// answer names the object pinned (same: its strong ETag, or its
// version), the total is the answer's fault, a proxy's or a server's,
// which may pass: the read is tried again. Otherwise the object changed.
func WrongTotal(name string, obj Object, total int64, same bool) error {
	if same {
		return fmt.Errorf("%s: the answer says the object is %d bytes, and is the object of %d bytes opened (its ETag or version is the same)", name, total, obj.Size)
	}
	return Permanent(fmt.Errorf("%s: %w (it was %d bytes, it is %d)", name, source.ErrChanged, obj.Size, total))
}

// HTTPDate is t as HTTP dates say it, to the second.
func HTTPDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot fix.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return permanentError{err}
}

// IsPermanent reports an error marked by Permanent, or a context's
// cancellation.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p) || errors.Is(err, context.Canceled)
}

// ParseContentRange parses the Content-Range of an HTTP answer (RFC 9110),
// as S3 sends it too: "bytes FIRST-LAST/TOTAL" (TOTAL may be "*",
// returned as -1) and "bytes */TOTAL" (first and last -1).
func ParseContentRange(s string) (first, last, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
			return 0, 0, 0, bad
		}
	}
	if rng == "*" {
		return -1, -1, total, nil
	}
	a, z, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(z, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first || (total >= 0 && last >= total) {
		return 0, 0, 0, bad
	}
	return first, last, total, nil
}
