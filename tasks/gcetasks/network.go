package gcetasks

import (
	"context"
	"fmt"
	"net/netip"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
)

// Network is the user's VPC network the cluster runs in (spec.gce.network). kubeup checks that it exists and
// never creates or changes it: the model adds it with the lifecycle engine.ExistsAndValidates. Its key is
// "Network/<Name>".
type Network struct {
	// Name is the network's name: "default", "kubeup".
	Name string
	// SelfLink is the network's URL (output).
	SelfLink *string `kubeup:"output"`
}

var (
	_ engine.Resource[*Network, *Cloud] = (*Network)(nil)
	_ engine.Renderer[*Network, *Cloud] = (*Network)(nil)
	_ engine.Classed                    = (*Network)(nil)
)

func (n *Network) Key() engine.Key     { return engine.Key{Type: "Network", Name: n.Name} }
func (n *Network) Deps() []engine.Task { return nil }
func (n *Network) APIClass() string    { return "compute" }

// Find reads the network (one networks.get per network and run); nil when there is none.
func (n *Network) Find(ctx context.Context, c *Cloud) (*Network, error) {
	found, err := c.reads.networks.Of(n.Name).Get(ctx, func(ctx context.Context) (*compute.Network, error) {
		nw, err := c.Compute.Networks.Get(c.Project, n.Name).Context(ctx).Do()
		if IsNotFound(err) {
			return nil, nil
		}
		return nw, Classify("reading network "+n.Name, err)
	})
	if err != nil || found == nil {
		return nil, err
	}
	return &Network{Name: found.Name, SelfLink: &found.SelfLink}, nil
}

// CheckChanges has nothing to refuse: a network has no field kubeup could change.
func (n *Network) CheckChanges(actual, expected, changes *Network) error { return nil }

// Render never changes the world: the network is the user's. It is only reached when the task is not added with
// the lifecycle ExistsAndValidates, and the network does not exist.
func (n *Network) Render(ctx context.Context, c *Cloud, actual, expected, changes *Network) error {
	return engine.Terminal(fmt.Errorf("network %s does not exist in project %s: kubeup never creates a network; create it "+
		"(with a subnetwork per region) and name it in spec.gce.network", expected.Name, c.Project))
}

// Subnetwork is the user's subnetwork of a region (spec.gce.subnetworks). kubeup checks that it exists in the
// network and never creates or changes it (engine.ExistsAndValidates). Its key is "Subnetwork/<Region>/<Name>".
type Subnetwork struct {
	// Name is the subnetwork's name and Region its region ("us-central1").
	Name   string
	Region string
	// Network is the network it must belong to.
	Network *Network
	// PodCIDR is the cluster's pod range, which kubenet's routes (NetworkRoutes) route through the network; ""
	// when none is. A pod range that overlaps the subnetwork's ranges is refused: GCE routes them to the
	// subnetwork, and no route to an instance can take them.
	PodCIDR string `kubeup:"-"`
	// CIDR is its primary IPv4 range and SelfLink its URL (outputs).
	CIDR     *string `kubeup:"output"`
	SelfLink *string `kubeup:"output"`
}

var (
	_ engine.Resource[*Subnetwork, *Cloud] = (*Subnetwork)(nil)
	_ engine.Renderer[*Subnetwork, *Cloud] = (*Subnetwork)(nil)
	_ engine.Classed                       = (*Subnetwork)(nil)
)

func (s *Subnetwork) Key() engine.Key {
	return engine.Key{Type: "Subnetwork", Name: s.Region + "/" + s.Name}
}
func (s *Subnetwork) Deps() []engine.Task {
	if s.Network == nil {
		return nil
	}
	return []engine.Task{s.Network}
}
func (s *Subnetwork) APIClass() string { return "compute" }

// Find reads the subnetwork (one subnetworks.get per subnetwork and run); nil when there is none. Its network is
// reported as the task's when the URLs name the same network, so that CheckChanges sees a subnetwork of another
// network.
func (s *Subnetwork) Find(ctx context.Context, c *Cloud) (*Subnetwork, error) {
	found, err := c.reads.subnetworks.Of(s.Region+"/"+s.Name).Get(ctx, func(ctx context.Context) (*compute.Subnetwork, error) {
		sn, err := c.Compute.Subnetworks.Get(c.Project, s.Region, s.Name).Context(ctx).Do()
		if IsNotFound(err) {
			return nil, nil
		}
		return sn, Classify(fmt.Sprintf("reading subnetwork %s of region %s", s.Name, s.Region), err)
	})
	if err != nil || found == nil {
		return nil, err
	}
	if err := s.checkPodCIDR(found); err != nil {
		return nil, err
	}
	a := &Subnetwork{Name: found.Name, Region: s.Region, CIDR: &found.IpCidrRange, SelfLink: &found.SelfLink, PodCIDR: s.PodCIDR}
	a.Network = &Network{Name: lastSegment(found.Network)}
	if s.Network != nil && a.Network.Name == s.Network.Name {
		a.Network = s.Network
	}
	return a, nil
}

// checkPodCIDR refuses a pod range that overlaps one of the subnetwork's ranges.
func (s *Subnetwork) checkPodCIDR(found *compute.Subnetwork) error {
	pod, err := netip.ParsePrefix(s.PodCIDR)
	if err != nil {
		return nil // none, or not a range: the spec's validation says so
	}
	ranges := []string{found.IpCidrRange}
	for _, r := range found.SecondaryIpRanges {
		ranges = append(ranges, r.IpCidrRange)
	}
	for _, r := range ranges {
		if p, err := netip.ParsePrefix(r); err == nil && p.Overlaps(pod) {
			return engine.Terminal(fmt.Errorf("spec.networking.podCIDR: %s overlaps %s of subnetwork %s of region %s (spec.gce.subnetworks): GCE routes those "+
				"addresses to the subnetwork, and kubenet's routes to the nodes' instances cannot; give the cluster a pod range outside the network's (the default, 100.96.0.0/11)",
				pod, p, s.Name, s.Region))
		}
	}
	return nil
}

// CheckChanges refuses a subnetwork of another network than the task's.
func (s *Subnetwork) CheckChanges(actual, expected, changes *Subnetwork) error {
	if actual != nil && expected.Network != nil && actual.Network != nil && actual.Network.Name != expected.Network.Name {
		return engine.Terminal(fmt.Errorf("subnetwork %s of region %s belongs to network %s, not %s: name a subnetwork of network %s "+
			"in spec.gce.subnetworks", expected.Name, expected.Region, actual.Network.Name, expected.Network.Name, expected.Network.Name))
	}
	return nil
}

// Render never changes the world: the subnetwork is the user's.
func (s *Subnetwork) Render(ctx context.Context, c *Cloud, actual, expected, changes *Subnetwork) error {
	return engine.Terminal(fmt.Errorf("subnetwork %s does not exist in region %s of project %s: kubeup never creates one; create it "+
		"and name it in spec.gce.subnetworks", expected.Name, expected.Region, c.Project))
}
