package fakeaws

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

// control sends a request to a control endpoint and returns the status and body.
func control(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func fakeCalls(t *testing.T, base string) map[string]int {
	t.Helper()
	code, body := control(t, base, "GET", "/__fake/calls", "")
	var calls map[string]int
	if err := json.Unmarshal([]byte(body), &calls); code != http.StatusOK || err != nil {
		t.Fatalf("GET /__fake/calls: %d %q: %v", code, body, err)
	}
	return calls
}

func TestControlEndpoints(t *testing.T) {
	ctx := context.Background()
	_, srv := startFakeAWS(t)
	cfg := testAWSConfig(srv.URL)
	r53 := route53.NewFromConfig(cfg)
	for range 2 {
		if _, err := r53.ListHostedZones(ctx, &route53.ListHostedZonesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := iam.NewFromConfig(cfg).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("none")}); err == nil {
		t.Fatal("GetInstanceProfile of none: no error")
	}
	if diff := cmp.Diff(map[string]int{"ListHostedZones": 2, "GetInstanceProfile": 1}, fakeCalls(t, srv.URL)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if code, _ := control(t, srv.URL, "POST", "/__fake/reset-calls", ""); code != http.StatusNoContent {
		t.Errorf("POST /__fake/reset-calls: %d", code)
	}
	if diff := cmp.Diff(map[string]int{}, fakeCalls(t, srv.URL)); diff != "" {
		t.Errorf("calls after reset (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/__fake/reset-calls", ""},
		{"GET", "/__fake/nothing", ""},
	} {
		if code, body := control(t, srv.URL, tc.method, tc.path, tc.body); code != http.StatusNotFound || !strings.Contains(body, "/__fake/calls") {
			t.Errorf("%s %s: %d %q; want 404 listing the endpoints", tc.method, tc.path, code, body)
		}
	}
	for _, body := range []string{
		`{`, `{"throttleRate": 0.1, "nonsense": 1}`, `{"throttleRate": 1.5}`, `{"throttleRate": 0.6, "serverErrorRate": 0.6}`,
		`{"latencyMillis": -1}`, `{"services": ["sqs"]}`,
	} {
		if code, _ := control(t, srv.URL, "POST", "/__fake/faults", body); code != http.StatusBadRequest {
			t.Errorf("POST /__fake/faults %s: %d, want 400", body, code)
		}
	}
	if code, _ := control(t, srv.URL, "POST", "/__fake/imds-instance?id=i-nosuch", ""); code != http.StatusNotFound {
		t.Errorf("POST /__fake/imds-instance of no instance: %d, want 404", code)
	}
	if diff := cmp.Diff(map[string]int{}, fakeCalls(t, srv.URL)); diff != "" {
		t.Errorf("control requests were counted (-want +got):\n%s", diff)
	}
}

// noWaitRetryer retries up to attempts times without waiting and without the client-side retry quota, so a test
// of throttling takes no time.
func noWaitRetryer(attempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			o.RateLimiter = ratelimit.None
		})
	}
}

// oneCall makes one call of each service's SDK client.
var oneCall = map[string]func(ctx context.Context, cfg aws.Config) error{
	svcEC2: func(ctx context.Context, cfg aws.Config) error {
		_, err := ec2.NewFromConfig(cfg).DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
		return err
	},
	svcAutoScaling: func(ctx context.Context, cfg aws.Config) error {
		_, err := autoscaling.NewFromConfig(cfg).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
		return err
	},
	svcIAM: func(ctx context.Context, cfg aws.Config) error {
		_, err := iam.NewFromConfig(cfg).ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{})
		return err
	},
	svcRoute53: func(ctx context.Context, cfg aws.Config) error {
		_, err := route53.NewFromConfig(cfg).ListHostedZones(ctx, &route53.ListHostedZonesInput{})
		return err
	},
	svcS3: func(ctx context.Context, cfg aws.Config) error {
		_, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).ListBuckets(ctx, &s3.ListBucketsInput{})
		return err
	},
}

// TestFaultsThrottle checks every service's throttling answer is the SDK's idea of throttling, in that
// service's protocol and with its code and status.
func TestFaultsThrottle(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	if code, body := control(t, srv.URL, "POST", "/__fake/faults", `{"throttleRate": 1, "services": ["ec2", "autoscaling", "iam", "route53", "s3"]}`); code != http.StatusNoContent {
		t.Fatalf("POST /__fake/faults: %d %s", code, body)
	}
	isThrottle := retry.IsErrorThrottles(retry.DefaultThrottles)
	for svc, want := range map[string]struct {
		code   string
		status int
	}{
		svcEC2:         {"RequestLimitExceeded", http.StatusServiceUnavailable},
		svcAutoScaling: {"Throttling", http.StatusBadRequest},
		svcIAM:         {"Throttling", http.StatusBadRequest},
		svcRoute53:     {"Throttling", http.StatusBadRequest},
		svcS3:          {"SlowDown", http.StatusServiceUnavailable},
	} {
		err := oneCall[svc](ctx, testAWSConfig(srv.URL))
		var ae smithy.APIError
		var re *awshttp.ResponseError
		if !errors.As(err, &ae) || ae.ErrorCode() != want.code || !errors.As(err, &re) || re.HTTPStatusCode() != want.status {
			t.Errorf("%s: %v; want %s (%d)", svc, err, want.code, want.status)
		}
		if isThrottle.IsErrorThrottle(err) != aws.TrueTernary {
			t.Errorf("%s: the SDK does not see %v as throttling", svc, err)
		}
	}
	// Throttled calls are counted: every attempt is a call.
	if calls := s.Calls(); calls["DescribeVolumes"] != 1 || calls["ListHostedZones"] != 1 || calls["ListBuckets"] != 1 {
		t.Errorf("calls %v", calls)
	}

	// IMDS is not an API: never throttled.
	if code, _, _ := imdsDo(t, s, "PUT", "/latest/api/token", map[string]string{imdsTokenTTLHeader: "60"}); code != http.StatusOK {
		t.Errorf("an IMDS token under throttling: %d", code)
	}
}

// TestFaultsShare checks a share of calls fails, the same calls for the same seed, that the SDK's retries ride
// it out, and that the state store's S3 is left alone unless named.
func TestFaultsShare(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	count := func(n int) (throttled, internal int) {
		for range n {
			err := oneCall[svcRoute53](ctx, testAWSConfig(srv.URL))
			var ae smithy.APIError
			switch {
			case err == nil:
			case errors.As(err, &ae) && ae.ErrorCode() == "Throttling":
				throttled++
			case errors.As(err, &ae) && ae.ErrorCode() == "InternalError":
				internal++
			default:
				t.Fatalf("ListHostedZones: %v", err)
			}
		}
		return throttled, internal
	}
	if err := s.SetFaults(Faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	throttled, internal := count(200)
	if throttled < 40 || throttled > 80 || internal < 8 || internal > 32 {
		t.Errorf("of 200 calls %d throttled and %d server errors; want about 60 and 20", throttled, internal)
	}
	if err := s.SetFaults(Faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if again, internalAgain := count(200); again != throttled || internalAgain != internal {
		t.Errorf("the same seed failed %d and %d calls, then %d and %d", throttled, internal, again, internalAgain)
	}

	// The SDK's retries ride out 30% throttling and 10% server errors.
	cfg := testAWSConfig(srv.URL)
	cfg.Retryer, cfg.RetryMaxAttempts = noWaitRetryer(20), 0
	s.ResetCalls()
	for i := range 50 {
		if err := oneCall[svcRoute53](ctx, cfg); err != nil {
			t.Fatalf("call %d with retries: %v", i, err)
		}
	}
	if n := s.Calls()["ListHostedZones"]; n <= 50 {
		t.Errorf("%d calls for 50 with 40%% failing: the failures were not counted", n)
	}

	// The default services leave S3 alone.
	for i := range 20 {
		if err := oneCall[svcS3](ctx, testAWSConfig(srv.URL)); err != nil {
			t.Fatalf("S3 call %d: %v", i, err)
		}
	}
	// The zero Faults turns it all off.
	if err := s.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if throttled, internal := count(50); throttled+internal != 0 {
		t.Errorf("without faults %d calls failed", throttled+internal)
	}
}

// TestFaultsLatency checks calls are slowed by at least the latency (a lower bound only: no test depends on a
// machine being fast).
func TestFaultsLatency(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	if err := s.SetFaults(Faults{LatencyMillis: 30, Services: []string{svcRoute53}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 3 {
		if err := oneCall[svcRoute53](ctx, testAWSConfig(srv.URL)); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Errorf("3 calls with 30ms latency took %v", took)
	}
}
