package protokube

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// The pod network (kubenet, docs/networking.md): kube-controller-manager gives each Node a pod range
// (spec.podCIDR), the node's bridge carries its pods (containerd's CNI configuration, model.CNITemplateText), and
// every node's range is routed to that node: on the local provider by every node's own table (each other node's
// range via that node's address), on AWS and GCE by the cloud (each range to the node's instance). protokube keeps
// those routes in each round while its kube-apiserver is ready, from the Nodes it reads there.
// Under flannel, flanneld routes the ranges through its VXLAN device: protokube keeps no route (and deletes any
// of its own it finds).

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

// readNodes reads the cluster's Nodes.
func readNodes(ctx context.Context, kube *kubetasks.Client) ([]apiNode, error) {
	var list struct {
		Items []apiNode `json:"items"`
	}
	if err := kube.Get(ctx, "/api/v1/nodes", &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// self is this node as the pod routes skip it: its InternalIP, and its Node's name when known (a worker's, from
// its kubelet's certificate).
type self struct{ IP, Name string }

// routesTo returns each other node's IPv4 pod ranges by the InternalIP of the node that holds them: every Node
// with a range and an internal address but this node's own (me: its address, or its name). A range two Nodes claim goes to the first by
// name, and is logged.
func routesTo(nodes []apiNode, me self, log *slog.Logger) map[string]string {
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
		if ip == "" || ip == me.IP || (me.Name != "" && n.Metadata.Name == me.Name) {
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

// addPodRoutes adds the routes to the Nodes' pod ranges, when the cluster allocates them
// (spec.kubeControllerManager.allocateNodeCIDRs) and its pod network is kubenet: on a cloud that routes them
// (router: AWS's route tables, GCE's routes), the cloud's tasks, each range to its Node's instance; elsewhere, when
// the round has a routing table (a node whose root is "/"), this node's routes to the other Nodes' ranges via their
// addresses. Nodes that cannot be read, or a cloud that cannot say what it routes, leave the routes as they are.
// Under another pod network (flannel) this node's table keeps none of kubeup's routes, and the Nodes are not read.
func addPodRoutes(ctx context.Context, g *engine.Graph[*Round], r *Round, nc *model.NodeConfig, me self, router nodecloud.Router, log *slog.Logger) {
	spec := nc.Cluster.Spec
	kcm := spec.KubeControllerManager
	if kcm == nil || kcm.AllocateNodeCIDRs == nil || !*kcm.AllocateNodeCIDRs {
		return
	}
	if n := spec.Networking; n != nil && n.PodNetwork != "" && n.PodNetwork != model.PodNetworkKubenet {
		if r.routes != nil { // flannel: flanneld's routes carry the ranges; none of kubeup's is wanted
			engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: map[string]string{}})
		}
		return
	}
	if router == nil && r.routes == nil {
		return
	}
	nodes, err := readNodes(ctx, r.kube)
	if err != nil {
		log.Warn("pod network: the routes to the Nodes' pod ranges are left as they are: the Nodes cannot be read", "err", err)
		return
	}
	if router == nil {
		engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: routesTo(nodes, me, log)})
		return
	}
	podCIDR := kcm.ClusterCIDR
	if podCIDR == "" && spec.Networking != nil {
		podCIDR = spec.Networking.PodCIDR
	}
	got, err := router.PodRoutes(ctx, nodecloud.PodRoutesSpec{Cluster: nc.Cluster.Metadata.Name, PodCIDR: podCIDR, Routes: routesTo(nodes, self{}, log)})
	if err != nil {
		log.Warn("pod network: the cloud's routes to the Nodes' pod ranges are left as they are: they cannot be read", "err", err)
		return
	}
	for _, ip := range got.Unmatched {
		log.Warn("pod network: a Node's address is no running instance of the cluster: its pod range is routed nowhere", "address", ip)
	}
	for _, p := range got.Problems {
		log.Warn("pod network: " + p)
	}
	for _, b := range got.Tasks {
		t := engine.AddBound(g, b)
		if r.cloudTasks == nil {
			r.cloudTasks = map[engine.Key]bool{}
		}
		r.cloudTasks[t.Key()] = true
	}
}
