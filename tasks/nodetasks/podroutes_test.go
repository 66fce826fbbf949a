package nodetasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// fakeRoutes is a routing table in memory: routes by destination.
type fakeRoutes struct{ routes map[string]Route }

func (f *fakeRoutes) RouteTable() RouteTable { return f }

func (f *fakeRoutes) List(ctx context.Context) ([]Route, error) {
	var out []Route
	for _, r := range f.routes {
		out = append(out, r)
	}
	return out, nil
}

func (f *fakeRoutes) Replace(ctx context.Context, dst, gw string) error {
	if r, ok := f.routes[dst]; ok && r.Protocol != RouteProtocol {
		return fmt.Errorf("replaced a route not of kubeup's: %v", r)
	}
	f.routes[dst] = Route{Dst: dst, Gateway: gw, Protocol: RouteProtocol}
	return nil
}

func (f *fakeRoutes) Delete(ctx context.Context, dst, gw string) error {
	if r := f.routes[dst]; r.Protocol != RouteProtocol || r.Gateway != gw {
		return fmt.Errorf("no route of kubeup's to %s via %s: %v", dst, gw, r)
	}
	delete(f.routes, dst)
	return nil
}

func runRoutes(t *testing.T, table *fakeRoutes, target engine.Target, routes map[string]string) (*engine.Result, error) {
	t.Helper()
	g := engine.NewGraph[*fakeRoutes]()
	engine.Add(g, &PodRoutes[*fakeRoutes]{Name: "pod-ranges", Routes: routes})
	return engine.Run(context.Background(), g, table, engine.Options{Target: target})
}

// TestPodRoutes: the routes to the other nodes' ranges are made, a moved range is replaced, a range no node holds
// is deleted, the routes of others (the node's own network, a route another program made) are never touched;
// a second run is no change.
func TestPodRoutes(t *testing.T) {
	table := &fakeRoutes{routes: map[string]Route{
		"10.0.0.0/24":   {Dst: "10.0.0.0/24", Protocol: 2}, // the node's own link
		"192.0.2.0/24":  {Dst: "192.0.2.0/24", Gateway: "10.0.0.1", Protocol: 4},
		"10.244.9.0/24": {Dst: "10.244.9.0/24", Gateway: "10.0.0.9", Protocol: RouteProtocol}, // a node gone
		"10.244.2.0/24": {Dst: "10.244.2.0/24", Gateway: "10.0.0.7", Protocol: RouteProtocol}, // its node moved
	}}
	want := map[string]string{"10.244.1.0/24": "10.0.0.2", "10.244.2.0/24": "10.0.0.3"}

	res, err := runRoutes(t, table, engine.DryRun, want)
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	if err := res.Plan.WriteText(&report); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10.244.1.0/24", "10.244.2.0/24", "10.244.9.0/24"} {
		if !strings.Contains(report.String(), s) {
			t.Errorf("the dry run does not name %s:\n%s", s, report.String())
		}
	}
	if table.routes["10.244.9.0/24"].Gateway != "10.0.0.9" || table.routes["10.244.1.0/24"].Dst != "" {
		t.Fatalf("the dry run changed the table: %v", table.routes)
	}

	if _, err := runRoutes(t, table, engine.Apply, want); err != nil {
		t.Fatal(err)
	}
	var got []string
	for dst, r := range table.routes {
		got = append(got, fmt.Sprintf("%s via %s proto %d", dst, r.Gateway, r.Protocol))
	}
	slices.Sort(got)
	wantRoutes := []string{
		"10.0.0.0/24 via  proto 2",
		"10.244.1.0/24 via 10.0.0.2 proto 111",
		"10.244.2.0/24 via 10.0.0.3 proto 111",
		"192.0.2.0/24 via 10.0.0.1 proto 4",
	}
	if !slices.Equal(got, wantRoutes) {
		t.Errorf("after the apply the table holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRoutes, "\n"))
	}
	if res, err := runRoutes(t, table, engine.DryRun, want); err != nil || len(res.Plan.Changes) != 0 {
		t.Errorf("a second run: %v, changes %v", err, res.Plan.Changes)
	}

	// No node holds a range any more (every Node deleted): kubeup's routes go, the others stay.
	if _, err := runRoutes(t, table, engine.Apply, nil); err != nil {
		t.Fatal(err)
	}
	if len(table.routes) != 2 || table.routes["192.0.2.0/24"].Protocol != 4 {
		t.Errorf("after every range went: %v", table.routes)
	}
}

// TestPodRoutesRefusesForeignRoute: a wanted range that the node already routes, not as kubeup does, is refused
// with the route named, and the table is left as it is.
func TestPodRoutesRefusesForeignRoute(t *testing.T) {
	table := &fakeRoutes{routes: map[string]Route{
		"10.244.1.0/24": {Dst: "10.244.1.0/24", Gateway: "10.0.0.50", Protocol: 4},
	}}
	_, err := runRoutes(t, table, engine.Apply, map[string]string{"10.244.1.0/24": "10.0.0.2"})
	if err == nil || !strings.Contains(err.Error(), "routes[10.244.1.0/24]: the node already routes it") || !strings.Contains(err.Error(), "spec.networking.podCIDR") {
		t.Fatalf("err = %v, want the foreign route refused", err)
	}
	if r := table.routes["10.244.1.0/24"]; r.Gateway != "10.0.0.50" || r.Protocol != 4 {
		t.Errorf("the foreign route changed: %v", r)
	}
}

// TestPodRoutesValidate: a range that is not a canonical IPv4 network, or a gateway that is not an IPv4 address,
// is refused before anything runs.
func TestPodRoutesValidate(t *testing.T) {
	for routes, want := range map[[2]string]string{
		{"10.244.1.1/24", "10.0.0.2"}: "routes[10.244.1.1/24]: not an IPv4 network",
		{"fd00::/64", "10.0.0.2"}:     "routes[fd00::/64]: not an IPv4 network",
		{"10.244.1.0/24", "node2"}:    `routes[10.244.1.0/24]: gateway "node2" is not an IPv4 address`,
	} {
		p := &PodRoutes[*fakeRoutes]{Name: "pod-ranges", Routes: map[string]string{routes[0]: routes[1]}}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err = %v, want %q", routes, err, want)
		}
	}
}
