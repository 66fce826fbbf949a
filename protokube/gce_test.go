package protokube

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// gceInstance starts one instance in zone of a fake GCE (a managed instance group of one, as kubeup makes them)
// and points the clients and the metadata server at the fake, for that instance.
func gceInstance(t *testing.T, zone string) (*fakegce.Server, string) {
	t.Helper()
	srv := fakegce.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := context.Background()
	cs, err := compute.NewService(ctx, option.WithEndpoint(hs.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.InstanceTemplates.Insert("p", &compute.InstanceTemplate{Name: "t", Properties: &compute.InstanceProperties{
		MachineType: "e2-standard-2",
		Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, InitializeParams: &compute.AttachedDiskInitializeParams{
			SourceImage: "projects/debian-cloud/global/images/family/debian-12"}}},
		NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT"}}}},
	}}).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.InstanceGroupManagers.Insert("p", zone, &compute.InstanceGroupManager{Name: "g", BaseInstanceName: "cp",
		InstanceTemplate: "projects/p/global/instanceTemplates/t", TargetSize: 1}).Do(); err != nil {
		t.Fatal(err)
	}
	var name string
	for range 20 { // the group makes its instance over the operation's polls
		l, err := cs.Instances.List("p", zone).Do()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > 0 {
			name = l.Items[0].Name
			break
		}
		if _, err := cs.ZoneOperations.List("p", zone).Do(); err != nil {
			t.Fatal(err)
		}
	}
	if name == "" {
		t.Fatal("the fake group made no instance")
	}
	md := httptest.NewServer(srv.MetadataHandler(name))
	t.Cleanup(md.Close)
	t.Setenv(gcetasks.EndpointEnv, hs.URL+"/")
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	return srv, name
}

// TestGCENode: on GCE, the node is the instance the metadata server names, its providers are the disks of its
// zone and Cloud DNS, kept across rounds; a configuration of another zone is refused.
func TestGCENode(t *testing.T) {
	ctx := context.Background()
	_, name := gceInstance(t, "us-central1-a")
	pc := &model.ProtokubeConfig{CloudProvider: model.CloudGCE, Zone: "us-central1-a", DNSZone: "example.com"}
	o := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Root: t.TempDir()}
	if err := o.identify(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if o.Node.NodeID != name || o.Node.InternalIP == "" {
		t.Errorf("Node = %+v, want instance %s with its address", o.Node, name)
	}
	nc := &model.NodeConfig{Protokube: pc}
	vols, dns, err := o.cloudProviders(nc, o.Root, o.Node, o.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vols.(*gcetasks.Disks); !ok {
		t.Errorf("volumes %T, want *gcetasks.Disks", vols)
	}
	if _, ok := dns.(*gcetasks.CloudDNS); !ok {
		t.Errorf("dns %T, want *gcetasks.CloudDNS", dns)
	}
	again, _, err := o.cloudProviders(nc, o.Root, o.Node, o.Lease)
	if err != nil || again != vols {
		t.Errorf("the second round's volumes are new: %v", err)
	}
	other := &model.NodeConfig{Protokube: &model.ProtokubeConfig{CloudProvider: model.CloudGCE, Zone: "us-central1-b", DNSZone: "example.com"}}
	if _, _, err := o.cloudProviders(other, o.Root, o.Node, o.Lease); err == nil || !strings.Contains(err.Error(), "a persistent disk attaches to an instance of its own zone only") {
		t.Errorf("a configuration of another zone: %v", err)
	}
}
