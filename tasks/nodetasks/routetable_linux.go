package nodetasks

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetlinkRoutes is the routing table of a network namespace, through rtnetlink. Its socket is bound to that
// namespace when it is made: the engine's goroutines may run on any thread, in whatever namespace it is in.
type NetlinkRoutes struct{ h *netlink.Handle }

var _ RouteTable = (*NetlinkRoutes)(nil)

// NewNetlinkRoutes returns the routing table of the network namespace at nsPath (/run/netns/NAME,
// /proc/PID/ns/net), or of the process's own with "". Close it when done.
func NewNetlinkRoutes(nsPath string) (*NetlinkRoutes, error) {
	if nsPath == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("opening rtnetlink: %w", err)
		}
		return &NetlinkRoutes{h: h}, nil
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("opening the network namespace %s: %w", nsPath, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink in %s: %w", nsPath, err)
	}
	return &NetlinkRoutes{h: h}, nil
}

// Close closes the table's socket.
func (t *NetlinkRoutes) Close() { t.h.Close() }

// List returns the main table's IPv4 routes to networks.
func (t *NetlinkRoutes) List(ctx context.Context) ([]Route, error) {
	found, err := t.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, err
	}
	var routes []Route
	for _, r := range found {
		if r.Dst == nil {
			continue // the default route
		}
		gw := ""
		if r.Gw != nil {
			gw = r.Gw.String()
		}
		routes = append(routes, Route{Dst: r.Dst.String(), Gateway: gw, Protocol: int(r.Protocol)})
	}
	return routes, nil
}

// Replace routes dst via gateway (on whichever link reaches gateway), as kubeup's.
func (t *NetlinkRoutes) Replace(ctx context.Context, dst, gateway string) error {
	r, err := kubeupRoute(dst, gateway)
	if err != nil {
		return err
	}
	return t.h.RouteReplace(r)
}

// Delete removes kubeup's route to dst via gateway.
func (t *NetlinkRoutes) Delete(ctx context.Context, dst, gateway string) error {
	r, err := kubeupRoute(dst, gateway)
	if err != nil {
		return err
	}
	return t.h.RouteDel(r)
}

func kubeupRoute(dst, gateway string) (*netlink.Route, error) {
	_, n, err := net.ParseCIDR(dst)
	if err != nil {
		return nil, err
	}
	gw := net.ParseIP(gateway)
	if gw == nil {
		return nil, fmt.Errorf("gateway %q is not an address", gateway)
	}
	return &netlink.Route{Dst: n, Gw: gw, Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}, nil
}
