package bench

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakeaws"
)

// TestHarness runs the benchmarks' harness on small clusters, cheaply enough for make test: the critical path
// of an aws update --yes is found (its calibration run makes the cluster), an update with nothing to do then makes
// no mutating call (dry run and --yes), the throttling fault of BenchmarkThrottle is seen by the recorder as the
// fake counts it (a dry run: the SDK's backoff after a throttle costs seconds), and a dry run of a new gce
// cluster reads and changes nothing.
func TestHarness(t *testing.T) {
	ctx := context.Background()
	t.Run("aws/critical-path-then-noop", func(t *testing.T) {
		a := newAccount(t, "aws", threeMembers)
		path, unattributed, pipeline, made := criticalPath(t, a, 1)
		// At 1 ms a call the path's calls are far fewer than waitGap ms: a path that long holds a task's wait
		// (Route53's poll after the change); and the pipeline reads what the update left unused after the apply.
		if path < float64(waitGap/time.Millisecond) || pipeline == 0 || made.mutating == 0 {
			t.Errorf("critical path %.0f ms at 1 ms a call, %d pipeline calls, of %d calls (%d mutating): want a task's wait on the path, "+
				"the pipeline's calls, and changes", path, pipeline, made.total, made.mutating)
		}
		t.Logf("critical path: %.0f ms at 1 ms a call and the tasks' waits, of %d calls (%d made outside any task, %d by the pipeline)",
			path, made.total, unattributed, pipeline)
		dry, apply, err := a.noop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if dry.mutating != 0 || dry.total == 0 || dry.maxList == 0 || apply.total == 0 {
			t.Errorf("an update with nothing to do: dry run %+v, --yes %+v; want calls, lists, and no mutating call", dry, apply)
		}
		t.Logf("no-op: dry run %d calls, --yes %d calls; most lists of one type in one zone: %d (%s)", dry.total, apply.total,
			max(dry.maxList, apply.maxList), dry.maxListOp)
	})
	t.Run("aws/throttled-dry-run", func(t *testing.T) {
		a := newAccount(t, "aws", threeMembers)
		if err := a.aws.SetFaults(fakeaws.Faults{MaxConcurrent: 2, LatencyMillis: 5}); err != nil {
			t.Fatal(err)
		}
		if err := a.update(ctx, false, cloudup.EngineTuning{Concurrency: 64, FixedConcurrency: true}); err != nil {
			t.Fatal(err)
		}
		dry := statsOf(a.rec.take())
		if dry.throttled != a.aws.Throttled() || dry.mutating != 0 || dry.total == 0 {
			t.Errorf("a dry run at most 2 calls at once: %+v; the fake answered %d throttled; want them all seen, no mutating call", dry, a.aws.Throttled())
		}
		t.Logf("a dry run at most 2 calls at once: %d calls, %d throttled", dry.total, dry.throttled)
	})
	t.Run("gce/dry-run", func(t *testing.T) {
		a := newAccount(t, "gce", threeMembers)
		if err := a.update(ctx, false, cloudup.EngineTuning{}); err != nil {
			t.Fatal(err)
		}
		if dry := statsOf(a.rec.take()); dry.mutating != 0 || dry.total == 0 || dry.maxList == 0 {
			t.Errorf("a dry run of a new cluster: %+v; want calls, lists, and no mutating call", dry)
		}
	})
}

func TestStats(t *testing.T) {
	calls := []call{
		{op: "DescribeVolumes", list: true, zone: "us-east-1"},
		{op: "DescribeVolumes", list: true, zone: "us-east-1"},
		{op: "DescribeInstances", list: true, zone: "us-east-1a"},
		{op: "DescribeInstances", list: true, zone: "us-east-1b"},
		{op: "CreateVolume", mutating: true},
		{op: "CreateVolume", mutating: true, throttled: true},
	}
	got := statsOf(calls)
	want := stats{total: 6, mutating: 1, throttled: 1, maxList: 2, maxListOp: "DescribeVolumes in us-east-1", mutatingOps: map[string]int{"CreateVolume": 1}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(stats{})); diff != "" {
		t.Errorf("statsOf (-want +got):\n%s", diff)
	}
}

func TestAvailabilityZones(t *testing.T) {
	for _, tc := range []struct {
		params url.Values
		want   string
	}{
		{nil, ""},
		{url.Values{"Filter.1.Name": {"tag:Name"}, "Filter.1.Value.1": {"x"}}, ""},
		{url.Values{"Filter.1.Name": {"tag:Name"}, "Filter.1.Value.1": {"x"}, "Filter.2.Name": {"availability-zone"},
			"Filter.2.Value.1": {"us-east-1b"}, "Filter.2.Value.2": {"us-east-1a"}}, "us-east-1a,us-east-1b"},
	} {
		if got := availabilityZones(tc.params); got != tc.want {
			t.Errorf("availabilityZones(%v) = %q, want %q", tc.params, got, tc.want)
		}
	}
}
