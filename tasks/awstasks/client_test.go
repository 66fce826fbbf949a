package awstasks

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

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
