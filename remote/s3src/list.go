package s3src

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/npzfs/npzfs/remote"
)

// Lister is a remote.Lister of a prefix in a bucket: ListObjectsV2 with
// the delimiter "/", one level at a time, page after page (each page's
// continuation token comes with the one before, so pages cannot be asked
// for at once).
type Lister struct {
	c      *Client
	bucket string
	prefix string // "" or ending in "/"
}

// String implements remote.Lister: s3://BUCKET/PREFIX/.
func (l *Lister) String() string { return "s3://" + l.bucket + "/" + l.prefix }

// Object implements remote.Lister.
func (l *Lister) Object(name string) remote.Backend { return l.c.Object(l.bucket, l.prefix+name) }

// List implements remote.Lister, a page at a time. Keys whose name in
// their folder cannot be a file name (see remote.ValidName: "a//b", "..")
// are left out, as is a folder's own marker object (the key PREFIX/
// itself).
func (l *Lister) List(ctx context.Context, dir string, add func(remote.Item) error) error {
	prefix := l.prefix
	if dir != "" {
		prefix += dir + "/"
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(l.bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")}
	if l.c.pageSize > 0 {
		in.MaxKeys = aws.Int32(l.c.pageSize)
	}
	for {
		out, err := l.c.client.ListObjectsV2(ctx, in)
		if err != nil {
			return l.c.explain(ctx, stringer("s3://"+l.bucket+"/"+prefix), l.bucket, err, "")
		}
		for _, o := range out.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if !remote.ValidName(name) {
				continue
			}
			it := remote.Item{Name: name, Object: remote.Object{Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)}}
			if o.LastModified != nil {
				it.LastModified = *o.LastModified
			}
			if err := add(it); err != nil {
				return err
			}
		}
		for _, p := range out.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(p.Prefix), prefix), "/")
			if !remote.ValidName(name) {
				continue
			}
			if err := add(remote.Item{Name: name, Dir: true}); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// Sibling implements remote.Sibling: the object name beside b's, in the
// same bucket and prefix.
func (b *Backend) Sibling(name string) remote.Backend {
	dir, _ := path.Split(b.key)
	return b.c.Object(b.bucket, dir+name)
}

// Put implements remote.Putter with one PutObject, conditional on
// If-None-Match or If-Match as c says. A failed condition (412, or 409
// for a concurrent conditional write) wraps remote.ErrConflict.
func (b *Backend) Put(ctx context.Context, body io.ReadSeeker, size int64, c remote.PutCondition) error {
	in := &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(b.key),
		Body: body, ContentLength: aws.Int64(size),
		ContentType: aws.String("application/zip"),
	}
	if c.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if c.IfMatch != "" {
		in.IfMatch = aws.String(c.IfMatch)
	}
	_, err := b.c.client.PutObject(ctx, in)
	if err == nil {
		return nil
	}
	if status, code := errorCode(err); status == http.StatusPreconditionFailed || code == "PreconditionFailed" ||
		status == http.StatusConflict || code == "ConditionalRequestConflict" {
		return fmt.Errorf("%s: %w", b, remote.ErrConflict)
	}
	return b.explain(ctx, err, "")
}
