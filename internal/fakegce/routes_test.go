package fakegce

import (
	"net/http"
	"testing"

	"google.golang.org/api/compute/v1"
)

// routesNetwork makes network "net" with a subnetwork and a group of two instances from a template whose
// canIpForward is forward, and returns the instances.
func routesNetwork(t *testing.T, svc *compute.Service, forward bool) []*compute.Instance {
	t.Helper()
	wait(t, svc, must[*compute.Operation](t)(svc.Networks.Insert(proj, &compute.Network{Name: "net"}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Subnetworks.Insert(proj, "us-central1", &compute.Subnetwork{Name: "sub",
		Network: "global/networks/net", IpCidrRange: "10.10.0.0/24"}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceTemplates.Insert(proj, &compute.InstanceTemplate{Name: "t", Properties: &compute.InstanceProperties{
		MachineType: "e2-medium", CanIpForward: forward,
		Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, InitializeParams: &compute.AttachedDiskInitializeParams{
			SourceImage: "projects/debian-cloud/global/images/family/debian-12"}}},
		NetworkInterfaces: []*compute.NetworkInterface{{Subnetwork: "regions/us-central1/subnetworks/sub"}}}}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Insert(proj, zone, &compute.InstanceGroupManager{Name: "g",
		BaseInstanceName: "n", InstanceTemplate: "global/instanceTemplates/t", TargetSize: 2}).Do()))
	ins := must[*compute.InstanceList](t)(svc.Instances.List(proj, zone).Do()).Items
	if len(ins) != 2 || ins[0].CanIpForward != forward {
		t.Fatalf("instances: %+v", ins)
	}
	return ins
}

// TestRoutes: a route to an instance is inserted, read and listed (by a filter) as GCE writes it, with the
// default priority; a second insert of its name, a bad range, a missing instance, two next hops and an
// instance of another network are refused with GCE's errors; a network with routes cannot be deleted; a route
// to an instance that does not forward, or that is gone, carries GCE's warning; a route is deleted.
func TestRoutes(t *testing.T) {
	_, svc, _, _ := newClients(t)
	ins := routesNetwork(t, svc, true)
	hop := "zones/" + zone + "/instances/" + ins[0].Name
	route := func(name, dest, instance string) *compute.Route {
		return &compute.Route{Name: name, Network: "global/networks/net", DestRange: dest, NextHopInstance: instance, Description: "kubeup: owned by cluster c"}
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Routes.Insert(proj, route("pod-1", "100.96.1.0/24", hop)).Do()))
	got := must[*compute.Route](t)(svc.Routes.Get(proj, "pod-1").Do())
	if got.NextHopInstance != ins[0].SelfLink || got.Priority != 1000 || got.Network != computeBase+"projects/p/global/networks/net" ||
		got.SelfLink != computeBase+"projects/p/global/routes/pod-1" || len(got.Warnings) != 0 {
		t.Fatalf("route: %+v", got)
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Routes.Insert(proj, &compute.Route{Name: "egress", Network: "global/networks/net", DestRange: "0.0.0.0/0",
		NextHopGateway: "global/gateways/default-internet-gateway"}).Do()))
	listed := must[*compute.RouteList](t)(svc.Routes.List(proj).Filter(`description = "kubeup: owned by cluster c"`).Do()).Items
	if len(listed) != 1 || listed[0].Name != "pod-1" {
		t.Errorf("routes listed by description: %+v", listed)
	}

	for _, c := range []struct {
		what   string
		r      *compute.Route
		code   int
		reason string
	}{
		{"the name again", route("pod-1", "100.96.2.0/24", hop), http.StatusConflict, "alreadyExists"},
		{"a range not in canonical form", route("pod-2", "100.96.2.1/24", hop), http.StatusBadRequest, "invalid"},
		{"no instance", route("pod-2", "100.96.2.0/24", "zones/"+zone+"/instances/nothing"), http.StatusNotFound, "notFound"},
		{"no next hop", route("pod-2", "100.96.2.0/24", ""), http.StatusBadRequest, "invalid"},
		{"two next hops", &compute.Route{Name: "pod-2", Network: "global/networks/net", DestRange: "100.96.2.0/24", NextHopInstance: hop, NextHopIp: "10.10.0.9"}, http.StatusBadRequest, "invalid"},
		{"no network", &compute.Route{Name: "pod-2", DestRange: "100.96.2.0/24", NextHopInstance: hop}, http.StatusBadRequest, "invalid"},
	} {
		if _, err := svc.Routes.Insert(proj, c.r).Do(); err == nil {
			t.Errorf("%s: inserted", c.what)
		} else if code, r := reason(err); code != c.code || r != c.reason {
			t.Errorf("%s: %v, want %d %s", c.what, err, c.code, c.reason)
		}
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Networks.Insert(proj, &compute.Network{Name: "other"}).Do()))
	if _, err := svc.Routes.Insert(proj, &compute.Route{Name: "pod-2", Network: "global/networks/other", DestRange: "100.96.2.0/24", NextHopInstance: hop}).Do(); err == nil {
		t.Error("a route to an instance of another network was made")
	}
	if _, err := svc.Networks.Delete(proj, "net").Do(); err == nil {
		t.Error("a network with routes was deleted")
	} else if _, r := reason(err); r != "resourceInUseByAnotherResource" {
		t.Errorf("deleting a network with routes: %v", err)
	}

	// The instance goes: the route stays, with GCE's warning.
	wait(t, svc, must[*compute.Operation](t)(svc.Instances.Delete(proj, zone, ins[0].Name).Do()))
	got = must[*compute.Route](t)(svc.Routes.Get(proj, "pod-1").Do())
	if len(got.Warnings) != 1 || got.Warnings[0].Code != "NEXT_HOP_INSTANCE_NOT_FOUND" {
		t.Errorf("a route to a deleted instance: warnings %+v", got.Warnings)
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Routes.Delete(proj, "pod-1").Do()))
	if _, err := svc.Routes.Get(proj, "pod-1").Do(); err == nil {
		t.Error("the deleted route is there")
	} else if code, _ := reason(err); code != http.StatusNotFound {
		t.Errorf("a deleted route: %v", err)
	}
	if _, err := svc.Routes.Delete(proj, "pod-1").Do(); err == nil {
		t.Error("a route was deleted twice")
	}
}

// TestRouteToInstanceThatDoesNotForward: a route to an instance whose canIpForward is off is made, with GCE's
// warning that the instance cannot forward.
func TestRouteToInstanceThatDoesNotForward(t *testing.T) {
	_, svc, _, _ := newClients(t)
	ins := routesNetwork(t, svc, false)
	wait(t, svc, must[*compute.Operation](t)(svc.Routes.Insert(proj, &compute.Route{Name: "pod-1", Network: "global/networks/net",
		DestRange: "100.96.1.0/24", NextHopInstance: ins[1].SelfLink}).Do()))
	got := must[*compute.Route](t)(svc.Routes.Get(proj, "pod-1").Do())
	if len(got.Warnings) != 1 || got.Warnings[0].Code != "NEXT_HOP_CANNOT_IP_FORWARD" {
		t.Errorf("warnings %+v", got.Warnings)
	}
}
