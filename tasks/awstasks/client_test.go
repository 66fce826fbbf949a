package awstasks

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/logging"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"
)

// Every throttle the SDK retries by itself reaches the engine as a push back; a call that was not throttled
// does not.
func TestThrottlesThatTheSDKRetriesPushBack(t *testing.T) {
	var pushed atomic.Int32
	old := pushback
	pushback = func(context.Context) { pushed.Add(1) }
	t.Cleanup(func() { pushback = old })
	c, srv := newTestCloud(t)
	ctx := context.Background()
	if _, err := c.EC2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); err != nil {
		t.Fatal(err)
	}
	if n := pushed.Load(); n != 0 {
		t.Fatalf("%d push backs without throttling, want 0", n)
	}
	if err := srv.SetFaults(fakeaws.Faults{ThrottleRate: 0.5, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := c.EC2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := srv.Calls()["DescribeVolumes"]
	if want := int32(calls - 21); pushed.Load() != want || want == 0 {
		t.Errorf("%d push backs, want one per throttled call: %d (of %d calls for 21 answers)", pushed.Load(), want, calls)
	}
}

// loadConfigEnv points LoadConfig at a fake AWS with no credentials anywhere: no keys in the environment, no
// profile, empty shared files, no instance role.
func loadConfigEnv(t *testing.T) {
	t.Helper()
	hs := httptest.NewServer(fakeaws.New())
	t.Cleanup(hs.Close)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_ENDPOINT_URL": hs.URL, "AWS_REGION": "",
	} {
		t.Setenv(k, v)
	}
}

// TestNoCredentialsSaysWhereToPutThem: without credentials, a call's error says how to give them (AWS_PROFILE,
// the access keys, an instance role) rather than the SDK's chain alone, and is terminal: waiting does not make
// credentials appear (it was retried as a connection failure).
func TestNoCredentialsSaysWhereToPutThem(t *testing.T) {
	loadConfigEnv(t)
	ctx := context.Background()
	cfg, err := LoadConfig(ctx, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewCloud(cfg, testCluster, "", nil).volumes(ctx)
	if err == nil {
		t.Fatal("listing volumes without credentials succeeded")
	}
	for _, want := range []string{"listing the cluster's EBS volumes: no AWS credentials", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "instance role"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if c := engine.ClassOf(err); c != engine.ClassTerminal {
		t.Errorf("class %v, want terminal", c)
	}
}

// TestSDKLogsGoToSlogAtDebug: what the SDK logs (its warning about a response body it could not drain) goes to
// slog at debug level, not to stderr.
func TestSDKLogsGoToSlogAtDebug(t *testing.T) {
	loadConfigEnv(t)
	var logs strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	cfg, err := LoadConfig(context.Background(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Logf(logging.Warn, "failed to discard remaining HTTP response body, this may affect connection reuse: %v", "boom")
	if got := logs.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "failed to discard remaining HTTP response body") {
		t.Errorf("slog got %q, want the SDK's warning at debug level", got)
	}
}
