// Package s3src is a remote.Backend for an object in S3 or an
// S3-compatible store, through aws-sdk-go-v2, so that every credential the
// SDK knows works: environment variables, shared config and credentials
// files with profiles, SSO, web identity, instance and container roles.
// Every range is pinned to the object seen first: If-Match on its ETag,
// and its VersionId when the bucket keeps versions.
package s3src

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/source"
)

// Options for a Backend.
type Options struct {
	// Endpoint is an S3-compatible server's URL (MinIO, Ceph, R2, ...);
	// "" means AWS, or the SDK's AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL.
	// Buckets are then addressed by path (http://host/bucket/key).
	Endpoint string
	// NoSign sends requests unsigned, for public buckets.
	NoSign bool
	// Profile is the shared config profile; "" means the SDK's choice
	// (AWS_PROFILE, else "default").
	Profile string
	// Region, when the configuration names none, defaults to us-east-1.
	Region string
}

// Backend is one object in a bucket.
type Backend struct {
	bucket, key string
	client      *s3.Client
	creds       aws.CredentialsProvider
	noSign      bool
}

// ParseURL splits s3://BUCKET/KEY.
func ParseURL(u string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%s: not an s3:// URL", u)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || key == "" {
		return "", "", fmt.Errorf("%s: an S3 source is s3://BUCKET/KEY", u)
	}
	return bucket, key, nil
}

// New returns a Backend for s3://BUCKET/KEY. It loads the SDK's
// configuration (no request is made: credentials are resolved by the
// first one).
func New(ctx context.Context, u string, opts *Options) (*Backend, error) {
	bucket, key, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	loads := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		// remote.Source retries, with its own backoff and bounds.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 16
			t.ResponseHeaderTimeout = 30 * time.Second
		})),
	}
	if o.Profile != "" {
		loads = append(loads, config.WithSharedConfigProfile(o.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot load the AWS configuration: %v", u, err)
	}
	if cfg.Region == "" {
		cfg.Region = o.Region
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
	}
	if o.NoSign {
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	pathStyle := o.Endpoint != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = pathStyle
	})
	return &Backend{bucket: bucket, key: key, client: client, creds: cfg.Credentials, noSign: o.NoSign}, nil
}

// String implements remote.Backend.
func (b *Backend) String() string { return "s3://" + b.bucket + "/" + b.key }

// Tail implements remote.Backend with a suffix range.
func (b *Backend) Tail(ctx context.Context, n int64) (remote.Object, []byte, error) {
	var obj remote.Object
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(b.key),
		Range: aws.String("bytes=-" + strconv.FormatInt(n, 10)),
	})
	if err != nil {
		return obj, nil, b.explain(ctx, err, "")
	}
	defer out.Body.Close()
	first, last, total, err := remote.ParseContentRange(aws.ToString(out.ContentRange))
	if err != nil || total < 0 {
		return obj, nil, remote.Permanent(fmt.Errorf("%s: the server ignores byte ranges (no Content-Range with the object's size in its answer)", b))
	}
	if last != total-1 || first != max(total-n, 0) {
		return obj, nil, fmt.Errorf("%s: asked for the last %d bytes, got bytes %d-%d of %d", b, n, first, last, total)
	}
	obj = remote.Object{Size: total, ETag: aws.ToString(out.ETag), Version: aws.ToString(out.VersionId)}
	if obj.Version == "null" { // a bucket that never kept versions
		obj.Version = ""
	}
	if out.LastModified != nil {
		obj.LastModified = *out.LastModified
	}
	buf := make([]byte, last-first+1)
	if _, err := io.ReadFull(out.Body, buf); err != nil {
		return obj, nil, fmt.Errorf("%s: the end of the archive: %w", b, err)
	}
	return obj, buf, nil
}

// Fetch implements remote.Backend.
func (b *Backend) Fetch(ctx context.Context, obj remote.Object, off, n int64) (io.ReadCloser, error) {
	last := off + n - 1
	in := &s3.GetObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(b.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, last)),
	}
	if obj.ETag != "" {
		in.IfMatch = aws.String(obj.ETag)
	} else if !obj.LastModified.IsZero() {
		in.IfUnmodifiedSince = aws.Time(obj.LastModified)
	}
	if obj.Version != "" {
		in.VersionId = aws.String(obj.Version)
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, b.explain(ctx, err, fmt.Sprintf("bytes %d-%d: ", off, last))
	}
	bad := func(err error) (io.ReadCloser, error) {
		out.Body.Close()
		return nil, err
	}
	first, l, total, err := remote.ParseContentRange(aws.ToString(out.ContentRange))
	switch {
	case err != nil:
		return bad(fmt.Errorf("%s: bytes %d-%d: the answer is not that range (%v)", b, off, last, err))
	case total >= 0 && total != obj.Size:
		return bad(remote.Permanent(fmt.Errorf("%s: %w (it was %d bytes, it is %d)", b, source.ErrChanged, obj.Size, total)))
	case first != off || l != last:
		return bad(fmt.Errorf("%s: asked for bytes %d-%d, got %d-%d", b, off, last, first, l))
	case obj.ETag != "" && out.ETag != nil && *out.ETag != obj.ETag:
		return bad(remote.Permanent(fmt.Errorf("%s: %w (ETag %s, was %s)", b, source.ErrChanged, *out.ETag, obj.ETag)))
	case out.ContentLength != nil && *out.ContentLength != n:
		return bad(fmt.Errorf("%s: bytes %d-%d: a body of %d bytes", b, off, last, *out.ContentLength))
	}
	return out.Body, nil
}

// explain turns an SDK error into one line that says what is wrong,
// marked permanent unless a retry could help.
func (b *Backend) explain(ctx context.Context, err error, what string) error {
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch {
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return remote.Permanent(fmt.Errorf("%s: %w (a request pinned to its ETag failed)", b, source.ErrChanged))
	case what != "" && (code == "NoSuchKey" || code == "NoSuchVersion" || status == http.StatusNotFound):
		return remote.Permanent(fmt.Errorf("%s: %w (the object is gone)", b, source.ErrChanged))
	case code == "NoSuchBucket":
		return remote.Permanent(fmt.Errorf("%s: no such bucket %q", b, b.bucket))
	case code == "NoSuchKey" || status == http.StatusNotFound:
		return remote.Permanent(fmt.Errorf("%s: not found", b))
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" ||
		code == "ExpiredToken" || code == "InvalidToken" || status == http.StatusForbidden || status == http.StatusUnauthorized:
		return remote.Permanent(fmt.Errorf("%s: %saccess denied (%s; credentials: %s)", b, what, orStatus(code, status), b.credentialSource(ctx)))
	case code == "PermanentRedirect" || status == http.StatusMovedPermanently:
		return remote.Permanent(fmt.Errorf("%s: the bucket is in another region: set AWS_REGION (or region in the profile) to it", b))
	case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
		return remote.Permanent(fmt.Errorf("%s: %sthe range was refused (the object may be empty)", b, what))
	case errors.Is(err, context.Canceled):
		return err
	}
	var ce interface{ CanceledError() bool }
	if errors.As(err, &ce) && ce.CanceledError() {
		return context.Canceled
	}
	msg := err.Error()
	if strings.Contains(msg, "failed to retrieve credentials") {
		return remote.Permanent(fmt.Errorf("%s: no AWS credentials found (environment, shared files, SSO, web identity, instance role); for a public bucket use --no-sign-request", b))
	}
	if code != "" {
		msg = orStatus(code, status)
	}
	e := fmt.Errorf("%s: %s%s", b, what, msg)
	if status != 0 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout && code != "SlowDown" {
		return remote.Permanent(e)
	}
	return e
}

func orStatus(code string, status int) string {
	switch {
	case code != "" && status != 0:
		return fmt.Sprintf("%s, HTTP %d", code, status)
	case code != "":
		return code
	}
	return fmt.Sprintf("HTTP %d", status)
}

// credentialSource names where the credentials came from, never what
// they are.
func (b *Backend) credentialSource(ctx context.Context) string {
	if b.noSign {
		return "none, the request was unsigned (--no-sign-request)"
	}
	if b.creds == nil {
		return "none found"
	}
	c, err := b.creds.Retrieve(ctx)
	if err != nil {
		return "none found"
	}
	if c.Source == "" {
		return "from the SDK's default chain"
	}
	return c.Source
}
