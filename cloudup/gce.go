package cloudup

import (
	"context"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// openGCE returns the GCE cloud of a complete spec: the clients' usual configuration (application default
// credentials; KUBEUP_GCE_ENDPOINT points them elsewhere, without authentication) in the spec's project, the
// cluster's ownership label, its DNS zone and the state store.
func openGCE(ctx context.Context, c *model.Cluster, cs *Clusters) (*gcetasks.Cloud, error) {
	cloud, err := gcetasks.NewCloud(ctx, c.Spec.Project, c.Metadata.Name, c.Spec.DNSZone, cs.Store)
	if err != nil {
		return nil, err
	}
	// One region narrows what delete lists to that region's zones; a cluster over several lists every zone.
	if regions := model.GCERegions(c.Spec.Zones); len(regions) == 1 {
		cloud.Region = regions[0]
	}
	return cloud, nil
}

// unusedTemplatesCleanup deletes, after an apply, the cluster's instance templates that its groups no longer use
// (a template change makes a new template and points the groups at it); the dry run lists them as deletions.
func unusedTemplatesCleanup(cloud *gcetasks.Cloud, o UpdateOptions) *cleanup[*gcetasks.Cloud] {
	return &cleanup[*gcetasks.Cloud]{
		plan: func(ctx context.Context, g *engine.Graph[*gcetasks.Cloud]) ([]engine.Change, error) {
			var groups []*gcetasks.InstanceGroupManager
			for _, t := range g.Tasks() {
				if m, ok := t.(*gcetasks.InstanceGroupManager); ok {
					groups = append(groups, m)
				}
			}
			var names []string
			err := retryCleanup(ctx, func(int) (err error) {
				names, err = cloud.UnusedTemplatesAfter(ctx, groups)
				return err
			})
			return templateDeletions(names), err
		},
		apply: func(ctx context.Context, changed bool) ([]engine.Change, error) {
			var keys []string
			err := retryCleanup(ctx, func(attempt int) (err error) {
				fresh := changed || attempt > 1
				if fresh {
					cloud.NewRun()
				}
				keys, err = cloud.DeleteUnusedTemplates(ctx, true, fresh)
				if o.Logger != nil {
					for _, k := range keys {
						o.Logger.Info("deleted an instance template no group uses", "template", k)
					}
				}
				return err
			})
			var names []string
			for _, k := range keys {
				names = append(names, strings.TrimPrefix(k, "InstanceTemplate/"))
			}
			return templateDeletions(names), err
		},
	}
}

// templateDeletions are the plan's deletions of the instance templates names.
func templateDeletions(names []string) []engine.Change {
	var out []engine.Change
	for _, n := range names {
		out = append(out, engine.Change{Key: engine.Key{Type: "InstanceTemplate", Name: n}, Action: engine.Delete,
			Note: "no managed instance group of the cluster uses it once the update is applied"})
	}
	return out
}

// retryCleanup runs attempt (numbered from 1) until it succeeds or fails otherwise than by a rate limit or a
// server error, with backoff, until cleanupDeadline. The cleanup runs outside the engine, so it retries what the
// engine would itself: one attempt makes about five calls, all of which must get through, so a few attempts are
// not enough when a third of the calls are throttled.
//
// After an apply that changed nothing, the run's reads are still true: the apply's cleanup then reads only what
// the run did not (the groups of the region's other zones), so that a no-op update lists each kind once per
// zone. It still deletes what a killed run left.
func retryCleanup(ctx context.Context, attempt func(int) error) error {
	start := time.Now()
	backoff := 200 * time.Millisecond
	for i := 1; ; i++ {
		err := attempt(i)
		if err == nil || engine.ClassOf(err) != engine.ClassRetryable || time.Since(start)+backoff > cleanupDeadline {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, cleanupMaxBackoff)
	}
}

// cleanupDeadline and cleanupMaxBackoff bound retryCleanup's retries.
const (
	cleanupDeadline   = 5 * time.Minute
	cleanupMaxBackoff = 5 * time.Second
)
