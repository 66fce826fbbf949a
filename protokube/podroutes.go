package protokube

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// The pod network (kubenet, docs/networking.md): kube-controller-manager gives each Node a pod range
// (spec.podCIDR), the node's bridge carries its pods (containerd's CNI configuration, model.CNITemplateText), and
// every node routes each other node's range to that node's address. protokube keeps this node's routes in each
// round while its kube-apiserver is ready, from the Nodes it reads there. Under flannel, flanneld routes the
// ranges through its VXLAN device: protokube keeps no route (and deletes any of its own it finds).

// RouteTable is the routing table of the round's node.
func (r *Round) RouteTable() nodetasks.RouteTable { return r.routes }

var _ nodetasks.RouteWorld = (*Round)(nil)

// apiNode is what a round reads of a Node.
type apiNode struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		PodCIDR  string   `json:"podCIDR"`
		PodCIDRs []string `json:"podCIDRs"`
	} `json:"spec"`
	Status struct {
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

// podRanges reads the cluster's Nodes and returns the routes to the other nodes' pod ranges (routesTo).
func podRanges(ctx context.Context, kube *kubetasks.Client, myIP string, log *slog.Logger) (map[string]string, error) {
	var list struct {
		Items []apiNode `json:"items"`
	}
	if err := kube.Get(ctx, "/api/v1/nodes", &list); err != nil {
		return nil, err
	}
	return routesTo(list.Items, myIP, log), nil
}

// routesTo returns each other node's IPv4 pod ranges by the InternalIP of the node that holds them: every Node
// with a range and an internal address but this node's own (myIP). A range two Nodes claim goes to the first by
// name, and is logged.
func routesTo(nodes []apiNode, myIP string, log *slog.Logger) map[string]string {
	slices.SortFunc(nodes, func(a, b apiNode) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	routes := map[string]string{}
	holder := map[string]string{}
	for _, n := range nodes {
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				if addr, err := netip.ParseAddr(a.Address); err == nil && addr.Is4() {
					ip = a.Address
					break
				}
			}
		}
		if ip == "" || ip == myIP {
			continue
		}
		ranges := n.Spec.PodCIDRs
		if len(ranges) == 0 && n.Spec.PodCIDR != "" {
			ranges = []string{n.Spec.PodCIDR}
		}
		for _, r := range ranges {
			p, err := netip.ParsePrefix(r)
			if err != nil || !p.Addr().Is4() {
				continue // an IPv6 range: the cluster's pod network is IPv4
			}
			r = p.Masked().String()
			if other, ok := holder[r]; ok {
				log.Warn("two Nodes hold one pod range: routed to the first", "range", r, "routedTo", other, "alsoClaimedBy", n.Metadata.Name)
				continue
			}
			holder[r] = n.Metadata.Name
			routes[r] = ip
		}
	}
	return routes
}

// addPodRoutes adds this node's routes to the other nodes' pod ranges, when the cluster allocates them
// (spec.kubeControllerManager.allocateNodeCIDRs) and the round has a routing table (a node whose root is "/").
// Nodes that cannot be read leave the routes as they are. Under flannel (spec.networking.podNetwork) the node
// wants none of kubeup's routes: flanneld's carry the ranges, and the Nodes are not read.
func addPodRoutes(ctx context.Context, g *engine.Graph[*Round], r *Round, nc *model.NodeConfig, myIP string, log *slog.Logger) {
	kcm := nc.Cluster.Spec.KubeControllerManager
	if r.routes == nil || kcm == nil || kcm.AllocateNodeCIDRs == nil || !*kcm.AllocateNodeCIDRs {
		return
	}
	if n := nc.Cluster.Spec.Networking; n != nil && n.PodNetwork == model.PodNetworkFlannel {
		engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: map[string]string{}})
		return
	}
	routes, err := podRanges(ctx, r.kube, myIP, log)
	if err != nil {
		log.Warn("pod network: the routes to the other nodes' pod ranges are left as they are: the Nodes cannot be read", "err", err)
		return
	}
	engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: routes})
}
