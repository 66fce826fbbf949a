package cloudup

import (
	"context"

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
