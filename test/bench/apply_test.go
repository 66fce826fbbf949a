package bench

import (
	"context"
	"testing"
	"time"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakeaws"
)

// BenchmarkUpdateLatency measures update --yes of a new 50-instance-group cluster against AWS answering every
// call in 50 ms, beside the critical-path bound (criticalPath), and the same update's wall time without latency
// (what the machine's CPU and the tasks' own waits take, whatever the engine does).
func BenchmarkUpdateLatency(b *testing.B) {
	b.Run("aws/50-ig", func(b *testing.B) {
		const latency = 50 // ms
		bound, _, pipeline, _ := criticalPath(b, newAccount(b, "aws", fiftyGroups), latency)
		floor := updateWall(b)
		var wall float64
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			a := newAccount(b, "aws", fiftyGroups)
			if err := a.aws.SetFaults(fakeaws.Faults{LatencyMillis: latency}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if err := a.update(context.Background(), true, cloudup.EngineTuning{}); err != nil {
				b.Fatal(err)
			}
			wall += since(start)
		}
		wall /= float64(b.N)
		b.ReportMetric(wall, "ms-wall")
		b.ReportMetric(bound, "ms-critical-path")
		b.ReportMetric(wall/bound, "x-critical-path")
		b.ReportMetric(floor, "ms-wall-no-latency")
		b.ReportMetric(float64(pipeline), "pipeline-calls")
	})
}

// The throttling case of the issue: AWS refuses calls above 20 at once (its throttling error, which the SDK
// retries itself and awstasks reports to the engine as a push back), every call taking 100 ms so that how many
// run at once matters: at 20 ms the update of 50 groups is bound by kubeup's CPU (the nodeup configurations'
// YAML), not by its calls, and every tuning took about as long, even without any limit. The engine's defaults
// (adaptive) against fixed windows of 64 (as unbounded as kops' waves on this graph) and 10 (Terraform's
// -parallelism).
const (
	throttleMaxConcurrent = 20
	throttleLatency       = 100 // ms
)

var throttleTunings = []struct {
	name   string
	tuning cloudup.EngineTuning
}{
	{"adaptive", cloudup.EngineTuning{}},
	{"fixed-64", cloudup.EngineTuning{Concurrency: 64, FixedConcurrency: true}},
	{"fixed-10", cloudup.EngineTuning{Concurrency: 10, FixedConcurrency: true}},
}

// BenchmarkThrottle measures update --yes of a new 50-instance-group cluster against AWS throttling above 20
// concurrent calls: the throttled calls and the wall time of each engine tuning.
func BenchmarkThrottle(b *testing.B) {
	for _, tc := range throttleTunings {
		b.Run("aws/50-ig/"+tc.name, func(b *testing.B) {
			var throttled, total int
			var wall float64
			for range b.N {
				b.StopTimer()
				a := newAccount(b, "aws", fiftyGroups)
				if err := a.aws.SetFaults(fakeaws.Faults{MaxConcurrent: throttleMaxConcurrent, LatencyMillis: throttleLatency}); err != nil {
					b.Fatal(err)
				}
				a.rec.take()
				b.StartTimer()
				start := time.Now()
				if err := a.update(context.Background(), true, tc.tuning); err != nil {
					b.Fatal(err)
				}
				wall += since(start)
				s := statsOf(a.rec.take())
				throttled += s.throttled
				total += s.total
			}
			n := float64(b.N)
			b.ReportMetric(float64(throttled)/n, "throttled-calls")
			b.ReportMetric(wall/n, "ms-wall")
			b.ReportMetric(float64(total)/n, "calls-total")
		})
	}
}

// updateWall runs update --yes of a new 50-group cluster without latency, and returns how long it took
// (milliseconds).
func updateWall(tb testing.TB) float64 {
	tb.Helper()
	a := newAccount(tb, "aws", fiftyGroups)
	start := time.Now()
	if err := a.update(context.Background(), true, cloudup.EngineTuning{}); err != nil {
		tb.Fatal(err)
	}
	return since(start)
}
