package bench

import (
	"context"
	"fmt"
	"testing"

	"kubeup.dev/kubeup/cloudup"
)

// BenchmarkNoopUpdate measures the API calls of an update with nothing to do, a dry run and then --yes, of a
// cluster that update --yes made (the goal: no mutating call, at most one list call per resource type per
// zone). A mutating call of the no-op --yes fails the benchmark.
func BenchmarkNoopUpdate(b *testing.B) {
	for _, cloud := range []string{"aws", "gce"} {
		for _, sh := range []shape{threeMembers, fiveMembers, fiftyGroups} {
			b.Run(cloud+"/"+sh.name, func(b *testing.B) {
				a := newAccount(b, cloud, sh)
				ctx := context.Background()
				if err := a.update(ctx, true, cloudup.EngineTuning{}); err != nil {
					b.Fatal(err)
				}
				a.rec.take()
				var total, mutating, maxList int
				b.ResetTimer()
				for range b.N {
					dry, apply, err := a.noop(ctx)
					if err != nil {
						b.Fatal(err)
					}
					total += dry.total + apply.total
					mutating += dry.mutating + apply.mutating
					maxList = max(maxList, dry.maxList, apply.maxList)
				}
				b.ReportMetric(float64(mutating)/float64(b.N), "mutating-calls")
				b.ReportMetric(float64(maxList), "list-calls-max-per-type-per-zone")
				b.ReportMetric(float64(total)/float64(b.N), "calls-total")
			})
		}
	}
}

// noop runs the update with nothing to do, a dry run then --yes, and returns the figures of each. A mutating call
// of --yes is an error naming them.
func (a *account) noop(ctx context.Context) (dry, apply stats, err error) {
	if err := a.update(ctx, false, cloudup.EngineTuning{}); err != nil {
		return dry, apply, err
	}
	dry = statsOf(a.rec.take())
	if err := a.update(ctx, true, cloudup.EngineTuning{}); err != nil {
		return dry, apply, err
	}
	apply = statsOf(a.rec.take())
	if apply.mutating > 0 {
		return dry, apply, fmt.Errorf("update --yes of %s with nothing to do made %d mutating calls: %v", a.name, apply.mutating, apply.mutatingOps)
	}
	return dry, apply, nil
}
