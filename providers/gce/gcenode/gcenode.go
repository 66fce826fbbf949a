// Package gcenode is the gce provider's node side: protokube on a Compute Engine instance learns who it is from
// the metadata server, claims persistent disks and Cloud DNS records, and keeps kubenet's routes of the network
// (docs/gce.md). It registers the cloud
// "gce" with protokube/nodecloud; cmd/protokube-gce links it.
package gcenode

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// gceCloud is this instance on GCE: its identity, as the metadata server tells it, and the clients of its
// project. It is made on the first round and kept, so that the Cloud DNS provider keeps the managed zone it
// found; each round forgets the records the former one read.
type gceCloud struct {
	instance      volumetasks.Holder
	zone, project string
	compute       *compute.Service
	dnsService    *dns.Service

	disks   *gcetasks.Disks
	dns     *gcetasks.CloudDNS
	dnsZone string // the zone dns is of
	me      volumetasks.Holder
	// routes is the world of kubenet's routes (the network's routes, the cluster's instances), made on the first
	// round that asks for them and kept.
	routes *gcetasks.Cloud
}

var _ nodecloud.Router = (*gceCloud)(nil)

func init() {
	nodecloud.Register(model.CloudGCE, func(ctx context.Context) (nodecloud.Instance, error) { return newGCECloud(ctx) })
}

// newGCECloud asks the metadata server who this instance is (GCE_METADATA_HOST points it elsewhere), and makes
// the clients (the instance's service account; KUBEUP_GCE_ENDPOINT points them elsewhere).
func newGCECloud(ctx context.Context) (*gceCloud, error) {
	me, zone, project, err := gcetasks.InstanceIdentity(ctx)
	if err != nil {
		return nil, err
	}
	c, d, err := gcetasks.NewServices(ctx)
	if err != nil {
		return nil, err
	}
	return &gceCloud{instance: me, zone: zone, project: project, compute: c, dnsService: d}, nil
}

// Identity is who the cloud says this instance is.
func (c *gceCloud) Identity() volumetasks.Holder { return c.instance }

// Providers returns the persistent disks of this instance's zone, claimed as me, and the Cloud DNS provider of
// the configuration's DNS zone, which forgets what it read in the former round.
func (c *gceCloud) Providers(pc *model.ProtokubeConfig, root string, me volumetasks.Holder) (volumetasks.Provider, dnstasks.Provider, error) {
	zone := pc.Zone
	if zone == "" {
		zone = c.zone
	}
	if zone != c.zone {
		return nil, nil, fmt.Errorf("protokube: the node configuration is of zone %s, but instance %s runs in %s (metadata server): a persistent disk attaches to an instance of its own zone only; run this instance group's instances in %s",
			zone, c.instance.NodeID, c.zone, zone)
	}
	if pc.DNSZone == "" {
		return nil, nil, fmt.Errorf("protokube: the node configuration names no DNS zone (spec.dnsZone): on GCE the records go to a Cloud DNS managed zone")
	}
	if c.disks == nil || c.me != me {
		c.disks, c.me = gcetasks.NewDisks(c.compute, c.project, zone, me, gcetasks.DisksOptions{Root: root}), me
	}
	if c.dns == nil || c.dnsZone != pc.DNSZone {
		c.dns, c.dnsZone = gcetasks.NewCloudDNS(c.dnsService, c.project, pc.DNSZone), pc.DNSZone
	}
	c.dns.NewRun()
	return c.disks, c.dns, nil
}

// PodRoutes returns the task of kubenet's routes on GCE (gcetasks.PlanPodRoutes): each pod range to its Node's
// instance, in the network of the cluster's instances. It reads the cluster's instances once; the task reads the
// project's routes once.
func (c *gceCloud) PodRoutes(ctx context.Context, spec nodecloud.PodRoutesSpec) (nodecloud.PodRoutes, error) {
	if c.routes == nil || c.routes.Cluster != spec.Cluster {
		c.routes = gcetasks.NewCloudOf(c.compute, c.dnsService, c.project, spec.Cluster, "", nil)
	}
	c.routes.NewRun()
	plan, err := c.routes.PlanPodRoutes(ctx, spec.PodCIDR, spec.Routes)
	if err != nil {
		return nodecloud.PodRoutes{}, err
	}
	out := nodecloud.PodRoutes{Unmatched: plan.Unmatched}
	for _, in := range plan.NotForwarding {
		out.Problems = append(out.Problems, fmt.Sprintf("instance %s does not forward (canIpForward off: made from a template before kubenet's routes): "+
			"GCE drops the packets of the pods its route carries until the instance is made again (kubeup rolling-update cluster)", in))
	}
	if plan.Routes != nil {
		out.Tasks = append(out.Tasks, engine.Bind(plan.Routes, c.routes))
	}
	return out, nil
}
