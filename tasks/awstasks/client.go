package awstasks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/awssdk"
)

// MaxAttempts is how many times the SDK tries one call before the error reaches the engine, which then backs
// off and tries the task again: enough to ride out a burst of throttling.
const MaxAttempts = 10

// LoadConfig returns the SDK's configuration: the usual credential chain and settings (environment, shared
// files, instance role), the region (the spec's when not empty), and adaptive retries. AWS_ENDPOINT_URL (or
// AWS_ENDPOINT_URL_<SERVICE>) points every client at another endpoint, such as internal/fakeaws.
func LoadConfig(ctx context.Context, region string) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return NewRetryer() }),
		config.WithLogger(awssdk.Logger),
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: set spec.region, or AWS_REGION")
	}
	if cfg.Credentials != nil {
		cfg.Credentials = hintedCredentials{cfg.Credentials}
	}
	return cfg, nil
}

// hintedCredentials is the SDK's credential chain whose failure says how to give kubeup credentials
// (NoCredentialsError), instead of the chain's own error alone.
type hintedCredentials struct{ aws.CredentialsProvider }

func (h hintedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := h.CredentialsProvider.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return creds, &NoCredentialsError{Err: err}
	}
	return creds, err
}

// NoCredentialsError is the failure of the SDK's credential chain to find any credentials. Its message says
// where kubeup looks for them; it unwraps to the chain's error. Classify makes it terminal: retrying does not
// make credentials appear.
type NoCredentialsError struct{ Err error }

func (e *NoCredentialsError) Error() string {
	return "no AWS credentials: set AWS_PROFILE to a profile of ~/.aws/config or ~/.aws/credentials, or AWS_ACCESS_KEY_ID and " +
		"AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or run where an instance role provides them " +
		"(the SDK's credential chain said: " + e.Err.Error() + ")"
}

func (e *NoCredentialsError) Unwrap() error { return e.Err }

// throttling are the codes AWS answers a caller that goes too fast with.
var throttling = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true, "RequestThrottledException": true,
	"TooManyRequestsException": true, "RequestLimitExceeded": true, "RequestThrottled": true, "SlowDown": true,
	"PriorRequestNotComplete": true, "EC2ThrottledException": true, "BandwidthLimitExceeded": true,
}

// NewRetryer is the SDK's standard retryer, MaxAttempts attempts, with a short backoff (100 ms doubling, up to
// 5 s, with jitter) and without the SDK's client-side rate limits (its retry quota, adaptive mode's token bucket):
// the engine's windows are what slows kubeup down when AWS throttles (every throttle the retryer sees reaches the
// engine, pushbackRetryer), so a retry need not wait the seconds the SDK's defaults wait.
func NewRetryer() aws.RetryerV2 {
	return pushbackRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = MaxAttempts
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(backoff)
	})}
}

// backoff is the delay before retry attempt: 100 ms doubling per attempt up to 5 s, between half and all of it.
func backoff(attempt int, _ error) (time.Duration, error) {
	d := 100 * time.Millisecond
	for i := 1; i < attempt && d < 5*time.Second; i++ {
		d *= 2
	}
	d = min(d, 5*time.Second)
	return d/2 + rand.N(d/2+1), nil
}

// pushbackRetryer is the SDK's retryer that also tells the engine when AWS throttled a call it is about to retry:
// the engine then shrinks the window of the task's API class (engine.Pushback), as it would had the throttle
// reached it as an error. Without it the engine would only learn of throttling after MaxAttempts, and keep
// starting tasks into a throttled API.
type pushbackRetryer struct{ aws.RetryerV2 }

var pushback = engine.Pushback // a test counts the calls

func (r pushbackRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if throttling[ErrorCode(opErr)] {
		pushback(ctx)
	}
	return r.RetryerV2.GetRetryToken(ctx, opErr)
}

// accessDenied are the codes of a caller without the permission.
var accessDenied = map[string]bool{
	"UnauthorizedOperation": true, "AccessDenied": true, "AccessDeniedException": true, "AuthFailure": true,
	"UnauthorizedAccess": true, "Forbidden": true,
}

// Classify gives an SDK error its engine class, wrapped with what was being done: throttling and server errors
// (5xx) are retryable; a missing permission wraps engine.ErrAccessDenied and is terminal; every other API error
// (InvalidParameterValue, a validation error) is terminal and shows AWS's code and message. Errors without an API
// code (the connection failed) are retryable; a cancelled context is returned as it is. nil stays nil.
func Classify(doing string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", doing, err)
	}
	var nc *NoCredentialsError
	if errors.As(err, &nc) { // said without the SDK's operation chain in front of the hint
		return engine.Terminal(fmt.Errorf("%s: %w", doing, nc))
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) { // no answer from AWS: the connection failed, or the answer was not AWS's
		return engine.Retryable(fmt.Errorf("%s: %w", doing, err))
	}
	msg := fmt.Sprintf("%s: AWS said %s: %s", doing, ae.ErrorCode(), ae.ErrorMessage())
	var re *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch code := ae.ErrorCode(); {
	case throttling[code]:
		return engine.Retryable(&apiError{msg: msg, err: err})
	case accessDenied[code]:
		return engine.Terminal(&apiError{msg: msg, err: fmt.Errorf("%w: %w", engine.ErrAccessDenied, err)})
	case status >= http.StatusInternalServerError, ae.ErrorFault() == smithy.FaultServer && status == 0,
		strings.HasSuffix(code, "InternalError"), code == "InternalFailure", code == "ServiceUnavailable", code == "Unavailable":
		return engine.Retryable(&apiError{msg: msg, err: err})
	}
	return engine.Terminal(&apiError{msg: msg, err: err})
}

// ErrorCode returns AWS's error code in err's chain ("InvalidVolume.NotFound"), "" when there is none.
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// apiError is a classified API error: its message says what was being done and what AWS said; it unwraps to
// the SDK's error (and to engine.ErrAccessDenied for a missing permission).
type apiError struct {
	msg string
	err error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }
