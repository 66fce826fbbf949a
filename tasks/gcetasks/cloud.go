package gcetasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"kubeup.dev/kubeup/internal/gcelabels"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"
	"google.golang.org/api/iam/v1"

	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/sharedread"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// Cloud is the world of a GCE cloud graph: the compute and Cloud DNS services, the project, the cluster whose
// resources the tasks manage (everything kubeup makes carries ClusterLabels, or, for the kinds that have no
// labels, the cluster's description), the state store, and the batched reads the tasks' Finds share.
//
// The reads are made once per run: the first Find of a type makes one filtered, paginated list (the cluster's
// disks of one zone, its instance templates, the groups of one zone, the firewall rules of the project), and
// every other Find of that type, concurrent or later, reads its answer. A Render that changes a type, or fails,
// forgets that type's answer, so that a task that is retried reads the world again. NewRun forgets everything.
type Cloud struct {
	Compute *compute.Service
	DNS     *dns.Service
	// IAM reads the machines' service account (ServiceAccount); NewCloud sets it, NewCloudOf leaves it to the
	// caller.
	IAM *iam.Service

	Project string
	// Region is the cluster's region (informational: the tasks take their zones and regions from their fields).
	Region  string
	Cluster string
	Store   storetasks.Store

	dnsZone string
	dnsOnce sync.Once
	dns     dnstasks.Provider

	reads *reads
}

var (
	_ dnstasks.World   = (*Cloud)(nil)
	_ storetasks.World = (*Cloud)(nil)
)

// NewCloud returns the cloud of cluster in project, with the records of the Cloud DNS managed zone whose DNS
// name is dnsZone ("example.com"; empty: the cluster has no DNS) and the state store. The services are
// NewServices' and NewIAM's. Nothing is read yet.
func NewCloud(ctx context.Context, project, cluster, dnsZone string, store storetasks.Store) (*Cloud, error) {
	c, d, err := NewServices(ctx)
	if err != nil {
		return nil, err
	}
	i, err := NewIAM(ctx)
	if err != nil {
		return nil, err
	}
	cloud := NewCloudOf(c, d, project, cluster, dnsZone, store)
	cloud.IAM = i
	return cloud, nil
}

// NewCloudOf is NewCloud with the services given.
func NewCloudOf(c *compute.Service, d *dns.Service, project, cluster, dnsZone string, store storetasks.Store) *Cloud {
	return &Cloud{Compute: c, DNS: d, Project: project, Cluster: cluster, Store: store, dnsZone: dnsZone, reads: &reads{}}
}

// DNSProvider returns the Cloud DNS provider of the cluster's managed zone, made once per Cloud.
func (c *Cloud) DNSProvider() dnstasks.Provider {
	c.dnsOnce.Do(func() {
		if c.dnsZone == "" {
			c.dns = noDNS{}
			return
		}
		c.dns = NewCloudDNS(c.DNS, c.Project, c.dnsZone)
	})
	return c.dns
}

// StateStore returns the state store.
func (c *Cloud) StateStore() storetasks.Store { return c.Store }

// NewRun forgets every batched read, the DNS provider's included: the next Finds read the world again. cloudup
// calls it before each engine run on one Cloud.
func (c *Cloud) NewRun() {
	c.reads.forgetAll()
	if r, ok := c.DNSProvider().(interface{ NewRun() }); ok {
		r.NewRun()
	}
}

// ownerFilter is the list filter of what the cluster owns by label.
func (c *Cloud) ownerFilter() string {
	return fmt.Sprintf("labels.%s = %q", gcelabels.ClusterLabelKey(c.Cluster), gcelabels.OwnedValue)
}

// owns reports whether labels mark what the cluster owns.
func (c *Cloud) owns(labels map[string]string) bool {
	return labels[gcelabels.ClusterLabelKey(c.Cluster)] == gcelabels.OwnedValue
}

// ownedDescription is the description of what the cluster owns among the kinds without labels (firewall rules,
// instance group managers): deletion takes those of exactly this description.
func (c *Cloud) ownedDescription() string { return "kubeup: owned by cluster " + c.Cluster }

// reads are the batched reads of one Cloud.
type reads struct {
	disks       sharedread.Keyed[map[string]*compute.Disk]                 // by zone: the cluster's disks by name
	templates   sharedread.Shared[map[string]*compute.InstanceTemplate]    // the cluster's templates by name
	groups      sharedread.Keyed[map[string]*compute.InstanceGroupManager] // by zone: the groups by name
	firewalls   sharedread.Shared[map[string]*compute.Firewall]            // the project's firewall rules by name
	networks    sharedread.Keyed[*compute.Network]                         // by name; nil: none
	subnetworks sharedread.Keyed[*compute.Subnetwork]                      // by region/name; nil: none
	accounts    sharedread.Keyed[string]                                   // by spec email or "default": the email; "": none
	instances   sharedread.Shared[[]*compute.Instance]                     // the cluster's running instances
	routes      sharedread.Shared[[]*compute.Route]                        // the project's routes
}

func (r *reads) forgetAll() {
	r.disks.Forget()
	r.templates.Forget()
	r.groups.Forget()
	r.firewalls.Forget()
	r.networks.Forget()
	r.subnetworks.Forget()
	r.accounts.Forget()
	r.instances.Forget()
	r.routes.Forget()
}

// disks returns the cluster's disks of zone by name: one filtered, paginated disks.list per zone and run.
func (c *Cloud) disks(ctx context.Context, zone string) (map[string]*compute.Disk, error) {
	return c.reads.disks.Of(zone).Get(ctx, func(ctx context.Context) (map[string]*compute.Disk, error) {
		out := map[string]*compute.Disk{}
		err := c.Compute.Disks.List(c.Project, zone).Filter(c.ownerFilter()).Pages(ctx, func(l *compute.DiskList) error {
			for _, d := range l.Items {
				if c.owns(d.Labels) {
					out[d.Name] = d
				}
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the cluster's disks in zone "+zone, err)
		}
		return out, nil
	})
}

// instanceTemplates returns the cluster's instance templates by name: one paginated instanceTemplates.list per
// run. Templates carry no labels of their own: the cluster's are those whose instances it labels.
func (c *Cloud) instanceTemplates(ctx context.Context) (map[string]*compute.InstanceTemplate, error) {
	return c.reads.templates.Get(ctx, func(ctx context.Context) (map[string]*compute.InstanceTemplate, error) {
		out := map[string]*compute.InstanceTemplate{}
		err := c.Compute.InstanceTemplates.List(c.Project).Pages(ctx, func(l *compute.InstanceTemplateList) error {
			for _, t := range l.Items {
				if t.Properties != nil && c.owns(t.Properties.Labels) {
					out[t.Name] = t
				}
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the instance templates", err)
		}
		return out, nil
	})
}

// groupManagers returns the managed instance groups of zone by name: one paginated instanceGroupManagers.list
// per zone and run.
func (c *Cloud) groupManagers(ctx context.Context, zone string) (map[string]*compute.InstanceGroupManager, error) {
	return c.reads.groups.Of(zone).Get(ctx, func(ctx context.Context) (map[string]*compute.InstanceGroupManager, error) {
		out := map[string]*compute.InstanceGroupManager{}
		err := c.Compute.InstanceGroupManagers.List(c.Project, zone).Pages(ctx, func(l *compute.InstanceGroupManagerList) error {
			for _, g := range l.Items {
				out[g.Name] = g
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the managed instance groups of zone "+zone, err)
		}
		return out, nil
	})
}

// firewalls returns the project's firewall rules by name: one paginated firewalls.list per run.
func (c *Cloud) firewalls(ctx context.Context) (map[string]*compute.Firewall, error) {
	return c.reads.firewalls.Get(ctx, func(ctx context.Context) (map[string]*compute.Firewall, error) {
		out := map[string]*compute.Firewall{}
		err := c.Compute.Firewalls.List(c.Project).Pages(ctx, func(l *compute.FirewallList) error {
			for _, f := range l.Items {
				out[f.Name] = f
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the firewall rules", err)
		}
		return out, nil
	})
}

// clusterInstances returns the cluster's running instances, of every zone: one filtered, paginated
// instances.aggregatedList per run.
func (c *Cloud) clusterInstances(ctx context.Context) ([]*compute.Instance, error) {
	return c.reads.instances.Get(ctx, func(ctx context.Context) ([]*compute.Instance, error) {
		var out []*compute.Instance
		err := c.Compute.Instances.AggregatedList(c.Project).Filter(c.ownerFilter()).Pages(ctx, func(l *compute.InstanceAggregatedList) error {
			for _, scope := range slices.Sorted(maps.Keys(l.Items)) {
				for _, in := range l.Items[scope].Instances {
					if c.owns(in.Labels) && in.Status == "RUNNING" {
						out = append(out, in)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the cluster's instances", err)
		}
		return out, nil
	})
}

// projectRoutes returns the project's routes: one paginated routes.list per run.
func (c *Cloud) projectRoutes(ctx context.Context) ([]*compute.Route, error) {
	return c.reads.routes.Get(ctx, func(ctx context.Context) ([]*compute.Route, error) {
		var out []*compute.Route
		err := c.Compute.Routes.List(c.Project).Pages(ctx, func(l *compute.RouteList) error {
			out = append(out, l.Items...)
			return nil
		})
		if err != nil {
			return nil, Classify("listing the routes", err)
		}
		return out, nil
	})
}

// noDNS is the DNS provider of a cluster without a DNS zone: every call that would need one fails.
type noDNS struct{}

var errNoDNS = fmt.Errorf("the cluster has no DNS zone (spec.dnsZone): its records cannot be managed")

func (noDNS) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	return nil, errNoDNS
}
func (noDNS) Upsert(ctx context.Context, rs dnstasks.RecordSet) error { return errNoDNS }
func (noDNS) Delete(ctx context.Context, name, rrtype string) error   { return errNoDNS }
func (noDNS) List(ctx context.Context) ([]dnstasks.RecordSet, error)  { return nil, nil }
