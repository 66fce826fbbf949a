package fakegce

import (
	"maps"
	"net/netip"
	"slices"

	compute "google.golang.org/api/compute/v1"
)

// Routes of a project's networks (compute.routes): insert, get, list and delete, each an operation as GCE's; a
// route cannot change (a change is a delete and an insert). A route's next hop is an instance of the route's
// network, an address, or the default internet gateway. Its warnings say, as GCE's do, that the next hop
// instance is gone (NEXT_HOP_INSTANCE_NOT_FOUND) or does not forward (NEXT_HOP_CANNOT_IP_FORWARD: its
// canIpForward is off, and GCE drops what it would forward). A network with routes cannot be deleted.

// instanceByLink is the instance a next hop names, nil when there is none.
func (c *call) instanceByLink(link string) *compute.Instance {
	r, err := c.parseRef(link, "instances", "zones", "")
	if err != nil || r.project != c.p.name {
		return nil
	}
	return c.p.instances[r.key()]
}

// withWarnings is a copy of route r with the warnings GCE gives it now.
func (c *call) withWarnings(r *compute.Route) *compute.Route {
	out := *r
	out.Warnings = nil
	if r.NextHopInstance != "" {
		in := c.instanceByLink(r.NextHopInstance)
		switch {
		case in == nil:
			out.Warnings = append(out.Warnings, &compute.RouteWarnings{Code: "NEXT_HOP_INSTANCE_NOT_FOUND",
				Message: "Next hop instance '" + trimBase(r.NextHopInstance) + "' does not exist."})
		case !in.CanIpForward:
			out.Warnings = append(out.Warnings, &compute.RouteWarnings{Code: "NEXT_HOP_CANNOT_IP_FORWARD",
				Message: "Next hop instance '" + trimBase(r.NextHopInstance) + "' cannot ip forward."})
		}
	}
	return &out
}

func insertRoute(c *call) (any, error) {
	var r compute.Route
	if err := c.decode(&r); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", r.Name); err != nil {
		return nil, err
	}
	if _, ok := c.p.routes[r.Name]; ok {
		return nil, alreadyExists(c.thing("routes", r.Name))
	}
	if r.Network == "" {
		return nil, invalid("Required field 'resource.network' not specified")
	}
	n, err := c.networkRef("resource.network", r.Network)
	if err != nil {
		return nil, err
	}
	p, err := netip.ParsePrefix(r.DestRange)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return nil, invalid("Invalid value for field 'resource.destRange': '%s'. Invalid IPv4 CIDR range.", r.DestRange)
	}
	hops := 0
	for _, h := range []string{r.NextHopInstance, r.NextHopIp, r.NextHopGateway, r.NextHopIlb, r.NextHopVpnTunnel, r.NextHopNetwork} {
		if h != "" {
			hops++
		}
	}
	if hops != 1 {
		return nil, invalid("Invalid value for field 'resource': exactly one of nextHopInstance, nextHopIp, nextHopGateway, nextHopIlb, nextHopVpnTunnel must be specified.")
	}
	switch {
	case r.NextHopInstance != "":
		ref, err := c.parseRef(r.NextHopInstance, "instances", "zones", "")
		if err != nil {
			return nil, err
		}
		in, ok := c.p.instances[ref.key()]
		if !ok || ref.project != c.p.name {
			return nil, notFound(ref.path())
		}
		on := false
		for _, ni := range in.NetworkInterfaces {
			on = on || ni.Network == n.SelfLink
		}
		if !on {
			return nil, invalid("Invalid value for field 'resource.nextHopInstance': '%s'. Next hop instance must be on the route's network %s.", r.NextHopInstance, n.Name)
		}
		r.NextHopInstance = in.SelfLink
	case r.NextHopIp != "":
		if _, err := netip.ParseAddr(r.NextHopIp); err != nil {
			return nil, invalid("Invalid value for field 'resource.nextHopIp': '%s'. Invalid IPv4 address.", r.NextHopIp)
		}
	case r.NextHopGateway != "":
		ref, err := c.parseRef(r.NextHopGateway, "gateways", "global", "")
		if err != nil || ref.name != "default-internet-gateway" {
			return nil, invalid("Invalid value for field 'resource.nextHopGateway': '%s'. fakegce knows the gateway default-internet-gateway only.", r.NextHopGateway)
		}
		r.NextHopGateway = ref.link()
	default:
		return nil, invalid("fakegce does not model routes to an internal load balancer, a VPN tunnel or a peered network")
	}
	if r.Priority == 0 {
		r.Priority = 1000
	}
	r.Kind, r.Id, r.CreationTimestamp, r.SelfLink = "compute#route", c.s.newID(), now(), c.p.link("global", "routes", r.Name)
	r.Network, r.RouteType, r.Warnings = n.SelfLink, "STATIC", nil
	c.p.routes[r.Name] = &r
	return c.newOp("insert", r.SelfLink, r.Id)
}

func getRoute(c *call) (any, error) {
	r, ok := c.p.routes[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("routes", c.names[0]))
	}
	return c.withWarnings(r), nil
}

func listRoutes(c *call) (any, error) {
	items := map[string]*compute.Route{}
	for name, r := range c.p.routes {
		items[name] = c.withWarnings(r)
	}
	out, next, err := page(c, items, nil)
	return &compute.RouteList{Kind: "compute#routeList", Items: out, NextPageToken: next, SelfLink: c.p.link("global", "routes")}, err
}

func deleteRoute(c *call) (any, error) {
	r, ok := c.p.routes[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("routes", c.names[0]))
	}
	delete(c.p.routes, r.Name)
	return c.newOp("delete", r.SelfLink, r.Id)
}

// routeUsing is a route of network link, for deleteNetwork's refusal; nil when none is.
func (p *project) routeUsing(link string) *compute.Route {
	names := slices.Sorted(maps.Keys(p.routes))
	for _, name := range names {
		if p.routes[name].Network == link {
			return p.routes[name]
		}
	}
	return nil
}
