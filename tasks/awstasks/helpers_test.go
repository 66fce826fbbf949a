package awstasks

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

const testCluster = "test.example.com"

// newTestCloud returns a Cloud of cluster test.example.com talking to a new fake AWS, and the fake. The SDK
// retries without delay, so that tests with injected throttling do not wait.
func newTestCloud(t testing.TB) (*Cloud, *fakeaws.Server) {
	t.Helper()
	srv := fakeaws.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return NewCloud(testConfig(hs.URL), testCluster, "", nil), srv
}

func testConfig(endpoint string) aws.Config {
	return aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption},
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
		Retryer: func() aws.Retryer {
			return pushbackRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = MaxAttempts
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})}
		},
	}
}

// quiet is a logger that drops everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// runOnce runs a fresh graph from build once on c, after c.NewRun, with short engine backoffs.
func runOnce(t testing.TB, c *Cloud, target engine.Target, build func() *engine.Graph[*Cloud]) (*engine.Plan, error) {
	t.Helper()
	c.NewRun()
	res, err := engine.Run(context.Background(), build(), c, engine.Options{
		Target: target, Backoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Deadline: time.Minute, Logger: quiet,
	})
	if res == nil {
		return nil, err
	}
	return res.Plan, err
}

// mustRun is runOnce that fails t on error.
func mustRun(t testing.TB, c *Cloud, target engine.Target, build func() *engine.Graph[*Cloud]) *engine.Plan {
	t.Helper()
	p, err := runOnce(t, c, target, build)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return p
}

// freshRuns wraps build so that each graph it makes starts a new run of c (for enginetest.ApplyThenNoChanges).
func freshRuns(c *Cloud, build func() *engine.Graph[*Cloud]) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		c.NewRun()
		return build()
	}
}

// mutatingCalls returns the calls of calls that change something.
func mutatingCalls(calls map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range calls {
		if fakeaws.Mutating(op) && n > 0 {
			out[op] = n
		}
	}
	return out
}
