package gcetasks

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/gcelabels"
)

const testPodCIDR = "100.96.0.0/11"

// routesFixture is the test cloud with a group of the cluster's instances (canIpForward as forward) and one
// instance of another's, each by address and path.
type routesFixture struct {
	c       *Cloud
	srv     *fakegce.Server
	ips     []string
	paths   []string
	another string // the other's instance's address
}

func newRoutesFixture(t *testing.T, forward bool) *routesFixture {
	t.Helper()
	ctx := context.Background()
	c, srv := newTestCloud(t)
	f := &routesFixture{c: c, srv: srv}
	group := func(name string, size int64, labels map[string]string, description string) {
		t.Helper()
		tmpl := &compute.InstanceTemplate{Name: name, Properties: &compute.InstanceProperties{MachineType: "e2-medium", CanIpForward: forward, Labels: labels,
			Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, InitializeParams: &compute.AttachedDiskInitializeParams{
				SourceImage: "projects/debian-cloud/global/images/family/debian-12"}}},
			NetworkInterfaces: []*compute.NetworkInterface{{Subnetwork: "regions/" + testRegion + "/subnetworks/sub"}}}}
		op, err := c.Compute.InstanceTemplates.Insert(testProject, tmpl).Do()
		if err == nil {
			err = c.waitOperation(ctx, "template", op)
		}
		if err == nil {
			op, err = c.Compute.InstanceGroupManagers.Insert(testProject, zones[0], &compute.InstanceGroupManager{Name: name, BaseInstanceName: name,
				InstanceTemplate: "global/instanceTemplates/" + name, TargetSize: size, Description: description}).Do()
		}
		if err == nil {
			err = c.waitOperation(ctx, "group", op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	group("nodes", 3, map[string]string{gcelabels.ClusterLabelKey(testCluster): gcelabels.OwnedValue}, c.ownedDescription())
	group("other", 1, nil, "")
	l, err := c.Compute.Instances.List(testProject, zones[0]).Do()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range l.Items {
		if strings.HasPrefix(in.Name, "other-") {
			f.another = in.NetworkInterfaces[0].NetworkIP
			continue
		}
		f.ips = append(f.ips, in.NetworkInterfaces[0].NetworkIP)
		f.paths = append(f.paths, "zones/"+zones[0]+"/instances/"+in.Name)
	}
	if len(f.ips) != 3 || f.another == "" {
		t.Fatalf("instances: %+v", l.Items)
	}
	return f
}

func (f *routesFixture) graph(t *testing.T, routes map[string]string, plan **PodRoutes) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		p, err := f.c.PlanPodRoutes(context.Background(), testPodCIDR, routes)
		if err != nil {
			t.Fatal(err)
		}
		if plan != nil {
			*plan = p
		}
		g := engine.NewGraph[*Cloud]()
		if p.Routes != nil {
			engine.Add(g, p.Routes)
		}
		return g
	}
}

// routes are the network's routes as "name range next-hop description".
func (f *routesFixture) routes(t *testing.T) []string {
	t.Helper()
	l, err := f.c.Compute.Routes.List(testProject).Do()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range l.Items {
		out = append(out, r.Name+" "+r.DestRange+" "+instancePath(r.NextHopInstance)+r.NextHopGateway+" "+r.Description)
	}
	slices.Sort(out)
	return out
}

// TestGCEPodRoutes: kubenet's routes go to the cluster's network, one per range to the instance of its node's
// address, named after the range and the cluster and described as the cluster's; the dry run shows them by field;
// a second round changes nothing and reads the instances and the routes once each; a node gone loses its route;
// a range moved to another instance is routed again; an address of no instance of the cluster's is routed nowhere.
func TestGCEPodRoutes(t *testing.T) {
	f := newRoutesFixture(t, true)
	c := f.c
	owned := c.ownedDescription()
	routes := map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1], "100.96.3.0/24": f.ips[2], "100.96.4.0/24": f.another}
	var plan *PodRoutes
	dry := mustRun(t, c, engine.DryRun, f.graph(t, routes, &plan))
	if !slices.Equal(plan.Unmatched, []string{f.another}) || len(plan.NotForwarding) != 0 {
		t.Errorf("unmatched %v, not forwarding %v; want the other's instance, none", plan.Unmatched, plan.NotForwarding)
	}
	if len(dry.Changes) != 1 || dry.Changes[0].Key.String() != "NetworkRoutes/net" || dry.Changes[0].Fields[0].Name != "Routes" {
		t.Fatalf("dry run: %+v", dry.Changes)
	}
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	want := []string{
		"pod-100-96-1-0-24-gce-example-com 100.96.1.0/24 " + f.paths[0] + " " + owned,
		"pod-100-96-2-0-24-gce-example-com 100.96.2.0/24 " + f.paths[1] + " " + owned,
		"pod-100-96-3-0-24-gce-example-com 100.96.3.0/24 " + f.paths[2] + " " + owned,
	}
	if diff := cmp.Diff(want, f.routes(t)); diff != "" {
		t.Fatalf("routes (-want +got):\n%s", diff)
	}
	f.srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("the second round changed %v", p.Changes)
	}
	if diff := cmp.Diff(map[string]int{"compute.instances.aggregatedList": 1, "compute.routes.list": 1}, f.srv.Calls()); diff != "" {
		t.Errorf("calls of a round with nothing to change (-want +got):\n%s", diff)
	}

	delete(routes, "100.96.3.0/24")
	routes["100.96.2.0/24"] = f.ips[2]
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	want = []string{want[0], "pod-100-96-2-0-24-gce-example-com 100.96.2.0/24 " + f.paths[2] + " " + owned}
	if diff := cmp.Diff(want, f.routes(t)); diff != "" {
		t.Errorf("routes after a node went and a range moved (-want +got):\n%s", diff)
	}
	if p := mustRun(t, c, engine.DryRun, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("a round after: %v", p.Changes)
	}
}

// TestGCEPodRoutesLeaveOthersRoutes: another's route to a wanted range is refused, naming it, and nothing
// changes; another's route inside the pod range to a range not wanted, and routes of the cluster's description
// of another network, are never touched.
func TestGCEPodRoutesLeaveOthersRoutes(t *testing.T) {
	f := newRoutesFixture(t, true)
	ctx := context.Background()
	c := f.c
	insert := func(r *compute.Route) {
		t.Helper()
		op, err := c.Compute.Routes.Insert(testProject, r).Do()
		if err == nil {
			err = c.waitOperation(ctx, "route", op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, dst := range []string{"100.96.1.0/24", "100.96.9.0/24"} {
		insert(&compute.Route{Name: "mine-" + strings.NewReplacer(".", "-", "/", "-").Replace(dst), Network: "global/networks/net", DestRange: dst,
			NextHopGateway: "global/gateways/default-internet-gateway", Description: "an operator's"})
	}
	before := f.routes(t)
	routes := map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1]}
	_, err := runOnce(c, engine.Apply, f.graph(t, routes, nil))
	if err == nil || !strings.Contains(err.Error(), "routes[100.96.1.0/24]: network net already routes it (route mine-100-96-1-0-24") {
		t.Fatalf("another's route to a wanted range: %v", err)
	}
	if diff := cmp.Diff(before, f.routes(t)); diff != "" {
		t.Errorf("the refused round changed the routes (-before +after):\n%s", diff)
	}
	delete(routes, "100.96.1.0/24")
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	want := append(slices.Clone(before), "pod-100-96-2-0-24-gce-example-com 100.96.2.0/24 "+f.paths[1]+" "+c.ownedDescription())
	slices.Sort(want)
	if diff := cmp.Diff(want, f.routes(t)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// TestGCEPodRoutesLostRace: another control-plane node inserted the route first (409) or deleted the one this
// round replaces (404): the round does not fail, and the next converges.
func TestGCEPodRoutesLostRace(t *testing.T) {
	f := newRoutesFixture(t, true)
	ctx := context.Background()
	c := f.c
	routes := map[string]string{"100.96.1.0/24": f.ips[0]}
	c.NewRun()
	plan, err := c.PlanPodRoutes(ctx, testPodCIDR, routes)
	if err != nil {
		t.Fatal(err)
	}
	actual, err := plan.Routes.Find(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil)) // the other node
	if err := plan.Routes.Render(ctx, c, actual, plan.Routes, nil); err != nil {
		t.Fatalf("a lost race to insert: %v", err)
	}
	routes["100.96.1.0/24"] = f.ips[1]
	c.NewRun()
	if plan, err = c.PlanPodRoutes(ctx, testPodCIDR, routes); err != nil {
		t.Fatal(err)
	}
	if actual, err = plan.Routes.Find(ctx, c); err != nil {
		t.Fatal(err)
	}
	op, err := c.Compute.Routes.Delete(testProject, RouteName(testCluster, "100.96.1.0/24")).Do()
	if err == nil {
		err = c.waitOperation(ctx, "delete", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Routes.Render(ctx, c, actual, plan.Routes, nil); err != nil {
		t.Fatalf("a lost race to delete: %v", err)
	}
	if p := mustRun(t, c, engine.DryRun, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("the next round: %v", p.Changes)
	}
}

// TestGCEPodRoutesNotForwarding: instances made from a template without canIpForward are routed to, and named:
// GCE drops what they would forward until they are made again.
func TestGCEPodRoutesNotForwarding(t *testing.T) {
	f := newRoutesFixture(t, false)
	var plan *PodRoutes
	mustRun(t, f.c, engine.DryRun, f.graph(t, map[string]string{"100.96.1.0/24": f.ips[0]}, &plan))
	if !slices.Equal(plan.NotForwarding, f.paths[:1]) {
		t.Errorf("not forwarding: %v, want %v", plan.NotForwarding, f.paths[:1])
	}
}

// TestNetworkRoutesValidate: a range outside the pod range, a range not in canonical form and a next hop that
// is not an instance are refused before anything runs.
func TestNetworkRoutesValidate(t *testing.T) {
	for _, c := range []struct {
		routes map[string]string
		want   string
	}{
		{map[string]string{"10.1.0.0/24": "zones/z/instances/i"}, "not inside the cluster's pod range"},
		{map[string]string{"100.96.1.1/24": "zones/z/instances/i"}, "canonical form"},
		{map[string]string{"100.96.1.0/24": "global/gateways/default-internet-gateway"}, "not an instance"},
	} {
		n := &NetworkRoutes{Network: "net", PodCIDR: testPodCIDR, Routes: c.routes}
		if err := n.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%v) = %v, want %q", c.routes, err, c.want)
		}
	}
	if got := RouteName(strings.Repeat("long.", 20)+"example.com", "100.96.1.0/24"); len(got) > 63 || !gcelabels.ValidName(got) {
		t.Errorf("RouteName of a long cluster name: %q", got)
	}
}

// TestDeleteOwnedDeletesPodRoutes: deleting the cluster deletes its routes (the dry run says so first), and
// leaves another's route of the network.
func TestDeleteOwnedDeletesPodRoutes(t *testing.T) {
	f := newRoutesFixture(t, true)
	ctx := context.Background()
	c := f.c
	mustRun(t, c, engine.Apply, f.graph(t, map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1]}, nil))
	op, err := c.Compute.Routes.Insert(testProject, &compute.Route{Name: "mine", Network: "global/networks/net", DestRange: "100.96.9.0/24",
		NextHopGateway: "global/gateways/default-internet-gateway"}).Do()
	if err = c.mutate(ctx, "making the user's route", op, err); err != nil {
		t.Fatal(err)
	}
	dry, err := c.DeleteOwned(ctx, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DeleteOwned(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, k := range got {
		if strings.HasPrefix(k, "Route/") {
			routes = append(routes, k)
		}
	}
	want := []string{"Route/pod-100-96-1-0-24-gce-example-com", "Route/pod-100-96-2-0-24-gce-example-com"}
	if diff := cmp.Diff(want, routes); diff != "" || !slices.Equal(dry, got) {
		t.Errorf("deleted (-want +got):\n%s\ndry run: %v", diff, dry)
	}
	if diff := cmp.Diff([]string{"mine 100.96.9.0/24 " + computeBaseGateway + " "}, f.routes(t)); diff != "" {
		t.Errorf("routes left (-want +got):\n%s", diff)
	}
}

const computeBaseGateway = "https://www.googleapis.com/compute/v1/projects/p/global/gateways/default-internet-gateway"

// TestSubnetworkRefusesAnOverlappingPodCIDR: a pod range that overlaps the subnetwork's range is refused by its
// field path (GCE routes those addresses to the subnetwork); one outside it is not.
func TestSubnetworkRefusesAnOverlappingPodCIDR(t *testing.T) {
	c, _ := newTestCloud(t)
	for _, tc := range []struct {
		pod, want string
	}{
		{"10.0.8.0/21", "spec.networking.podCIDR: 10.0.8.0/21 overlaps 10.0.0.0/20 of subnetwork sub of region us-central1"},
		{"100.96.0.0/11", ""},
		{"", ""},
	} {
		_, err := runOnce(c, engine.DryRun, func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			validate := engine.WithLifecycle(engine.ExistsAndValidates)
			nw := engine.Add(g, &Network{Name: "net"}, validate)
			engine.Add(g, &Subnetwork{Name: "sub", Region: testRegion, Network: nw, PodCIDR: tc.pod}, validate)
			return g
		})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("pod range %q: %v, want %q", tc.pod, err, tc.want)
		}
	}
}
