package protokube

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/gcelabels"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

// gceCluster starts three instances of cluster c on network "net" of a fake GCE (a managed group from a template
// that forwards, as kubeup makes it for kubenet), points the clients and the metadata server at the fake for the
// first, and returns the fake, the compute client and the instances.
func gceCluster(t *testing.T) (*fakegce.Server, *compute.Service, []*compute.Instance) {
	t.Helper()
	srv := fakegce.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cs, err := compute.NewService(context.Background(), option.WithEndpoint(hs.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	const zone = "us-central1-a"
	done := func(op *compute.Operation, err error) {
		t.Helper()
		for err == nil && op.Status != "DONE" {
			switch {
			case op.Zone != "":
				op, err = cs.ZoneOperations.Get("p", zone, op.Name).Do()
			case op.Region != "":
				op, err = cs.RegionOperations.Get("p", "us-central1", op.Name).Do()
			default:
				op, err = cs.GlobalOperations.Get("p", op.Name).Do()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	done(cs.Networks.Insert("p", &compute.Network{Name: "net"}).Do())
	done(cs.Subnetworks.Insert("p", "us-central1", &compute.Subnetwork{Name: "sub", Network: "global/networks/net", IpCidrRange: "10.0.0.0/24"}).Do())
	done(cs.InstanceTemplates.Insert("p", &compute.InstanceTemplate{Name: "t", Properties: &compute.InstanceProperties{
		MachineType: "e2-standard-2", CanIpForward: true, Labels: map[string]string{gcelabels.ClusterLabelKey("c"): gcelabels.OwnedValue},
		Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, InitializeParams: &compute.AttachedDiskInitializeParams{
			SourceImage: "projects/debian-cloud/global/images/family/debian-12"}}},
		NetworkInterfaces: []*compute.NetworkInterface{{Subnetwork: "regions/us-central1/subnetworks/sub"}},
	}}).Do())
	done(cs.InstanceGroupManagers.Insert("p", zone, &compute.InstanceGroupManager{Name: "g", BaseInstanceName: "cp",
		InstanceTemplate: "global/instanceTemplates/t", TargetSize: 3}).Do())
	l, err := cs.Instances.List("p", zone).Do()
	if err != nil || len(l.Items) != 3 {
		t.Fatalf("the group's instances: %+v, %v", l, err)
	}
	md := httptest.NewServer(srv.MetadataHandler(l.Items[0].Name))
	t.Cleanup(md.Close)
	t.Setenv(gcetasks.EndpointEnv, hs.URL+"/")
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	return srv, cs, l.Items
}

// TestGCERoundPodRoutes: on GCE, a round whose kube-apiserver is ready routes each Node's pod range to its
// instance in the cluster's network; it makes no route of the node's own table; the ownership check takes the
// cloud's task; a second round changes nothing and reads the instances and the routes once each; a Node deleted
// loses its route.
func TestGCERoundPodRoutes(t *testing.T) {
	srv, cs, instances := gceCluster(t)
	var ips, paths []string
	for _, in := range instances {
		ips, paths = append(ips, in.NetworkInterfaces[0].NetworkIP), append(paths, "zones/us-central1-a/instances/"+in.Name)
	}
	nc := kubenetCluster(model.CloudGCE)
	nc.Protokube.Zone = "us-central1-a"
	o, router := cloudRouter(t, nc)
	api, kube := kubetest.New(t)
	serveNodes(t, api, ips...)
	round := func() *engine.Plan { return cloudRound(t, kube, nc, o, router) }
	routes := func() []string {
		t.Helper()
		l, err := cs.Routes.List("p").Do()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range l.Items {
			got = append(got, r.DestRange+" "+r.NextHopInstance[strings.Index(r.NextHopInstance, "zones/"):])
		}
		slices.Sort(got)
		return got
	}

	if p := round(); len(p.Changes) != 1 {
		t.Errorf("the first round's changes: %v, want the network's routes", p.Changes)
	}
	want := []string{"100.96.0.0/24 " + paths[0], "100.96.1.0/24 " + paths[1], "100.96.2.0/24 " + paths[2]}
	if diff := cmp.Diff(want, routes()); diff != "" {
		t.Errorf("the network's routes (-want +got):\n%s", diff)
	}
	srv.ResetCalls()
	if p := round(); !p.Empty() {
		t.Errorf("the second round changed %v", p.Changes)
	}
	if diff := cmp.Diff(map[string]int{"compute.instances.aggregatedList": 1, "compute.routes.list": 1}, srv.Calls()); diff != "" {
		t.Errorf("the GCE calls of a round with nothing to change (-want +got):\n%s", diff)
	}
	serveNodes(t, api, ips[:2]...)
	round()
	if diff := cmp.Diff(want[:2], routes()); diff != "" {
		t.Errorf("the network's routes after a Node went (-want +got):\n%s", diff)
	}
}
