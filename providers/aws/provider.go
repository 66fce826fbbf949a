package awsprovider

import (
	"context"
	"fmt"
	"io"
	"strings"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// provider is the aws cloud's provider: EC2, Auto Scaling and Route53 (docs/aws.md).
type provider struct{}

var _ cloudup.Provider = provider{}

func init() { cloudup.RegisterProvider(model.CloudAWS, provider{}) }

func (provider) Update(ctx context.Context, cs *cloudup.Clusters, stored *cloudup.Stored, c *model.Cluster, igs []*model.InstanceGroup, o cloudup.UpdateOptions) (*engine.Plan, error) {
	cloud, err := open(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	build := func() (*engine.Graph[*awstasks.Cloud], error) { return BuildCloudGraph(c, igs) }
	return cloudup.RunUpdate(ctx, cs, stored, c, igs, o, cloud, build, cloudup.UnusedGroupsCleanup(cloud, UnusedGroups(c, igs), o))
}

func (provider) WriteGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	graph, err := BuildCloudGraph(c, igs)
	if err != nil {
		return err
	}
	return graph.WriteDOT(w)
}

// DeleteOwned: the Auto Scaling groups, launch templates, security groups and volumes tagged as the cluster's,
// then the DNS names kubeup publishes.
func (provider) DeleteOwned(ctx context.Context, cs *cloudup.Clusters, c *model.Cluster, o cloudup.DeleteOptions) ([]string, func() ([]string, error), error) {
	cloud, err := open(ctx, c, cs)
	if err != nil {
		return nil, nil, err
	}
	return cs.DeleteOwned(ctx, cloud, c, o.Out)
}

func (provider) OpenRolling(ctx context.Context, cs *cloudup.Clusters, c *model.Cluster, igs []*model.InstanceGroup) (cloudup.RollingCloud, error) {
	cloud, err := open(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	return &rolling{cloud: cloud, spec: c, igs: igs}, nil
}

// Zones are the zones of the spec's region that EC2 lists, with the SDK's usual configuration.
func (provider) Zones(ctx context.Context, s *model.ClusterSpec) (string, []string, error) {
	where := "region " + s.Region
	cfg, err := awstasks.LoadConfig(ctx, s.Region)
	if err != nil {
		return where, nil, err
	}
	have, err := awstasks.RegionZones(ctx, cfg)
	return where, have, err
}

func (provider) ZonesNear(_ string, have []string) string {
	return "its zones: " + strings.Join(have, ", ")
}

func (provider) CredentialWarnings(c *model.Cluster) []cloudup.ValidationFailure {
	shared := ""
	if a := c.Spec.AWS; a != nil && (a.ControlPlaneInstanceProfile == "" || a.ControlPlaneInstanceProfile == a.InstanceProfile) {
		shared = fmt.Sprintf("spec.aws.controlPlaneInstanceProfile is the nodes' instance profile (%s)", a.InstanceProfile)
	}
	return cloudup.SharedTokenWarnings(c, shared)
}

// open returns the AWS cloud of a complete spec: the SDK's usual configuration (credentials, AWS_ENDPOINT_URL)
// in the spec's region, the cluster's ownership tag, its DNS zone and the state store.
func open(ctx context.Context, c *model.Cluster, cs *cloudup.Clusters) (*awstasks.Cloud, error) {
	cfg, err := awstasks.LoadConfig(ctx, c.Spec.Region)
	if err != nil {
		return nil, err
	}
	return awstasks.NewCloud(cfg, c.Metadata.Name, c.Spec.DNSZone, cs.Store), nil
}
