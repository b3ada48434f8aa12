// Package s3src is a remote.Backend for an object in S3 or an
// S3-compatible store, through aws-sdk-go-v2, so that every credential the
// SDK knows works: environment variables, shared config and credentials
// files with profiles, SSO, web identity, instance and container roles.
// Every range is pinned to the object seen first: If-Match on its ETag,
// and its VersionId when the bucket keeps versions.
package s3src

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

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
	// CredentialTimeout bounds the search for credentials New makes (the
	// SDK's chain ends with the instance metadata service, which may not
	// answer off a cloud machine); 0 means 3 seconds.
	CredentialTimeout time.Duration
	// PageSize is how many keys a listing asks for a page (MaxKeys); 0
	// means the server's default, at most 1,000 on AWS.
	PageSize int
}

// defaultCredentialTimeout is Options.CredentialTimeout's default.
const defaultCredentialTimeout = 3 * time.Second

// Client is a configured S3 client with its credentials, shared by the
// backends and listers it makes.
type Client struct {
	client   *s3.Client
	creds    aws.CredentialsProvider
	noSign   bool
	endpoint bool // an endpoint of the user's, not AWS's
	pageSize int32
}

// Backend is one object in a bucket.
type Backend struct {
	c           *Client
	bucket, key string
	// named: the user named this object (not a listing or a sidecar),
	// so a missing one is looked for as a prefix, to say so.
	named bool
}

// ParseURL splits s3://BUCKET/KEY; KEY is "" for a bucket alone, and
// ends in "/" for a prefix.
func ParseURL(u string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%s: not an s3:// URL", u)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%s: an S3 source is s3://BUCKET/KEY, or a prefix s3://BUCKET/PREFIX/", u)
	}
	return bucket, key, nil
}

// IsFolder reports an s3:// URL that names a prefix (ending in "/") or a
// bucket alone: a folder of objects.
func IsFolder(u string) bool {
	_, key, err := ParseURL(u)
	return err == nil && (key == "" || strings.HasSuffix(key, "/"))
}

// New returns a Backend for the object s3://BUCKET/KEY (see NewClient).
// No request is made to the bucket.
func New(ctx context.Context, u string, opts *Options) (*Backend, error) {
	bucket, key, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, fmt.Errorf("%s names a prefix (a folder of objects), not an object: name an archive in it, as s3://%s/%sNAME.npz", u, bucket, key)
	}
	c, err := NewClient(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	b := c.Object(bucket, key)
	b.named = true
	return b, nil
}

// NewLister returns a Lister of the prefix s3://BUCKET/PREFIX/ or of a
// bucket alone, s3://BUCKET (see NewClient). No request is made to the
// bucket.
func NewLister(ctx context.Context, u string, opts *Options) (*Lister, error) {
	bucket, key, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		return nil, fmt.Errorf("%s names an object, not a prefix: a prefix ends in /", u)
	}
	c, err := NewClient(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	return c.Lister(bucket, key), nil
}

// NewClient loads the SDK's configuration and, unless requests go
// unsigned, finds credentials, within Options.CredentialTimeout: none
// found is said in one line, which names where the SDK looked and how to
// give some; u names what is opened, for that line.
func NewClient(ctx context.Context, u string, opts *Options) (*Client, error) {
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
		})),
	}
	if o.Profile != "" {
		loads = append(loads, config.WithSharedConfigProfile(o.Profile))
	}
	// The SDK's own log lines (checksum and retry warnings) would reach
	// the user's terminal around npzfs's one-line messages.
	loads = append(loads, config.WithLogger(logging.Nop{}), config.WithClientLogMode(0))
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
	} else if err := findCredentials(ctx, cfg.Credentials, cmp.Or(o.CredentialTimeout, defaultCredentialTimeout)); err != nil {
		return nil, remote.Permanent(fmt.Errorf("%s: %w", u, err))
	}
	pathStyle := o.Endpoint != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		// Every request keeps the stall rule (remote.NewTransport),
		// waiting for its answer's headers too; the transport is the
		// one the configuration made (with a CA bundle it names).
		if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
			so.HTTPClient = &http.Client{Transport: remote.NewTransport(bc.GetTransport())}
		}
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = pathStyle
	})
	return &Client{client: client, creds: cfg.Credentials, noSign: o.NoSign, endpoint: pathStyle, pageSize: int32(o.PageSize)}, nil
}

// Object is a Backend for s3://bucket/key.
func (c *Client) Object(bucket, key string) *Backend {
	return &Backend{c: c, bucket: bucket, key: key}
}

// Lister is a Lister of the prefix (ending in "/", or "" for the
// bucket) in bucket.
func (c *Client) Lister(bucket, prefix string) *Lister {
	return &Lister{c: c, bucket: bucket, prefix: prefix}
}

// findCredentials resolves the credential chain once, within timeout
// (the provider caches what it finds for the requests), and says in one
// line where it looked when it finds none.
func findCredentials(ctx context.Context, p aws.CredentialsProvider, timeout time.Duration) error {
	if p == nil {
		return errNoCredentials()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.Retrieve(ctx); err != nil {
		return errNoCredentials()
	}
	return nil
}

// errNoCredentials says where the SDK's default chain looked, and how to
// give credentials.
func errNoCredentials() error {
	profile := cmp.Or(os.Getenv("AWS_PROFILE"), "default")
	files := []string{}
	for _, f := range []string{config.DefaultSharedCredentialsFilename(), config.DefaultSharedConfigFilename()} {
		if env := sharedFileEnv(f); env != "" {
			f = env
		}
		state := "absent"
		if _, err := os.Stat(f); err == nil {
			state = "no keys for it"
		}
		files = append(files, fmt.Sprintf("%s (%s)", f, state))
	}
	return fmt.Errorf("no AWS credentials found: looked in the environment (AWS_ACCESS_KEY_ID), profile %q in %s, web identity, SSO and the instance or container role; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use --no-sign-request for a public bucket",
		profile, strings.Join(files, " and "))
}

// sharedFileEnv is the file the environment names in place of the
// default shared file f, or "".
func sharedFileEnv(f string) string {
	if f == config.DefaultSharedCredentialsFilename() {
		return os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	}
	return os.Getenv("AWS_CONFIG_FILE")
}

// String implements remote.Backend.
func (b *Backend) String() string { return "s3://" + b.bucket + "/" + b.key }

// Tail implements remote.Backend with a suffix range.
func (b *Backend) Tail(ctx context.Context, n int64) (remote.Object, []byte, error) {
	return b.edge(ctx, n, false)
}

// Head implements remote.HeadReader with a range from byte 0.
func (b *Backend) Head(ctx context.Context, n int64) (remote.Object, []byte, error) {
	return b.edge(ctx, n, true)
}

// edge fetches the object's last n bytes, or its first with head, and
// says what the object is.
func (b *Backend) edge(ctx context.Context, n int64, head bool) (remote.Object, []byte, error) {
	var obj remote.Object
	rng := "bytes=-" + strconv.FormatInt(n, 10)
	if head {
		rng = "bytes=0-" + strconv.FormatInt(n-1, 10)
	}
	out, err := b.c.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(b.key), Range: aws.String(rng),
	})
	if err != nil {
		if status, code := errorCode(err); (code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable) && b.isEmpty(ctx) {
			return obj, nil, remote.Permanent(fmt.Errorf("%s: %w", b, remote.ErrEmpty))
		}
		err = b.explain(ctx, err, "")
		if errors.Is(err, remote.ErrNotFound) && b.named && b.isPrefix(ctx) {
			return obj, nil, remote.Permanent(fmt.Errorf("%s is not an object but a prefix (a folder of objects): give it with a trailing / (%s/) to serve it as a folder, or name an archive in it, as %s/NAME.npz", b, b, b))
		}
		return obj, nil, err
	}
	defer out.Body.Close()
	first, last, total, err := remote.ParseContentRange(aws.ToString(out.ContentRange))
	if err != nil || total < 0 {
		if out.ContentRange == nil && out.ContentLength != nil && *out.ContentLength == 0 {
			// The whole object, with no byte to give a range of.
			return obj, nil, remote.Permanent(fmt.Errorf("%s: %w", b, remote.ErrEmpty))
		}
		return obj, nil, remote.Permanent(fmt.Errorf("%s: the server ignores byte ranges (no Content-Range with the object's size in its answer)", b))
	}
	if err := remote.CheckEdge(first, last, total, n, head); err != nil {
		return obj, nil, fmt.Errorf("%s: %v", b, err)
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
	switch {
	case obj.ETag != "":
		in.IfMatch = aws.String(obj.ETag)
	case obj.Version != "":
		// The version names the bytes: no condition is needed.
	case !obj.LastModified.IsZero():
		in.IfUnmodifiedSince = aws.Time(obj.LastModified)
	}
	if obj.Version != "" {
		in.VersionId = aws.String(obj.Version)
	}
	out, err := b.c.client.GetObject(ctx, in)
	if err != nil {
		if status, code := errorCode(err); code == "PreconditionFailed" || status == http.StatusPreconditionFailed {
			return nil, b.pinFailed(ctx, obj)
		}
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
		same := obj.ETag != "" && aws.ToString(out.ETag) == obj.ETag || obj.Version != "" && aws.ToString(out.VersionId) == obj.Version
		return bad(remote.WrongTotal(b.String(), obj, total, same))
	case first != off || l != last:
		return bad(fmt.Errorf("%s: asked for bytes %d-%d, got %d-%d", b, off, last, first, l))
	case obj.ETag != "" && out.ETag != nil && *out.ETag != obj.ETag:
		return bad(remote.Permanent(fmt.Errorf("%s: %w (ETag %s, was %s)", b, source.ErrChanged, *out.ETag, obj.ETag)))
	case obj.ETag == "" && obj.Version == "" && !obj.LastModified.IsZero() && out.LastModified != nil && !out.LastModified.Equal(obj.LastModified):
		// Pinned by its time alone, as the server's answer says it,
		// whether or not the server honours If-Unmodified-Since.
		return bad(remote.Permanent(fmt.Errorf("%s: %w (Last-Modified %s, was %s)", b, source.ErrChanged, remote.HTTPDate(*out.LastModified), remote.HTTPDate(obj.LastModified))))
	case out.ContentLength != nil && *out.ContentLength != n:
		return bad(fmt.Errorf("%s: bytes %d-%d: a body of %d bytes", b, off, last, *out.ContentLength))
	}
	return out.Body, nil
}

// pinFailed says what a 412 to a fetch pinned to obj means
// (remote.PinRefused), asking for the object as it is now when it was
// pinned by its time.
func (b *Backend) pinFailed(ctx context.Context, obj remote.Object) error {
	if obj.ETag != "" {
		return remote.PinRefused(b.String(), obj, nil)
	}
	out, err := b.c.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key)})
	if err != nil || out.ContentLength == nil || out.LastModified == nil {
		return remote.PinRefused(b.String(), obj, nil)
	}
	return remote.PinRefused(b.String(), obj, &remote.Object{Size: *out.ContentLength, LastModified: *out.LastModified})
}

// explain turns an SDK error into one line that says what is wrong,
// marked permanent unless a retry could help.
func (b *Backend) explain(ctx context.Context, err error, what string) error {
	return b.c.explain(ctx, b, b.bucket, err, what)
}

// explain turns an SDK error of a request about name (an object or a
// prefix) in bucket into one line that says what is wrong, marked
// permanent unless a retry could help; what, when not "", says what of
// an object was fetched, and makes a missing object one that changed.
func (c *Client) explain(ctx context.Context, name fmt.Stringer, bucket string, err error, what string) error {
	b := name
	status, code := errorCode(err)
	switch {
	case what != "" && (code == "NoSuchKey" || code == "NoSuchVersion" || status == http.StatusNotFound):
		return remote.Permanent(fmt.Errorf("%s: %w (the object is gone)", b, source.ErrChanged))
	case code == "NoSuchBucket":
		return remote.Permanent(fmt.Errorf("%s: no such bucket %q", b, bucket))
	case code == "NoSuchKey" || status == http.StatusNotFound:
		return remote.Permanent(fmt.Errorf("%s: %w", b, remote.ErrNotFound))
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" ||
		code == "ExpiredToken" || code == "InvalidToken" || status == http.StatusForbidden || status == http.StatusUnauthorized:
		return remote.Permanent(fmt.Errorf("%s: %s%w (%s; credentials: %s)", b, what, remote.ErrDenied, orStatus(code, status), c.credentialSource(ctx)))
	case code == "PermanentRedirect" || status == http.StatusMovedPermanently:
		return remote.Permanent(fmt.Errorf("%s: the bucket is in another region: set AWS_REGION (or region in the profile) to it", b))
	case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
		return remote.Permanent(fmt.Errorf("%s: %sthe server refused the range (%s)", b, what, orStatus(code, status)))
	case errors.Is(err, context.Canceled):
		return err
	}
	var ce interface{ CanceledError() bool }
	if errors.As(err, &ce) && ce.CanceledError() {
		return context.Canceled
	}
	if e := remote.CertificateError(b.String(), err); e != nil {
		return e
	}
	if e := c.unreachable(b, err); e != nil {
		return remote.Permanent(e)
	}
	msg := err.Error()
	if strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get credentials") {
		return remote.Permanent(fmt.Errorf("%s: %w", b, errNoCredentials()))
	}
	if code != "" {
		msg = orStatus(code, status)
	}
	e := fmt.Errorf("%s: %s%s", b, what, msg)
	// A 4xx is the server's answer; an answer of another status whose
	// body broke (a 200 whose listing ends half-way) may pass.
	if status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout && code != "SlowDown" {
		return remote.Permanent(e)
	}
	return e
}

// errorCode is the HTTP status and S3 error code of an SDK error, each
// zero when it has none.
func errorCode(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// isPrefix reports whether objects lie under the key as a prefix (KEY/):
// the user named a folder where an object was wanted.
func (b *Backend) isPrefix(ctx context.Context) bool {
	out, err := b.c.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.bucket), Prefix: aws.String(b.key + "/"), MaxKeys: aws.Int32(1),
	})
	return err == nil && len(out.Contents)+len(out.CommonPrefixes) > 0
}

// isEmpty reports whether the object is there with no bytes: what a
// range request refused at open means (there is no byte to give a range
// of), as its size says.
func (b *Backend) isEmpty(ctx context.Context) bool {
	out, err := b.c.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key)})
	return err == nil && out.ContentLength != nil && *out.ContentLength == 0
}

// unreachable says in one line that the server cannot be reached, or
// returns nil: no such host (for AWS's own host, likely a machine
// without a way to AWS where an S3-compatible server was meant), or a
// connection refused.
func (c *Client) unreachable(b fmt.Stringer, err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		if !c.endpoint && strings.HasSuffix(strings.TrimSuffix(dns.Name, "."), "amazonaws.com") {
			return fmt.Errorf("%s: no such host %s (AWS S3's): for an S3-compatible server of your own give --endpoint URL (or AWS_ENDPOINT_URL_S3)", b, dns.Name)
		}
		return fmt.Errorf("%s: no such host %s (check --endpoint)", b, dns.Name)
	}
	var op *net.OpError
	if errors.As(err, &op) && errors.Is(err, syscall.ECONNREFUSED) {
		where := "the server"
		if op.Addr != nil {
			where = op.Addr.String()
		}
		return fmt.Errorf("%s: connection refused by %s (check --endpoint)", b, where)
	}
	return nil
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
func (c *Client) credentialSource(ctx context.Context) string {
	if c.noSign {
		return "none, the request was unsigned (--no-sign-request)"
	}
	if c.creds == nil {
		return "none found"
	}
	cr, err := c.creds.Retrieve(ctx)
	if err != nil {
		return "none found"
	}
	if cr.Source == "" {
		return "from the SDK's default chain"
	}
	return cr.Source
}
