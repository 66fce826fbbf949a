package fakeaws

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/fakecontrol"
)

// holdCalls makes every call counted in flight wait until release is closed; entered receives one value per
// such call once it is in flight.
func holdCalls(s *Server) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 16), make(chan struct{})
	s.ctl.HoldInFlight(func() {
		entered <- struct{}{}
		<-release
	})
	return entered, release
}

// TestFaultsMaxConcurrent checks that a call arriving while MaxConcurrent calls are in flight is refused with
// its service's throttling error (which the SDK sees as throttling), that refusals are counted in Throttled and
// in /__fake/calls, that the state store's S3 is left alone, and that the calls in flight and the calls after
// them succeed.
func TestFaultsMaxConcurrent(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	if code, body := control(t, srv.URL, "POST", "/__fake/faults", `{"maxConcurrent": -1}`); code != http.StatusBadRequest {
		t.Errorf("POST /__fake/faults maxConcurrent -1: %d %s, want 400", code, body)
	}
	if code, body := control(t, srv.URL, "POST", "/__fake/faults", `{"maxConcurrent": 2}`); code != http.StatusNoContent {
		t.Fatalf("POST /__fake/faults: %d %s", code, body)
	}
	entered, release := holdCalls(s)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- oneCall[svcRoute53](ctx, testAWSConfig(srv.URL))
		}()
	}
	<-entered
	<-entered

	isThrottle := retry.IsErrorThrottles(retry.DefaultThrottles)
	for _, tc := range []struct {
		svc    string
		code   string
		status int
	}{
		{svcEC2, "RequestLimitExceeded", http.StatusServiceUnavailable},
		{svcAutoScaling, "Throttling", http.StatusBadRequest},
		{svcIAM, "Throttling", http.StatusBadRequest},
		{svcRoute53, "Throttling", http.StatusBadRequest},
	} {
		err := oneCall[tc.svc](ctx, testAWSConfig(srv.URL))
		var ae smithy.APIError
		var re *awshttp.ResponseError
		if !errors.As(err, &ae) || ae.ErrorCode() != tc.code || !errors.As(err, &re) || re.HTTPStatusCode() != tc.status {
			t.Errorf("%s with 2 calls in flight: %v; want %s (%d)", tc.svc, err, tc.code, tc.status)
		}
		if isThrottle.IsErrorThrottle(err) != aws.TrueTernary {
			t.Errorf("%s: the SDK does not see %v as throttling", tc.svc, err)
		}
	}
	// The state store's S3 is not subject to the faults by default: neither refused nor in flight.
	if err := oneCall[svcS3](ctx, testAWSConfig(srv.URL)); err != nil {
		t.Errorf("S3 with 2 calls in flight: %v", err)
	}
	if got := s.Throttled(); got != 4 {
		t.Errorf("Throttled() = %d, want 4", got)
	}
	calls := fakeCalls(t, srv.URL)
	if calls[fakecontrol.ThrottledKey] != 4 || calls["ListHostedZones"] != 3 || calls["DescribeVolumes"] != 1 {
		t.Errorf("GET /__fake/calls = %v; want ListHostedZones 3 (2 in flight, 1 refused), DescribeVolumes 1 and __throttled 4", calls)
	}
	if Mutating(fakecontrol.ThrottledKey) {
		t.Errorf("Mutating(%q) = true: a count of refusals is not an operation", fakecontrol.ThrottledKey)
	}
	if _, ok := s.Calls()[fakecontrol.ThrottledKey]; ok {
		t.Errorf("Calls() holds %q: it counts operations only", fakecontrol.ThrottledKey)
	}

	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call in flight: %v", err)
		}
	}
	// Once the calls in flight are answered, calls go through again.
	if err := oneCall[svcEC2](ctx, testAWSConfig(srv.URL)); err != nil {
		t.Errorf("after the calls in flight ended: %v", err)
	}

	// The SDK's retries ride out a refusal: its first retry comes once the calls in flight are answered.
	s.ResetCalls()
	if diff := cmp.Diff(map[string]int{}, fakeCalls(t, srv.URL)); diff != "" {
		t.Errorf("calls after reset (-want +got):\n%s", diff)
	}
	entered, release = holdCalls(s)
	errs = make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- oneCall[svcEC2](ctx, testAWSConfig(srv.URL))
		}()
	}
	<-entered
	<-entered
	var once sync.Once
	cfg := testAWSConfig(srv.URL)
	cfg.RetryMaxAttempts = 0
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				once.Do(func() {
					s.ctl.HoldInFlight(nil)
					close(release)
					wg.Wait()
				})
				return 0, nil
			})
		})
	}
	if err := oneCall[svcIAM](ctx, cfg); err != nil {
		t.Errorf("a call with retries: %v", err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call in flight: %v", err)
		}
	}
	if diff := cmp.Diff(map[string]int{"DescribeVolumes": 2, "ListInstanceProfiles": 2, fakecontrol.ThrottledKey: 1}, fakeCalls(t, srv.URL)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	// Throttling by share is counted too.
	s.ResetCalls()
	if err := s.SetFaults(Faults{ThrottleRate: 1}); err != nil {
		t.Fatal(err)
	}
	if err := oneCall[svcRoute53](ctx, testAWSConfig(srv.URL)); err == nil {
		t.Error("a call under throttleRate 1 succeeded")
	}
	if got := s.Throttled(); got != 1 {
		t.Errorf("Throttled() under throttleRate 1 = %d, want 1", got)
	}
}

// TestObserve checks an observer sees each API call with its service, region, operation and Query parameters,
// and whether it was throttled.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	var mu sync.Mutex
	var got []Call
	s.Observe(func(c Call) {
		mu.Lock()
		defer mu.Unlock()
		c.Params = url.Values{"Action": c.Params["Action"]}
		if c.Service != svcEC2 && c.Service != svcIAM {
			c.Params = nil
		}
		got = append(got, c)
	})
	for _, svc := range []string{svcEC2, svcRoute53} {
		if err := oneCall[svc](ctx, testAWSConfig(srv.URL)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetFaults(Faults{ThrottleRate: 1}); err != nil {
		t.Fatal(err)
	}
	if err := oneCall[svcIAM](ctx, testAWSConfig(srv.URL)); err == nil {
		t.Error("an IAM call under throttleRate 1 succeeded")
	}
	want := []Call{
		{Service: svcEC2, Region: "us-east-1", Op: "DescribeVolumes", Params: url.Values{"Action": {"DescribeVolumes"}}},
		{Service: svcRoute53, Region: "us-east-1", Op: "ListHostedZones"},
		{Service: svcIAM, Region: "us-east-1", Op: "ListInstanceProfiles", Params: url.Values{"Action": {"ListInstanceProfiles"}}, Throttled: true},
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed calls (-want +got):\n%s", diff)
	}
}
