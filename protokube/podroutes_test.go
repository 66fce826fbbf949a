package protokube

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestRoutesTo: of the Nodes the API lists, each other node's IPv4 ranges route to its InternalIP; this node's
// own, a Node without a range yet or without an internal address, and IPv6 ranges have no route; a range two
// Nodes claim goes to the first by name, logged.
func TestRoutesTo(t *testing.T) {
	var list struct {
		Items []apiNode `json:"items"`
	}
	if err := json.Unmarshal([]byte(`{"items": [
		{"metadata": {"name": "node3"}, "spec": {"podCIDR": "10.244.2.0/24", "podCIDRs": ["10.244.2.0/24", "fd00:2::/64"]},
		 "status": {"addresses": [{"type": "Hostname", "address": "node3"}, {"type": "InternalIP", "address": "10.0.0.3"}]}},
		{"metadata": {"name": "node1"}, "spec": {"podCIDR": "10.244.0.0/24"},
		 "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}},
		{"metadata": {"name": "node2"}, "spec": {"podCIDR": "10.244.1.0/24"},
		 "status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.2"}, {"type": "InternalIP", "address": "10.0.0.2"}]}},
		{"metadata": {"name": "new"}, "spec": {},
		 "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.4"}]}},
		{"metadata": {"name": "noaddress"}, "spec": {"podCIDR": "10.244.5.0/24"}, "status": {}},
		{"metadata": {"name": "copy"}, "spec": {"podCIDR": "10.244.1.0/24"},
		 "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]}}
	]}`), &list); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	got := routesTo(list.Items, self{IP: "10.0.0.1"}, slog.New(slog.NewTextHandler(&logs, nil)))
	want := map[string]string{"10.244.1.0/24": "10.0.0.9", "10.244.2.0/24": "10.0.0.3"}
	if !maps.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "two Nodes hold one pod range") || !strings.Contains(logs.String(), "alsoClaimedBy=node2") {
		t.Errorf("the range two Nodes claim is not logged:\n%s", logs.String())
	}
}

// TestPodRoutesUnderFlannel: under the flannel pod network a round reads no Node (its API client is nil here:
// reading one would fail) and keeps no route of kubeup's: one left (by kubenet) is deleted, flanneld's and the
// node's own are left alone.
func TestPodRoutesUnderFlannel(t *testing.T) {
	nc := roundNodeConfig(t)
	nc.Cluster.Spec.Networking.PodNetwork = model.PodNetworkFlannel
	table := &memRoutes{routes: map[string]nodetasks.Route{
		"100.96.1.0/24": {Dst: "100.96.1.0/24", Gateway: "10.0.0.2", Protocol: nodetasks.RouteProtocol},
		"100.96.2.0/24": {Dst: "100.96.2.0/24", Gateway: "100.96.2.0", Protocol: 3}, // flanneld's, via flannel.1
		"10.0.0.0/24":   {Dst: "10.0.0.0/24", Protocol: 2},
	}}
	r := &Round{routes: table}
	g := engine.NewGraph[*Round]()
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("under flannel, the round read the Nodes: %v", p)
			}
		}()
		addPodRoutes(context.Background(), g, r, nc, self{IP: "10.0.0.1"}, nil, slog.New(slog.DiscardHandler))
	}()
	if _, err := engine.Run(context.Background(), g, r, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Lookup(engine.Key{Type: "PodRoutes", Name: "pod-ranges"}); !ok {
		t.Fatalf("no PodRoutes task: kubeup's routes left by kubenet would stay")
	}
	want := []string{"10.0.0.0/24", "100.96.2.0/24"}
	if got := slices.Sorted(maps.Keys(table.routes)); !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v (kubeup's deleted, the others kept)", got, want)
	}
}
