package cloudup

import (
	"context"
	"fmt"
	"io"
	"strings"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// awsProvider is the aws cloud's provider: EC2, Auto Scaling and Route53 (docs/aws.md).
type awsProvider struct{}

func (awsProvider) update(ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup, o UpdateOptions) (*engine.Plan, error) {
	cloud, err := openAWS(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	build := func() (*engine.Graph[*awstasks.Cloud], error) { return cloudgraph.BuildAWSCloudGraph(c, igs) }
	cl := unusedGroupsCleanup(cloud, cloudgraph.AWSUnusedGroups(c, igs), o).
		then(unusedGroupsCleanup(cloud, cloudgraph.StaleNodeConfigs[*awstasks.Cloud](c, igs), o))
	return update(ctx, cs, stored, cloud, build, o, cl)
}

func (awsProvider) writeGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	graph, err := cloudgraph.BuildAWSCloudGraph(c, igs)
	if err != nil {
		return err
	}
	return graph.WriteDOT(w)
}

// deleteOwned: the Auto Scaling groups, launch templates, security groups and volumes tagged as the cluster's,
// then the DNS names kubeup publishes.
func (awsProvider) deleteOwned(ctx context.Context, cs *Clusters, c *model.Cluster, o DeleteOptions) ([]string, func() ([]string, error), error) {
	cloud, err := openAWS(ctx, c, cs)
	if err != nil {
		return nil, nil, err
	}
	return cs.deleteOwned(ctx, cloud, c, o.Out)
}

func (awsProvider) openRolling(ctx context.Context, cs *Clusters, c *model.Cluster, igs []*model.InstanceGroup) (rollingCloud, error) {
	cloud, err := openAWS(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	return &awsRolling{cloud: cloud, spec: c, igs: igs}, nil
}

func (awsProvider) zones(ctx context.Context, s *model.ClusterSpec) (string, []string, error) {
	have, err := awsZones(ctx, s.Region)
	return "region " + s.Region, have, err
}

func (awsProvider) zonesNear(_ string, have []string) string {
	return "its zones: " + strings.Join(have, ", ")
}

func (awsProvider) credentialWarnings(c *model.Cluster) []ValidationFailure {
	shared := ""
	if a := c.Spec.AWS; a != nil && (a.ControlPlaneInstanceProfile == "" || a.ControlPlaneInstanceProfile == a.InstanceProfile) {
		shared = fmt.Sprintf("spec.aws.controlPlaneInstanceProfile is the nodes' instance profile (%s)", a.InstanceProfile)
	}
	return sharedTokenWarnings(c, shared)
}
