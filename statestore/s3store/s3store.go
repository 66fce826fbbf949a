package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"kubeup.dev/kubeup/internal/awssdk"
	"kubeup.dev/kubeup/internal/errclass"
	"kubeup.dev/kubeup/statestore"
)

func init() {
	statestore.RegisterScheme("s3", func(ctx context.Context, b statestore.Bucket) (statestore.Store, error) { return open(ctx, b) })
}

// EnvS3PathStyle names the environment variable that, set to 1, makes the s3:// store address buckets in the
// path (https://endpoint/bucket/key) rather than the host name. It is implied by an endpoint override.
const EnvS3PathStyle = "KUBEUP_S3_PATH_STYLE"

const defaultS3Region = "us-east-1"

// store keeps each object at bucket/prefix/path. The ETag is the generation.
type store struct {
	statestore.Bucket
	pageSize int32 // for ListObjectsV2; 0 lets S3 choose (1000). Tests make it small.

	mu     sync.Mutex
	client *s3.Client // use c(ctx)
	// unsettled says that no region is configured and S3 has not said yet which region the bucket is in (the
	// lookup failed: no network at boot, a server error): each use asks again, until S3 answers, so that a store
	// kept across retries does not stay in the default region once the cause has passed.
	unsettled bool
	newClient func(region string) *s3.Client
}

var _ statestore.Store = (*store)(nil)

// open builds the client from the SDK's default chain: credentials, region (when none is configured, the
// bucket's region as S3 names it, asked in us-east-1), and the endpoint override AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, with which buckets are
// addressed by path.
func open(ctx context.Context, b statestore.Bucket) (*store, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(awssdk.Logger))
	if err != nil {
		return nil, fmt.Errorf("state store %s: loading the AWS configuration: %w", b.URL(), err)
	}
	return fromConfig(ctx, cfg, b), nil
}

// fromConfig is open with the SDK's configuration loaded.
func fromConfig(ctx context.Context, cfg aws.Config, b statestore.Bucket) *store {
	discover := cfg.Region == ""
	if discover {
		cfg.Region = defaultS3Region
	}
	overridden := false
	s := &store{Bucket: b}
	s.newClient = func(region string) *s3.Client {
		return s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.HTTPClient = awssdk.OwnBodies(o.HTTPClient) // the SDK must not close a body the transport still reads
			o.Region = region
			// The options already hold any endpoint override from the environment or the shared config files.
			overridden = o.BaseEndpoint != nil
			if overridden || os.Getenv(EnvS3PathStyle) == "1" {
				o.UsePathStyle = true
			}
		})
	}
	s.client = s.newClient(cfg.Region)
	// No region configured (a machine at boot, whose user data names none): S3 says where the bucket is.
	s.unsettled = discover && !overridden
	s.c(ctx)
	return s
}

// c returns the client, in the bucket's region once S3 has said which it is (see unsettled).
func (s *store) c(ctx context.Context) *s3.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unsettled {
		r, answered := bucketRegion(ctx, s.client, s.Name)
		s.unsettled = !answered
		if r != "" && r != s.client.Options().Region {
			s.client = s.newClient(r)
		}
	}
	return s.client
}

// bucketRegion returns the region S3 says bucket is in ("" when it does not say): HeadBucket answers with the
// bucket's region in a header, whether it succeeds or is redirected or refused. answered is false when S3 gave no
// answer to go by: no response at all, or a server error or throttling (5xx, 429), which may pass.
func bucketRegion(ctx context.Context, client *s3.Client, bucket string) (region string, answered bool) {
	out, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return aws.ToString(out.BucketRegion), true
	}
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil {
		return "", false
	}
	region = re.Response.Header.Get("X-Amz-Bucket-Region")
	code := re.Response.StatusCode
	return region, region != "" || (code < 500 && code != http.StatusTooManyRequests)
}

func (s *store) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, _, err := s.Read(ctx, p)
	return data, err
}

func (s *store) Read(ctx context.Context, p string) ([]byte, statestore.Generation, error) {
	if err := statestore.CheckPath(p); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.URL(), err)
	}
	out, err := s.c(ctx).GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Name, Key: aws.String(s.Key(p))})
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.Object(p), s3Error(err))
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.Object(p), errclass.Retryable(err))
	}
	return data, statestore.Generation(aws.ToString(out.ETag)), nil
}

func (s *store) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := statestore.CheckPath(p); err != nil {
		return fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	_, err := s.put(ctx, p, data, nil)
	return err
}

// WriteIf checks the precondition twice: first with a HeadObject, because some S3-compatible servers ignore
// conditional writes, then with PutObject's If-Match / If-None-Match, which S3 evaluates atomically.
func (s *store) WriteIf(ctx context.Context, p string, data []byte, ifGen statestore.Generation) (statestore.Generation, error) {
	if err := statestore.CheckPath(p); err != nil {
		return "", fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	var cur statestore.Generation
	head, err := s.c(ctx).HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.Name, Key: aws.String(s.Key(p))})
	switch err = s3Error(err); {
	case err == nil:
		cur = statestore.Generation(aws.ToString(head.ETag))
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("writing %s: %w", s.Object(p), err)
	}
	if !sameETag(cur, ifGen) {
		return "", statestore.Conflict(s.Object(p), ifGen)
	}
	return s.put(ctx, p, data, func(in *s3.PutObjectInput) {
		if ifGen == statestore.Absent {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(string(ifGen))
		}
	})
}

func (s *store) put(ctx context.Context, p string, data []byte, cond func(*s3.PutObjectInput)) (statestore.Generation, error) {
	in := &s3.PutObjectInput{
		Bucket:        &s.Name,
		Key:           aws.String(s.Key(p)),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if cond != nil {
		cond(in)
	}
	out, err := s.c(ctx).PutObject(ctx, in)
	if err != nil {
		err = s3Error(err)
		if errors.Is(err, statestore.ErrConflict) {
			return "", statestore.Conflict(s.Object(p), statestore.Generation(aws.ToString(in.IfMatch)))
		}
		return "", fmt.Errorf("writing %s: %w", s.Object(p), err)
	}
	if out.ETag != nil {
		return statestore.Generation(*out.ETag), nil
	}
	head, err := s.c(ctx).HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.Name, Key: in.Key})
	if err != nil {
		return "", fmt.Errorf("writing %s: reading back its ETag: %w", s.Object(p), s3Error(err))
	}
	return statestore.Generation(aws.ToString(head.ETag)), nil
}

func (s *store) Delete(ctx context.Context, p string) error {
	if err := statestore.CheckPath(p); err != nil {
		return fmt.Errorf("deleting %s: %w", s.URL(), err)
	}
	_, err := s.c(ctx).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.Name, Key: aws.String(s.Key(p))})
	if err = s3Error(err); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", s.Object(p), err)
	}
	return nil
}

func (s *store) List(ctx context.Context, prefix string) ([]string, error) {
	keyPrefix, err := s.KeyPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.URL(), err)
	}
	in := &s3.ListObjectsV2Input{Bucket: &s.Name, Prefix: aws.String(keyPrefix)}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	var paths []string
	for pages := s3.NewListObjectsV2Paginator(s.c(ctx), in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.Object(prefix), s3Error(err))
		}
		for _, obj := range page.Contents {
			if p, ok := s.Path(aws.ToString(obj.Key)); ok {
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// Check lists at most one object of the store: a missing bucket is the answer NoSuchBucket, whatever the
// prefix.
func (s *store) Check(ctx context.Context) error {
	_, err := s.c(ctx).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.Name, Prefix: aws.String(s.Key("")), MaxKeys: aws.Int32(1)})
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket" {
		return s.NoBucket()
	}
	return fmt.Errorf("state store %s: %w", s.URL(), s3Error(err))
}

// sameETag compares ETags with or without their quotes: S3 quotes them, some servers do not.
func sameETag(a, b statestore.Generation) bool {
	return strings.Trim(string(a), `"`) == strings.Trim(string(b), `"`)
}

// s3Error maps the SDK's errors to the store's and the engine's: 404 to fs.ErrNotExist (except a missing
// bucket, which is a configuration error), 412 to ErrConflict, 403 to errclass.ErrAccessDenied, throttling and 5xx
// to errclass.Retryable. Anything else is returned as is.
func s3Error(err error) error {
	if err == nil {
		return nil
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("bucket does not exist: %w", err)
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return statestore.ErrNoSuchObject
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return statestore.ErrConflict
	case code == "AccessDenied" || status == http.StatusForbidden:
		return fmt.Errorf("%w: %w", errclass.ErrAccessDenied, err)
	case code == "ConditionalRequestConflict", // a concurrent conditional write is in flight: retry
		code == "SlowDown", code == "Throttling", code == "ThrottlingException", code == "RequestTimeout",
		status == http.StatusTooManyRequests, status >= 500:
		return errclass.Retryable(err)
	}
	return err
}
