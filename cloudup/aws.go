package cloudup

import (
	"context"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// openAWS returns the AWS cloud of a complete spec: the SDK's usual configuration (credentials, AWS_ENDPOINT_URL)
// in the spec's region, the cluster's ownership tag, its DNS zone and the state store.
func openAWS(ctx context.Context, c *model.Cluster, cs *Clusters) (*awstasks.Cloud, error) {
	cfg, err := awstasks.LoadConfig(ctx, c.Spec.Region)
	if err != nil {
		return nil, err
	}
	return awstasks.NewCloud(cfg, c.Metadata.Name, c.Spec.DNSZone, cs.Store), nil
}

// awsCleanup deletes, after an apply, the Auto Scaling groups and launch templates of the instance groups removed
// from the spec (unused); the dry run lists each as a deletion, and the apply deletes no other.
func awsCleanup(cloud *awstasks.Cloud, unused *awstasks.UnusedGroups, o UpdateOptions) *cleanup[*awstasks.Cloud] {
	var planned []engine.Change // the dry run's deletions: the apply deletes no other
	return &cleanup[*awstasks.Cloud]{
		plan: func(ctx context.Context, _ *engine.Graph[*awstasks.Cloud]) ([]engine.Change, error) {
			err := retryCleanup(ctx, func(attempt int) (err error) {
				planned, err = unused.Deletions(ctx, cloud, attempt > 1)
				return err
			})
			return planned, err
		},
		apply: func(ctx context.Context, _ bool) ([]engine.Change, error) {
			var done []engine.Change
			err := retryCleanup(ctx, func(int) error {
				d, err := unused.Delete(ctx, cloud, planned)
				done = append(done, d...)
				if o.Logger != nil {
					for _, c := range d {
						o.Logger.Info("deleted what an instance group removed from the spec left", "key", c.Key.String())
					}
				}
				return err
			})
			return done, err
		},
	}
}
