// Package gcenode is the gce provider's node side: protokube on a Compute Engine instance learns who it is from
// the metadata server and claims persistent disks and Cloud DNS records (docs/gce.md). It registers the cloud
// "gce" with protokube/nodecloud; cmd/protokube-gce links it.
package gcenode

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"

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
}

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
