package awstasks

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// VPCRoutes is kubenet's routes in one route table of the VPC (docs/networking.md): each node's pod range to that
// node's instance, so that the VPC carries a packet to a pod on another instance, unmasqueraded and across
// subnets. A route is kubeup's when its destination lies inside the cluster's pod range (PodCIDR) and its target
// is one of the cluster's running instances, or it is a blackhole left by an instance that is gone; only those
// are ever replaced or deleted.
// Every other route (the local one, an internet gateway's, an operator's) is left alone, and one to a wanted range
// is refused (CheckChanges): kubeup does not take over a route it did not make. Its key is
// "VPCRoutes/<route table id>".
type VPCRoutes struct {
	// RouteTable is the table's id: "rtb-0123456789abcdef0".
	RouteTable string
	// VPC is the VPC whose tables the task reads (one DescribeRouteTables per VPC and run).
	VPC string `kubeup:"-"`
	// PodCIDR is the cluster's pod range (spec.networking.podCIDR): kubeup's routes lie inside it.
	PodCIDR string `kubeup:"-"`
	// Routes maps each pod range (a CIDR) to the id of the instance that holds it; "" in a found task: a
	// blackhole that names no instance.
	Routes map[string]string `kubeup:"nilempty"`
	// foreign is, in the found task, the routes to a wanted range that are not kubeup's.
	foreign []ec2types.Route
}

var (
	_ engine.Resource[*VPCRoutes, *Cloud] = (*VPCRoutes)(nil)
	_ engine.Renderer[*VPCRoutes, *Cloud] = (*VPCRoutes)(nil)
	_ engine.Classed                      = (*VPCRoutes)(nil)
	_ engine.Validator                    = (*VPCRoutes)(nil)
)

func (v *VPCRoutes) Key() engine.Key     { return engine.Key{Type: "VPCRoutes", Name: v.RouteTable} }
func (v *VPCRoutes) Deps() []engine.Task { return nil }
func (v *VPCRoutes) APIClass() string    { return "ec2" }

// Validate checks that the pod range and every wanted range are IPv4 networks in canonical form, each inside the
// pod range, and that every target is an instance id.
func (v *VPCRoutes) Validate() error {
	pod, err := netip.ParsePrefix(v.PodCIDR)
	if err != nil || !pod.Addr().Is4() || pod.Masked() != pod {
		return fmt.Errorf("podCIDR %q: not an IPv4 network in canonical form (100.96.0.0/11)", v.PodCIDR)
	}
	for _, dst := range slices.Sorted(maps.Keys(v.Routes)) {
		p, err := netip.ParsePrefix(dst)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			return fmt.Errorf("routes[%s]: not an IPv4 network in canonical form (100.96.1.0/24)", dst)
		}
		if !inside(pod, p) {
			return fmt.Errorf("routes[%s]: not inside the cluster's pod range %s: kubeup routes only its own ranges", dst, pod)
		}
		if len(v.Routes[dst]) < 3 || v.Routes[dst][:2] != "i-" {
			return fmt.Errorf("routes[%s]: target %q is not an instance id (i-...)", dst, v.Routes[dst])
		}
	}
	return nil
}

// inside reports whether p lies inside pod.
func inside(pod, p netip.Prefix) bool { return p.Bits() >= pod.Bits() && pod.Contains(p.Addr()) }

// kubeups reports whether route r of a table is one kubeup may change: inside pod, to one of the cluster's
// instances, or a blackhole whose only target is an instance or a network interface (an instance's, gone); its
// destination and target ("" for a blackhole that names no instance).
func kubeups(pod netip.Prefix, cluster map[string]bool, r ec2types.Route) (dst, instance string, ok bool) {
	p, err := netip.ParsePrefix(aws.ToString(r.DestinationCidrBlock))
	if err != nil || !inside(pod, p) {
		return "", "", false
	}
	other := aws.ToString(r.GatewayId) + aws.ToString(r.NatGatewayId) + aws.ToString(r.VpcPeeringConnectionId) +
		aws.ToString(r.TransitGatewayId) + aws.ToString(r.LocalGatewayId) + aws.ToString(r.CarrierGatewayId) +
		aws.ToString(r.EgressOnlyInternetGatewayId) + aws.ToString(r.CoreNetworkArn)
	switch {
	case other != "":
		return "", "", false
	case aws.ToString(r.InstanceId) != "" && (cluster[aws.ToString(r.InstanceId)] || r.State == ec2types.RouteStateBlackhole):
		return p.String(), aws.ToString(r.InstanceId), true
	case r.State == ec2types.RouteStateBlackhole && aws.ToString(r.NetworkInterfaceId) != "":
		return p.String(), "", true
	}
	return "", "", false
}

// Find reads the table (one DescribeRouteTables of its VPC per run) and the cluster's instances (the run's
// DescribeInstances): kubeup's routes, and the routes of others to the wanted ranges. A table that is not there is an error: kubeup never creates one (the VPC and its tables are
// the user's).
func (v *VPCRoutes) Find(ctx context.Context, c *Cloud) (*VPCRoutes, error) {
	tables, err := c.routeTables(ctx, v.VPC)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tables, func(t ec2types.RouteTable) bool { return aws.ToString(t.RouteTableId) == v.RouteTable })
	if i < 0 {
		return nil, engine.Terminal(fmt.Errorf("route table %s is not a table of VPC %s (any more): %w", v.RouteTable, v.VPC, engine.ErrNotFound))
	}
	pod, err := netip.ParsePrefix(v.PodCIDR)
	if err != nil {
		return nil, engine.Terminal(fmt.Errorf("podCIDR %q: %w", v.PodCIDR, err))
	}
	instances, err := c.clusterInstances(ctx)
	if err != nil {
		return nil, err
	}
	cluster := map[string]bool{}
	for _, in := range instances {
		cluster[aws.ToString(in.InstanceId)] = true
	}
	actual := &VPCRoutes{RouteTable: v.RouteTable, VPC: v.VPC, PodCIDR: v.PodCIDR}
	for _, r := range tables[i].Routes {
		dst, instance, ok := kubeups(pod, cluster, r)
		switch {
		case ok:
			if actual.Routes == nil {
				actual.Routes = map[string]string{}
			}
			actual.Routes[dst] = instance
		case v.Routes[aws.ToString(r.DestinationCidrBlock)] != "":
			actual.foreign = append(actual.foreign, r)
		}
	}
	return actual, nil
}

// CheckChanges refuses to route a range that a route not of kubeup's holds.
func (v *VPCRoutes) CheckChanges(actual, expected, changes *VPCRoutes) error {
	if actual == nil || len(actual.foreign) == 0 {
		return nil
	}
	r := actual.foreign[0]
	return fmt.Errorf("routes[%s]: route table %s already routes it (%s), and not as kubeup does (to one of the cluster's instances, inside the pod range %s): "+
		"kubeup does not take over a route it did not make; remove that route, or give the cluster a pod range (spec.networking.podCIDR) that does not overlap the VPC's routes",
		aws.ToString(r.DestinationCidrBlock), v.RouteTable, describeTarget(r), v.PodCIDR)
}

// describeTarget is a route's target, for an error: "target igw-..., state active".
func describeTarget(r ec2types.Route) string {
	target := "none"
	for _, t := range []*string{r.GatewayId, r.NatGatewayId, r.InstanceId, r.NetworkInterfaceId, r.VpcPeeringConnectionId, r.TransitGatewayId,
		r.LocalGatewayId, r.CarrierGatewayId, r.EgressOnlyInternetGatewayId, r.CoreNetworkArn} {
		if aws.ToString(t) != "" {
			target = aws.ToString(t)
			break
		}
	}
	return fmt.Sprintf("target %s, state %s", target, r.State)
}

// Render replaces each of kubeup's routes that differs, creates each wanted one the table lacks, then deletes
// kubeup's routes that are no longer wanted (a node gone, a blackhole). Several control-plane nodes run it at
// once: a route another made first (RouteAlreadyExists) or deleted first (InvalidRoute.NotFound) is left to the
// next round, which compares again.
func (v *VPCRoutes) Render(ctx context.Context, c *Cloud, actual, expected, changes *VPCRoutes) error {
	defer c.reads.tables.Forget()
	log := engine.Logger(ctx)
	var have map[string]string
	if actual != nil {
		have = actual.Routes
	}
	table := aws.String(expected.RouteTable)
	for _, dst := range slices.Sorted(maps.Keys(expected.Routes)) {
		instance, had := expected.Routes[dst], false
		if got, ok := have[dst]; ok {
			if got == instance {
				continue
			}
			had = true
		}
		var err error
		if had {
			_, err = c.EC2.ReplaceRoute(ctx, &ec2.ReplaceRouteInput{RouteTableId: table, DestinationCidrBlock: aws.String(dst), InstanceId: aws.String(instance)})
			if ErrorCode(err) == "InvalidRoute.NotFound" { // another deleted it since this round read the table
				had = false
			}
		}
		if !had {
			_, err = c.EC2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: table, DestinationCidrBlock: aws.String(dst), InstanceId: aws.String(instance)})
			if ErrorCode(err) == "RouteAlreadyExists" {
				log.Info("another node made the route first: the next round compares it", "routeTable", expected.RouteTable, "range", dst)
				continue
			}
		}
		if ErrorCode(err) == "RouteLimitExceeded" {
			return fmt.Errorf("%w; the table holds a route per node: raise the VPC quota \"Routes per route table\" (50 by default, up to 1000) "+
				"in Service Quotas, or keep the cluster's nodes under it", Classify(fmt.Sprintf("routing %s to instance %s in route table %s", dst, instance, expected.RouteTable), err))
		}
		if err != nil {
			return Classify(fmt.Sprintf("routing %s to instance %s in route table %s", dst, instance, expected.RouteTable), err)
		}
		log.Info("routed a node's pod range", "routeTable", expected.RouteTable, "range", dst, "instance", instance)
	}
	for _, dst := range slices.Sorted(maps.Keys(have)) {
		if _, ok := expected.Routes[dst]; ok {
			continue
		}
		_, err := c.EC2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: table, DestinationCidrBlock: aws.String(dst)})
		if err != nil && ErrorCode(err) != "InvalidRoute.NotFound" {
			return Classify(fmt.Sprintf("deleting the route to %s in route table %s", dst, expected.RouteTable), err)
		}
		log.Info("deleted the route to a pod range no node holds any more", "routeTable", expected.RouteTable, "range", dst, "instance", have[dst])
	}
	return nil
}
