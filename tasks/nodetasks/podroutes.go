package nodetasks

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// RouteProtocol marks the routes kubeup makes (the route's protocol, rtm_protocol): `ip route show proto 111`
// lists them. Only routes with it are ever replaced or deleted; a route someone else made is never touched.
const RouteProtocol = 111

// Route is one IPv4 route of the main table: Dst (a CIDR) via Gateway, made by Protocol.
type Route struct {
	Dst, Gateway string
	Protocol     int
}

// RouteTable is the routing table of a network namespace: the node's, as the process that runs the task sees it.
type RouteTable interface {
	// List returns the main table's IPv4 routes to networks (the default route is left out).
	List(ctx context.Context) ([]Route, error)
	// Replace makes the route to dst go via gateway, with RouteProtocol.
	Replace(ctx context.Context, dst, gateway string) error
	// Delete removes the route to dst via gateway with RouteProtocol.
	Delete(ctx context.Context, dst, gateway string) error
}

// RouteWorld is the world of PodRoutes: the node's routing table.
type RouteWorld interface {
	RouteTable() RouteTable
}

// PodRoutes is a node's routes to the other nodes' pod ranges (kubenet): each range via the address of the node
// it was given to, so that a pod reaches a pod of another node directly, unmasqueraded. Find reads the routes
// with RouteProtocol; Render replaces each that differs and deletes each of kubeup's no longer wanted (a node
// gone, or its range moved). A wanted range that a route not of kubeup's already covers exactly is refused:
// kubeup does not take over a route it did not make.
type PodRoutes[C RouteWorld] struct {
	// Name is the task's name (pod-ranges).
	Name string
	// Routes maps each pod range (CIDR) to the address of the node that holds it.
	Routes map[string]string `kubeup:"nilempty"`
	// foreign is, in the found task, the routes to the wanted ranges that are not kubeup's.
	foreign []Route
	// After lists tasks to run first.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*PodRoutes[RouteWorld], RouteWorld] = (*PodRoutes[RouteWorld])(nil)
	_ engine.Renderer[*PodRoutes[RouteWorld], RouteWorld] = (*PodRoutes[RouteWorld])(nil)
	_ engine.Validator                                    = (*PodRoutes[RouteWorld])(nil)
)

func (p *PodRoutes[C]) Key() engine.Key     { return engine.Key{Type: "PodRoutes", Name: p.Name} }
func (p *PodRoutes[C]) Deps() []engine.Task { return p.After }

// Validate checks that every range is an IPv4 network in canonical form and every gateway an IPv4 address.
func (p *PodRoutes[C]) Validate() error {
	for _, dst := range slices.Sorted(maps.Keys(p.Routes)) {
		prefix, err := netip.ParsePrefix(dst)
		if err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix {
			return fmt.Errorf("routes[%s]: not an IPv4 network in canonical form (10.244.1.0/24)", dst)
		}
		gw, err := netip.ParseAddr(p.Routes[dst])
		if err != nil || !gw.Is4() {
			return fmt.Errorf("routes[%s]: gateway %q is not an IPv4 address", dst, p.Routes[dst])
		}
	}
	return nil
}

// Find reads kubeup's routes, and notes the routes of others to the wanted ranges. It never returns nil: no
// route is an empty table, not a task to create.
func (p *PodRoutes[C]) Find(ctx context.Context, world C) (*PodRoutes[C], error) {
	routes, err := world.RouteTable().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the node's routes: %w", err)
	}
	actual := &PodRoutes[C]{Name: p.Name, After: p.After}
	for _, r := range routes {
		switch {
		case r.Protocol == RouteProtocol:
			if actual.Routes == nil {
				actual.Routes = map[string]string{}
			}
			actual.Routes[r.Dst] = r.Gateway
		case p.Routes[r.Dst] != "":
			actual.foreign = append(actual.foreign, r)
		}
	}
	return actual, nil
}

// CheckChanges refuses to route a range that a route not of kubeup's covers.
func (p *PodRoutes[C]) CheckChanges(actual, expected, changes *PodRoutes[C]) error {
	if actual == nil || len(actual.foreign) == 0 {
		return nil
	}
	r := actual.foreign[0]
	return fmt.Errorf("routes[%s]: the node already routes it (via %q, protocol %d), and not as kubeup does (protocol %d): "+
		"kubeup does not take over a route it did not make; remove that route, or give the cluster a pod range (spec.networking.podCIDR) that does not overlap the node's networks",
		r.Dst, r.Gateway, r.Protocol, RouteProtocol)
}

// Render replaces each wanted route that differs, then deletes kubeup's routes that are no longer wanted.
func (p *PodRoutes[C]) Render(ctx context.Context, world C, actual, expected, changes *PodRoutes[C]) error {
	table := world.RouteTable()
	log := engine.Logger(ctx)
	var have map[string]string
	if actual != nil {
		have = actual.Routes
	}
	for _, dst := range slices.Sorted(maps.Keys(expected.Routes)) {
		gw := expected.Routes[dst]
		if have[dst] == gw {
			continue
		}
		if err := table.Replace(ctx, dst, gw); err != nil {
			return fmt.Errorf("routing %s via %s: %w", dst, gw, err)
		}
		log.Info("routed a node's pod range", "range", dst, "via", gw)
	}
	for _, dst := range slices.Sorted(maps.Keys(have)) {
		if _, ok := expected.Routes[dst]; ok {
			continue
		}
		if err := table.Delete(ctx, dst, have[dst]); err != nil {
			return fmt.Errorf("deleting the route to %s via %s: %w", dst, have[dst], err)
		}
		log.Info("deleted the route to a pod range no node holds any more", "range", dst, "via", have[dst])
	}
	return nil
}
