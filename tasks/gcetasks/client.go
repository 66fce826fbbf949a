package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iam/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/engine"
)

// EndpointEnv names the environment variable that points kubeup at another GCE endpoint (internal/fakegce in
// tests and demos): "http://127.0.0.1:8080/". Compute is then reached at <endpoint>compute/v1/ and Cloud DNS at
// <endpoint>dns/v1/, without credentials.
const EndpointEnv = "KUBEUP_GCE_ENDPOINT"

// NewServices returns the compute and Cloud DNS services: with application default credentials (the
// environment's GOOGLE_APPLICATION_CREDENTIALS, gcloud's credentials, or the metadata server's service account),
// or, when KUBEUP_GCE_ENDPOINT is set, at that endpoint without authentication.
func NewServices(ctx context.Context) (*compute.Service, *dns.Service, error) {
	return servicesAt(ctx, os.Getenv(EndpointEnv))
}

// servicesAt returns the services at endpoint ("" = Google's).
func servicesAt(ctx context.Context, endpoint string) (*compute.Service, *dns.Service, error) {
	var copts, dopts []option.ClientOption
	if endpoint != "" {
		if !strings.HasSuffix(endpoint, "/") {
			endpoint += "/"
		}
		copts = []option.ClientOption{option.WithEndpoint(endpoint + "compute/v1/"), option.WithoutAuthentication()}
		dopts = []option.ClientOption{option.WithEndpoint(endpoint + "dns/v1/"), option.WithoutAuthentication()}
	}
	c, err := compute.NewService(ctx, copts...)
	if err != nil {
		return nil, nil, fmt.Errorf("making the GCE compute client: %w", err)
	}
	d, err := dns.NewService(ctx, dopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("making the Cloud DNS client: %w", err)
	}
	return c, d, nil
}

// NewIAM returns the IAM service (kubeup only reads service accounts with it): with application default
// credentials, or, when KUBEUP_GCE_ENDPOINT is set, at that endpoint without authentication.
func NewIAM(ctx context.Context) (*iam.Service, error) {
	return iamAt(ctx, os.Getenv(EndpointEnv))
}

// iamAt returns the IAM service at endpoint ("" = Google's). iam/v1's basePath is the host's root
// ("https://iam.googleapis.com/") and its paths start with "v1/": the endpoint itself is its base.
func iamAt(ctx context.Context, endpoint string) (*iam.Service, error) {
	var opts []option.ClientOption
	if endpoint != "" {
		if !strings.HasSuffix(endpoint, "/") {
			endpoint += "/"
		}
		opts = []option.ClientOption{option.WithEndpoint(endpoint), option.WithoutAuthentication()}
	}
	s, err := iam.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("making the IAM client: %w", err)
	}
	return s, nil
}

// rateLimited are the reasons Google answers a caller that goes too fast with.
var rateLimited = map[string]bool{"rateLimitExceeded": true, "userRateLimitExceeded": true, "RATE_LIMIT_EXCEEDED": true}

// Classify gives an API error its engine class, wrapped with what was being done: 429 (rateLimitExceeded,
// userRateLimitExceeded) and server errors (5xx) are retryable; 403 wraps engine.ErrAccessDenied and is terminal
// (but a 403 whose reason is a rate limit is retryable, as Google sends some of those); 404 wraps
// engine.ErrNotFound; every other 4xx is terminal and shows Google's reason and message. Errors without an answer
// from Google (the connection failed) are retryable; a cancelled context is returned as it is. nil stays nil.
func Classify(doing string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", doing, err)
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return engine.Retryable(fmt.Errorf("%s: %w", doing, err))
	}
	reason := Reason(err)
	msg := fmt.Sprintf("%s: Google said %d %s: %s", doing, ge.Code, reason, ge.Message)
	switch {
	case ge.Code == http.StatusTooManyRequests, rateLimited[reason]:
		return engine.Retryable(&apiError{msg: msg, err: err})
	case ge.Code >= http.StatusInternalServerError:
		return engine.Retryable(&apiError{msg: msg, err: err})
	case ge.Code == http.StatusForbidden:
		return engine.Terminal(&apiError{msg: msg, err: fmt.Errorf("%w: %w", engine.ErrAccessDenied, err)})
	case ge.Code == http.StatusNotFound:
		return engine.Terminal(&apiError{msg: msg, err: fmt.Errorf("%w: %w", engine.ErrNotFound, err)})
	}
	return engine.Terminal(&apiError{msg: msg, err: err})
}

// Reason returns Google's reason of the first error item in err's chain ("rateLimitExceeded", "notFound",
// "alreadyExists"), or the HTTP status text when there is none; "" when err is not an API error.
func Reason(err error) string {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return ""
	}
	for _, it := range ge.Errors {
		if it.Reason != "" {
			return it.Reason
		}
	}
	return strings.ReplaceAll(strings.ToLower(http.StatusText(ge.Code)), " ", "")
}

// IsNotFound reports whether err is Google's 404.
func IsNotFound(err error) bool { return httpCode(err) == http.StatusNotFound }

// isConflict reports whether err is Google's 409 (alreadyExists, or a resource in use).
func isConflict(err error) bool { return httpCode(err) == http.StatusConflict }

func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// apiError is a classified API error: its message says what was being done and what Google said; it unwraps to
// the client's error (and to engine.ErrAccessDenied or engine.ErrNotFound).
type apiError struct {
	msg string
	err error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// operationPoll bounds the backoff between waits on an operation. operations.wait returns when the operation is
// done or after a while (up to two minutes at Google); the pauses only matter when it answers at once.
var operationPoll = struct{ first, max time.Duration }{first: 50 * time.Millisecond, max: 2 * time.Second}

// waitOperation waits until op (zonal, regional or global, as its zone and region say) is DONE, with
// operations.wait and a growing pause between waits, within ctx. The operation's error is classified as the API
// errors are: its HTTP status (httpErrorStatusCode) and its first error's code as the reason.
func (c *Cloud) waitOperation(ctx context.Context, doing string, op *compute.Operation) error {
	return waitOperation(ctx, c.Compute, c.Project, doing, op)
}

func waitOperation(ctx context.Context, svc *compute.Service, project, doing string, op *compute.Operation) error {
	pause := operationPoll.first
	for op.Status != "DONE" {
		var err error
		switch {
		case op.Zone != "":
			op, err = svc.ZoneOperations.Wait(project, lastSegment(op.Zone), op.Name).Context(ctx).Do()
		case op.Region != "":
			op, err = svc.RegionOperations.Wait(project, lastSegment(op.Region), op.Name).Context(ctx).Do()
		default:
			op, err = svc.GlobalOperations.Wait(project, op.Name).Context(ctx).Do()
		}
		if err != nil {
			return Classify(doing+": waiting for its operation", err)
		}
		if op.Status == "DONE" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for operation %s: %w", doing, op.Name, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, operationPoll.max)
	}
	return operationError(doing, op)
}

// operationError is the error of a done operation, classified; nil when it succeeded.
func operationError(doing string, op *compute.Operation) error {
	if op.Error == nil || len(op.Error.Errors) == 0 {
		return nil
	}
	code := int(op.HttpErrorStatusCode)
	if code == 0 {
		code = http.StatusBadRequest
	}
	ge := &googleapi.Error{Code: code, Message: op.HttpErrorMessage}
	var msgs []string
	for _, e := range op.Error.Errors {
		ge.Errors = append(ge.Errors, googleapi.ErrorItem{Reason: e.Code, Message: e.Message})
		msgs = append(msgs, e.Message)
	}
	ge.Message = strings.Join(msgs, "; ")
	if ge.Code < http.StatusInternalServerError && ge.Code != http.StatusTooManyRequests {
		for _, e := range op.Error.Errors {
			if strings.Contains(strings.ToUpper(e.Code), "RATE_LIMIT") || e.Code == "rateLimitExceeded" {
				ge.Code = http.StatusTooManyRequests
			}
		}
	}
	return Classify(fmt.Sprintf("%s: operation %s failed", doing, op.Name), ge)
}

// lastSegment is the name at the end of a resource URL ("…/zones/us-central1-a" → "us-central1-a"); a plain
// name stays as it is.
func lastSegment(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// mutate finishes a mutating call: its error classified, or its operation waited on (see waitOperation). The
// error matches Google's (isConflict, IsNotFound) through the classification.
func (c *Cloud) mutate(ctx context.Context, doing string, op *compute.Operation, err error) error {
	if err != nil {
		return Classify(doing, err)
	}
	return c.waitOperation(ctx, doing, op)
}
