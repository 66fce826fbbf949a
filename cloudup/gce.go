package cloudup

import (
	"context"
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

// deleteUnusedTemplates deletes the cluster's instance templates that its groups no longer use (a template
// change makes a new template and points the groups at it), after an apply. It only reads when there are none.
// It runs outside the engine, so it retries what the engine would (rate limits, server errors) itself, with
// backoff, until cleanupDeadline: one attempt makes about five calls, all of which must get through, so a few
// attempts are not enough when a third of the calls are throttled.
//
// After an apply that changed nothing, the run's reads are still true: it reads only what the run did not (the
// groups of the region's other zones), so that a no-op update lists each kind once per zone. It still deletes
// what a killed run left.
func deleteUnusedTemplates(ctx context.Context, cloud *gcetasks.Cloud, o UpdateOptions, changed bool) error {
	start := time.Now()
	backoff := 200 * time.Millisecond
	for i := 1; ; i++ {
		fresh := changed || i > 1
		if fresh {
			cloud.NewRun()
		}
		deleted, err := cloud.DeleteUnusedTemplates(ctx, true, fresh)
		if o.Logger != nil {
			for _, k := range deleted {
				o.Logger.Info("deleted an instance template no group uses", "template", k)
			}
		}
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

// cleanupDeadline and cleanupMaxBackoff bound deleteUnusedTemplates' retries.
const (
	cleanupDeadline   = 5 * time.Minute
	cleanupMaxBackoff = 5 * time.Second
)
