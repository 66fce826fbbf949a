package gceprovider

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// provider is the gce cloud's provider: Compute Engine and Cloud DNS (docs/gce.md).
type provider struct{}

var _ cloudup.Provider = provider{}

func init() { cloudup.RegisterProvider(model.CloudGCE, provider{}) }

func (provider) Update(ctx context.Context, cs *cloudup.Clusters, stored *cloudup.Stored, c *model.Cluster, igs []*model.InstanceGroup, o cloudup.UpdateOptions) (*engine.Plan, error) {
	cloud, err := open(ctx, c, cs)
	if err != nil {
		return nil, err
	}
	build := func() (*engine.Graph[*gcetasks.Cloud], error) { return BuildCloudGraph(c, igs) }
	cl := cloudup.UnusedGroupsCleanup(cloud, UnusedGroups(c, igs), o).Then(unusedTemplatesCleanup(cloud, o))
	return cloudup.RunUpdate(ctx, cs, stored, c, igs, o, cloud, build, cl)
}

func (provider) WriteGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	graph, err := BuildCloudGraph(c, igs)
	if err != nil {
		return err
	}
	return graph.WriteDOT(w)
}

// DeleteOwned: the managed instance groups, templates, firewall rules and disks gce labels or describes as the
// cluster's, then the DNS names kubeup publishes.
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

// Zones are the zones of the spec's project that compute's zones.list answers, with application default
// credentials (or at KUBEUP_GCE_ENDPOINT), sorted.
func (provider) Zones(ctx context.Context, s *model.ClusterSpec) (string, []string, error) {
	where := "project " + s.Project
	svc, _, err := gcetasks.NewServices(ctx)
	if err != nil {
		return where, nil, err
	}
	var zones []string
	err = svc.Zones.List(s.Project).Pages(ctx, func(l *compute.ZoneList) error {
		for _, z := range l.Items {
			zones = append(zones, z.Name)
		}
		return nil
	})
	if err != nil {
		return where, nil, gcetasks.Classify("listing the zones of project "+s.Project, err)
	}
	slices.Sort(zones)
	return where, zones, nil
}

// ZonesNear lists the project's zones in z's region.
func (provider) ZonesNear(z string, have []string) string {
	region := model.GCERegion(z)
	in := slices.DeleteFunc(slices.Clone(have), func(h string) bool { return model.GCERegion(h) != region })
	if len(in) == 0 {
		return "it has no zone in region " + region
	}
	return fmt.Sprintf("its zones in region %s: %s", region, strings.Join(in, ", "))
}

func (provider) CredentialWarnings(c *model.Cluster) []cloudup.ValidationFailure {
	shared := ""
	if g := c.Spec.GCE; g != nil {
		shared = fmt.Sprintf("every machine runs as service account %s", g.ServiceAccount)
	}
	return cloudup.SharedTokenWarnings(c, shared)
}

// open returns the GCE cloud of a complete spec: the clients' usual configuration (application default
// credentials; KUBEUP_GCE_ENDPOINT points them elsewhere, without authentication) in the spec's project, the
// cluster's ownership label, its DNS zone and the state store.
func open(ctx context.Context, c *model.Cluster, cs *cloudup.Clusters) (*gcetasks.Cloud, error) {
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
