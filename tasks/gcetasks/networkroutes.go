package gcetasks

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/gcelabels"
)

// NetworkRoutes is kubenet's routes of the cluster's network (docs/networking.md): each node's pod range to that
// node's instance, so that the network carries a packet to a pod on another instance, unmasqueraded. A route is
// kubeup's when its description is the cluster's (ownedDescription: "kubeup: owned by cluster <cluster>"); only
// those are ever deleted, and a route cannot change: a route whose next hop differs is deleted and inserted
// again. Another's route of the network to a wanted range is refused (CheckChanges): kubeup does not take over a
// route it did not make. A route is named after its range and the cluster (RouteName). Its key is
// "NetworkRoutes/<network>".
type NetworkRoutes struct {
	// Network is the network's name.
	Network string
	// PodCIDR is the cluster's pod range (spec.networking.podCIDR): every wanted range lies inside it.
	PodCIDR string `kubeup:"-"`
	// Routes maps each pod range (a CIDR) to its next hop instance, "zones/<zone>/instances/<name>"; "" in a
	// found task: a route of kubeup's to something else.
	Routes map[string]string `kubeup:"nilempty"`
	// names are, in the found task, kubeup's routes' names by range; foreign, another's routes to wanted ranges.
	names   map[string]string
	foreign []*compute.Route
}

var (
	_ engine.Resource[*NetworkRoutes, *Cloud] = (*NetworkRoutes)(nil)
	_ engine.Renderer[*NetworkRoutes, *Cloud] = (*NetworkRoutes)(nil)
	_ engine.Classed                          = (*NetworkRoutes)(nil)
	_ engine.Validator                        = (*NetworkRoutes)(nil)
)

func (n *NetworkRoutes) Key() engine.Key     { return engine.Key{Type: "NetworkRoutes", Name: n.Network} }
func (n *NetworkRoutes) Deps() []engine.Task { return nil }
func (n *NetworkRoutes) APIClass() string    { return "compute" }

// RouteName is the name of the cluster's route to a pod range: "pod-100-96-1-0-24-gce-example-com" (ResourceName).
func RouteName(cluster, dst string) string {
	return gcelabels.ResourceName("pod-"+strings.NewReplacer(".", "-", "/", "-").Replace(dst)+"-"+cluster, 63)
}

// instancePath is a next hop instance as a task states it: "zones/<zone>/instances/<name>"; "" when link names
// no instance.
func instancePath(link string) string {
	i := strings.Index(link, "zones/")
	if i < 0 || !strings.Contains(link[i:], "/instances/") {
		return ""
	}
	return link[i:]
}

// Validate checks that the pod range and every wanted range are IPv4 networks in canonical form, each inside the
// pod range, and that every next hop is an instance.
func (n *NetworkRoutes) Validate() error {
	pod, err := netip.ParsePrefix(n.PodCIDR)
	if err != nil || !pod.Addr().Is4() || pod.Masked() != pod {
		return fmt.Errorf("podCIDR %q: not an IPv4 network in canonical form (100.96.0.0/11)", n.PodCIDR)
	}
	for _, dst := range slices.Sorted(maps.Keys(n.Routes)) {
		p, err := netip.ParsePrefix(dst)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			return fmt.Errorf("routes[%s]: not an IPv4 network in canonical form (100.96.1.0/24)", dst)
		}
		if p.Bits() < pod.Bits() || !pod.Contains(p.Addr()) {
			return fmt.Errorf("routes[%s]: not inside the cluster's pod range %s: kubeup routes only its own ranges", dst, pod)
		}
		if instancePath(n.Routes[dst]) != n.Routes[dst] || n.Routes[dst] == "" {
			return fmt.Errorf("routes[%s]: next hop %q is not an instance (zones/<zone>/instances/<name>)", dst, n.Routes[dst])
		}
	}
	return nil
}

// Find reads the network's routes (one routes.list of the project per run): kubeup's, and another's to a wanted
// range. It never returns nil: no route is an empty set, not a task to create.
func (n *NetworkRoutes) Find(ctx context.Context, c *Cloud) (*NetworkRoutes, error) {
	all, err := c.projectRoutes(ctx)
	if err != nil {
		return nil, err
	}
	actual := &NetworkRoutes{Network: n.Network, PodCIDR: n.PodCIDR}
	for _, r := range all {
		if lastSegment(r.Network) != n.Network {
			continue
		}
		switch {
		case r.Description == c.ownedDescription():
			if actual.Routes == nil {
				actual.Routes, actual.names = map[string]string{}, map[string]string{}
			}
			actual.Routes[r.DestRange] = instancePath(r.NextHopInstance)
			actual.names[r.DestRange] = r.Name
		case n.Routes[r.DestRange] != "":
			actual.foreign = append(actual.foreign, r)
		}
	}
	return actual, nil
}

// CheckChanges refuses to route a range that another's route of the network holds.
func (n *NetworkRoutes) CheckChanges(actual, expected, changes *NetworkRoutes) error {
	if actual == nil || len(actual.foreign) == 0 {
		return nil
	}
	r := actual.foreign[0]
	return fmt.Errorf("routes[%s]: network %s already routes it (route %s, description %q), and not as kubeup does (a route with the cluster's description): "+
		"kubeup does not take over a route it did not make; delete that route, or give the cluster a pod range (spec.networking.podCIDR) that does not overlap the network's routes",
		r.DestRange, n.Network, r.Name, r.Description)
}

// Render deletes kubeup's routes that are no longer wanted or whose next hop differs, then inserts each wanted
// route the network lacks. Several control-plane nodes run it at once: a route another inserted first (409) or
// deleted first (404) is left to the next round, which compares again.
func (n *NetworkRoutes) Render(ctx context.Context, c *Cloud, actual, expected, changes *NetworkRoutes) error {
	defer c.reads.routes.Forget()
	log := engine.Logger(ctx)
	var have, names map[string]string
	if actual != nil {
		have, names = actual.Routes, actual.names
	}
	for _, dst := range slices.Sorted(maps.Keys(have)) {
		if want, ok := expected.Routes[dst]; ok && want == have[dst] {
			continue
		}
		op, err := c.Compute.Routes.Delete(c.Project, names[dst]).Context(ctx).Do()
		if err := c.mutate(ctx, "deleting route "+names[dst], op, err); err != nil && !IsNotFound(err) {
			return err
		}
		log.Info("deleted the route of a pod range", "route", names[dst], "range", dst, "nextHop", have[dst])
	}
	for _, dst := range slices.Sorted(maps.Keys(expected.Routes)) {
		hop := expected.Routes[dst]
		if have[dst] == hop {
			continue
		}
		r := &compute.Route{Name: RouteName(c.Cluster, dst), Network: fmt.Sprintf("projects/%s/global/networks/%s", c.Project, expected.Network),
			DestRange: dst, NextHopInstance: fmt.Sprintf("projects/%s/%s", c.Project, hop), Priority: 1000, Description: c.ownedDescription()}
		op, err := c.Compute.Routes.Insert(c.Project, r).Context(ctx).Do()
		err = c.mutate(ctx, fmt.Sprintf("routing %s to %s (route %s)", dst, hop, r.Name), op, err)
		if isConflict(err) {
			log.Info("another node made the route first: the next round compares it", "route", r.Name, "range", dst)
			continue
		}
		if err != nil {
			return err
		}
		log.Info("routed a node's pod range", "route", r.Name, "range", dst, "nextHop", hop)
	}
	return nil
}
