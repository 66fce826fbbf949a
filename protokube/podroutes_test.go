package protokube

import (
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"testing"
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
