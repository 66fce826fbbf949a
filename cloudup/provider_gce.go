package cloudup

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// gceProvider is the gce cloud's provider: Compute Engine and Cloud DNS (docs/gce.md).
type gceProvider struct{}

func (gceProvider) update(ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup, o UpdateOptions) (*engine.Plan, error) {
	cloud, err := openGCE(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	build := func() (*engine.Graph[*gcetasks.Cloud], error) { return cloudgraph.BuildGCECloudGraph(c, igs) }
	cl := unusedGroupsCleanup(cloud, cloudgraph.GCEUnusedGroups(c, igs), o).then(unusedTemplatesCleanup(cloud, o)).
		then(unusedGroupsCleanup(cloud, cloudgraph.StaleNodeConfigs[*gcetasks.Cloud](c, igs), o))
	return update(ctx, cs, stored, cloud, build, o, cl)
}

func (gceProvider) writeGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	graph, err := cloudgraph.BuildGCECloudGraph(c, igs)
	if err != nil {
		return err
	}
	return graph.WriteDOT(w)
}

// deleteOwned: the managed instance groups, templates, firewall rules and disks gce labels or describes as the
// cluster's, then the DNS names kubeup publishes.
func (gceProvider) deleteOwned(ctx context.Context, cs *Clusters, c *model.Cluster, o DeleteOptions) ([]string, func() ([]string, error), error) {
	cloud, err := openGCE(ctx, c, cs)
	if err != nil {
		return nil, nil, err
	}
	return cs.deleteOwned(ctx, cloud, c, o.Out)
}

func (gceProvider) openRolling(ctx context.Context, cs *Clusters, c *model.Cluster, igs []*model.InstanceGroup) (rollingCloud, error) {
	cloud, err := openGCE(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	return &gceRolling{cloud: cloud, spec: c, igs: igs}, nil
}

func (gceProvider) zones(ctx context.Context, s *model.ClusterSpec) (string, []string, error) {
	have, err := gceZones(ctx, s.Project)
	return "project " + s.Project, have, err
}

// zonesNear lists the project's zones in z's region.
func (gceProvider) zonesNear(z string, have []string) string {
	region := model.GCERegion(z)
	in := slices.DeleteFunc(slices.Clone(have), func(h string) bool { return model.GCERegion(h) != region })
	if len(in) == 0 {
		return "it has no zone in region " + region
	}
	return fmt.Sprintf("its zones in region %s: %s", region, strings.Join(in, ", "))
}

func (gceProvider) credentialWarnings(c *model.Cluster) []ValidationFailure {
	shared := ""
	if g := c.Spec.GCE; g != nil {
		shared = fmt.Sprintf("every machine runs as service account %s", g.ServiceAccount)
	}
	return sharedTokenWarnings(c, shared)
}
