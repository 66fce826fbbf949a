package fakegce

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

const (
	proj = "p"
	zone = "us-central1-a"
)

// newClients starts a fake and returns it with google.golang.org/api clients pointed at it.
func newClients(t *testing.T) (*Server, *compute.Service, *dns.Service, string) {
	t.Helper()
	fake := New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	svc, err := compute.NewService(ctx, option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	// dns/v1's paths begin with dns/v1/: its endpoint is the address itself (ADDRESS+"dns/v1/" works too).
	d, err := dns.NewService(ctx, option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return fake, svc, d, srv.URL
}

// wait polls a zonal operation until DONE, failing on its error.
func wait(t *testing.T, svc *compute.Service, op *compute.Operation) *compute.Operation {
	t.Helper()
	for range 20 {
		var err error
		switch {
		case op.Status == "DONE":
			if op.Error != nil {
				t.Fatalf("operation %s: %+v", op.Name, op.Error.Errors[0])
			}
			return op
		case op.Zone != "":
			op, err = svc.ZoneOperations.Get(proj, lastElem(op.Zone), op.Name).Do()
		case op.Region != "":
			op, err = svc.RegionOperations.Get(proj, lastElem(op.Region), op.Name).Do()
		default:
			op, err = svc.GlobalOperations.Get(proj, op.Name).Do()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("operation %s never DONE", op.Name)
	return nil
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func reason(err error) (int, string) {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return 0, ""
	}
	if len(ge.Errors) == 0 {
		return ge.Code, ""
	}
	return ge.Code, ge.Errors[0].Reason
}

func TestDisksThroughTheGoClient(t *testing.T) {
	fake, svc, _, _ := newClients(t)
	op := must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: "etcd-main-a", SizeGb: 20,
		Labels: map[string]string{"kubeup-cluster": "c1", "role": "main"}}).RequestId("req-1").Do())
	if op.Status != "PENDING" || op.OperationType != "insert" || op.TargetLink != computeBase+"projects/p/zones/us-central1-a/disks/etcd-main-a" {
		t.Fatalf("insert answered %+v", op)
	}
	op2 := must[*compute.Operation](t)(svc.ZoneOperations.Get(proj, zone, op.Name).Do())
	op3 := must[*compute.Operation](t)(svc.ZoneOperations.Get(proj, zone, op.Name).Do())
	if op2.Status != "RUNNING" || op3.Status != "DONE" {
		t.Fatalf("polls: %s then %s, want RUNNING then DONE", op2.Status, op3.Status)
	}
	// The same requestId is the same operation, and no second disk.
	again := must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: "etcd-main-a", SizeGb: 20}).RequestId("req-1").Do())
	if again.Name != op.Name || again.Status != "DONE" {
		t.Fatalf("a repeated requestId answered %s %s, want %s DONE", again.Name, again.Status, op.Name)
	}
	_, err := svc.Disks.Insert(proj, zone, &compute.Disk{Name: "etcd-main-a"}).Do()
	if code, r := reason(err); code != 409 || r != "alreadyExists" {
		t.Fatalf("a second disk of the name: %v", err)
	}
	for _, n := range []string{"etcd-events-a", "other"} {
		l := map[string]string{"kubeup-cluster": "c1", "role": "events"}
		if n == "other" {
			l = map[string]string{"kubeup-cluster": "c2"}
		}
		wait(t, svc, must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: n, Labels: l}).Do()))
	}
	var names []string
	err = svc.Disks.List(proj, zone).Filter("labels.kubeup-cluster=c1").MaxResults(1).Pages(context.Background(), func(l *compute.DiskList) error {
		if len(l.Items) > 1 {
			t.Errorf("a page of %d disks, want at most 1", len(l.Items))
		}
		for _, d := range l.Items {
			names = append(names, d.Name)
		}
		return nil
	})
	if err != nil || !slices.Equal(names, []string{"etcd-events-a", "etcd-main-a"}) {
		t.Fatalf("list by label: %v %v", names, err)
	}
	l := must[*compute.DiskList](t)(svc.Disks.List(proj, zone).Filter(`(labels.kubeup-cluster = "c1") (labels.role = "main")`).Do())
	if len(l.Items) != 1 || l.Items[0].Name != "etcd-main-a" || l.Items[0].SizeGb != 20 {
		t.Fatalf("list by two labels: %+v", l.Items)
	}
	l = must[*compute.DiskList](t)(svc.Disks.List(proj, zone).Filter("name = other").Do())
	if len(l.Items) != 1 || l.Items[0].Name != "other" {
		t.Fatalf("list by name: %+v", l.Items)
	}
	agg := must[*compute.DiskAggregatedList](t)(svc.Disks.AggregatedList(proj).Filter("labels.kubeup-cluster=c1").Do())
	if got := len(agg.Items["zones/"+zone].Disks); got != 2 {
		t.Fatalf("aggregated list: %d disks, want 2", got)
	}

	d := must[*compute.Disk](t)(svc.Disks.Get(proj, zone, "etcd-main-a").Do())
	_, err = svc.Disks.SetLabels(proj, zone, d.Name, &compute.ZoneSetLabelsRequest{Labels: map[string]string{"a": "b"}, LabelFingerprint: "stale"}).Do()
	if code, r := reason(err); code != 412 || r != "conditionNotMet" {
		t.Fatalf("setLabels with a stale fingerprint: %v", err)
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Disks.SetLabels(proj, zone, d.Name,
		&compute.ZoneSetLabelsRequest{Labels: map[string]string{"kubeup-cluster": "c1", "x": "y"}, LabelFingerprint: d.LabelFingerprint}).Do()))
	if _, err := svc.Disks.Resize(proj, zone, d.Name, &compute.DisksResizeRequest{SizeGb: 10}).Do(); err == nil {
		t.Fatal("a disk shrank")
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Disks.Resize(proj, zone, d.Name, &compute.DisksResizeRequest{SizeGb: 30}).Do()))
	d = must[*compute.Disk](t)(svc.Disks.Get(proj, zone, "etcd-main-a").Do())
	if d.SizeGb != 30 || d.Labels["x"] != "y" || d.Id == 0 {
		t.Fatalf("disk after setLabels and resize: %+v", d)
	}

	calls := fake.Calls()
	if calls["compute.disks.insert"] != 5 || calls["compute.zoneOperations.get"] < 2 || Mutating("compute.disks.list") || !Mutating("compute.disks.insert") {
		t.Fatalf("calls: %v", calls)
	}
}

func TestFaults(t *testing.T) {
	fake, svc, _, _ := newClients(t)
	if err := fake.SetFaults(Faults{RateLimitRate: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Disks.Get(proj, zone, "d").Do()
	if code, r := reason(err); code != 429 || r != "rateLimitExceeded" {
		t.Fatalf("rate limited: %v", err)
	}
	fake.SetFaults(Faults{ServerErrorRate: 1})
	_, err = svc.Disks.Insert(proj, zone, &compute.Disk{Name: "d"}).Do()
	if code, r := reason(err); code != 503 || r != "backendError" {
		t.Fatalf("server error: %v", err)
	}
	fake.SetFaults(Faults{SlowOperations: 2, DiskInvisibleCalls: 1})
	op := must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: "d"}).Do())
	if _, err := svc.Disks.Get(proj, zone, "d").Do(); err == nil {
		t.Fatal("a new disk visible at once with diskInvisibleCalls 1")
	}
	must[*compute.Disk](t)(svc.Disks.Get(proj, zone, "d").Do())
	var statuses []string
	for range 4 {
		op = must[*compute.Operation](t)(svc.ZoneOperations.Wait(proj, zone, op.Name).Do())
		statuses = append(statuses, op.Status)
	}
	if !slices.Equal(statuses, []string{"RUNNING", "RUNNING", "RUNNING", "DONE"}) {
		t.Fatalf("waits with slowOperations 2: %v", statuses)
	}
	fake.SetFaults(Faults{})
	op = must[*compute.Operation](t)(svc.Disks.Delete(proj, zone, "d").Do())
	if op = must[*compute.Operation](t)(svc.ZoneOperations.Wait(proj, zone, op.Name).Do()); op.Status != "DONE" {
		t.Fatalf("wait: %s", op.Status)
	}
}

func TestNetworkTemplatesGroupsAndInstances(t *testing.T) {
	fake, svc, _, url := newClients(t)
	wait(t, svc, must[*compute.Operation](t)(svc.Networks.Insert(proj, &compute.Network{Name: "net", AutoCreateSubnetworks: false}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Subnetworks.Insert(proj, "us-central1", &compute.Subnetwork{Name: "sub",
		Network: "global/networks/net", IpCidrRange: "10.10.0.0/24"}).Do()))
	if _, err := svc.Subnetworks.Insert(proj, "us-central1", &compute.Subnetwork{Name: "sub2", Network: "global/networks/net",
		IpCidrRange: "10.10.0.128/25"}).Do(); err == nil {
		t.Fatal("an overlapping subnetwork was made")
	}
	sub := must[*compute.Subnetwork](t)(svc.Subnetworks.Get(proj, "us-central1", "sub").Do())
	if sub.Network != computeBase+"projects/p/global/networks/net" {
		t.Fatalf("subnetwork: %+v", sub)
	}
	wait(t, svc, must[*compute.Operation](t)(svc.Firewalls.Insert(proj, &compute.Firewall{Name: "fw", Network: "global/networks/net",
		SourceTags: []string{"a"}, Allowed: []*compute.FirewallAllowed{{IPProtocol: "tcp", Ports: []string{"443"}}}}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Firewalls.Patch(proj, "fw", &compute.Firewall{SourceRanges: []string{"10.0.0.0/8"}}).Do()))
	fw := must[*compute.Firewall](t)(svc.Firewalls.Get(proj, "fw").Do())
	if !slices.Equal(fw.SourceRanges, []string{"10.0.0.0/8"}) || fw.Allowed[0].Ports[0] != "443" || !slices.Equal(fw.SourceTags, []string{"a"}) {
		t.Fatalf("patched firewall: %+v", fw)
	}

	script := "#!/bin/sh\necho hi\n"
	tmpl := &compute.InstanceTemplate{Name: "nodes-1", Properties: &compute.InstanceProperties{MachineType: "e2-medium",
		Labels: map[string]string{"kubeup-cluster": "c1"}, Tags: &compute.Tags{Items: []string{"nodes"}},
		Metadata: &compute.Metadata{Items: []*compute.MetadataItems{{Key: "startup-script", Value: &script}}},
		Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, InitializeParams: &compute.AttachedDiskInitializeParams{
			SourceImage: "projects/debian-cloud/global/images/family/debian-12", DiskSizeGb: 20}}},
		NetworkInterfaces: []*compute.NetworkInterface{{Subnetwork: "regions/us-central1/subnetworks/sub",
			AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT"}}}}}}
	op := must[*compute.Operation](t)(svc.InstanceTemplates.Insert(proj, tmpl).RequestId("t-1").Do())
	if op.Zone != "" || op.Region != "" {
		t.Fatalf("a template's operation is not global: %+v", op)
	}
	wait(t, svc, op)
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceTemplates.Insert(proj, tmpl).RequestId("t-1").Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Insert(proj, zone, &compute.InstanceGroupManager{Name: "nodes",
		BaseInstanceName: "nodes", InstanceTemplate: "global/instanceTemplates/nodes-1", TargetSize: 2}).RequestId("g-1").Do()))
	if _, err := svc.InstanceTemplates.Delete(proj, "nodes-1").Do(); err == nil {
		t.Fatal("a template in use was deleted")
	} else if _, r := reason(err); r != "resourceInUseByAnotherResource" {
		t.Fatalf("deleting a template in use: %v", err)
	}
	ins := must[*compute.InstanceList](t)(svc.Instances.List(proj, zone).Filter("labels.kubeup-cluster=c1").Do()).Items
	if len(ins) != 2 {
		t.Fatalf("%d instances, want 2", len(ins))
	}
	in := ins[0]
	if len(in.Name) != len("nodes-xxxx") || in.NetworkInterfaces[0].NetworkIP != "10.10.0.2" && in.NetworkInterfaces[0].NetworkIP != "10.10.0.3" ||
		in.NetworkInterfaces[0].AccessConfigs[0].NatIP == "" || in.Tags.Items[0] != "nodes" {
		t.Fatalf("instance: %+v %+v", in, in.NetworkInterfaces[0])
	}
	found := false
	for _, it := range in.Metadata.Items {
		found = found || it.Key == "startup-script" && *it.Value == script
	}
	if !found {
		t.Fatal("the instance has not the template's startup-script")
	}
	g := must[*compute.InstanceGroupManager](t)(svc.InstanceGroupManagers.Get(proj, zone, "nodes").Do())
	if g.TargetSize != 2 || g.CurrentActions.None != 2 || !g.Status.IsStable {
		t.Fatalf("group: %+v", g)
	}
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Resize(proj, zone, "nodes", 3).Do()))
	mi := must[*compute.InstanceGroupManagersListManagedInstancesResponse](t)(svc.InstanceGroupManagers.ListManagedInstances(proj, zone, "nodes").Do())
	if len(mi.ManagedInstances) != 3 {
		t.Fatalf("%d managed instances after resize to 3", len(mi.ManagedInstances))
	}

	// Disks attach to one instance read-write.
	wait(t, svc, must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: "vol"}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Instances.AttachDisk(proj, zone, ins[0].Name, &compute.AttachedDisk{
		Source: "zones/" + zone + "/disks/vol", DeviceName: "etcd-main"}).Do()))
	if _, err := svc.Instances.AttachDisk(proj, zone, ins[1].Name, &compute.AttachedDisk{Source: "zones/" + zone + "/disks/vol"}).Do(); err == nil {
		t.Fatal("a disk attached read-write to two instances")
	}
	if _, err := svc.Instances.AttachDisk(proj, "us-central1-b", "x", &compute.AttachedDisk{Source: "zones/" + zone + "/disks/vol"}).Do(); err == nil {
		t.Fatal("attached to an instance of another zone")
	}
	if _, err := svc.Disks.Delete(proj, zone, "vol").Do(); err == nil {
		t.Fatal("a disk in use was deleted")
	}
	d := must[*compute.Disk](t)(svc.Disks.Get(proj, zone, "vol").Do())
	if !slices.Equal(d.Users, []string{ins[0].SelfLink}) {
		t.Fatalf("users: %v", d.Users)
	}

	// The metadata server of that instance.
	md := httptest.NewServer(fake.MetadataHandler(ins[0].Name))
	defer md.Close()
	for path, want := range map[string]string{"instance/name": ins[0].Name, "instance/zone": "projects/", "instance/attributes/startup-script": script,
		"instance/network-interfaces/0/ip": ins[0].NetworkInterfaces[0].NetworkIP, "project/project-id": "p"} {
		req, _ := http.NewRequest("GET", md.URL+"/computeMetadata/v1/"+path, nil)
		req.Header.Set("Metadata-Flavor", "Google")
		body := readAll(t, req)
		if path == "instance/zone" {
			if !strings.HasPrefix(body, want) || !strings.HasSuffix(body, "/zones/"+zone) {
				t.Errorf("%s: %q", path, body)
			}
		} else if body != want {
			t.Errorf("%s: %q, want %q", path, body, want)
		}
	}
	req, _ := http.NewRequest("POST", url+"/__fake/metadata-instance?name="+ins[1].Name, nil)
	readAll(t, req)
	req, _ = http.NewRequest("GET", url+"/computeMetadata/v1/instance/name", nil)
	req.Header.Set("Metadata-Flavor", "Google")
	if got := readAll(t, req); got != ins[1].Name {
		t.Errorf("the main address's metadata for the chosen instance: %q", got)
	}

	wait(t, svc, must[*compute.Operation](t)(svc.Instances.DetachDisk(proj, zone, ins[0].Name, "etcd-main").Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Disks.Delete(proj, zone, "vol").Do()))

	// A new template for the group; the old one can go then; deleting the group deletes its instances.
	tmpl.Name = "nodes-2"
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceTemplates.Insert(proj, tmpl).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.SetInstanceTemplate(proj, zone, "nodes",
		&compute.InstanceGroupManagersSetInstanceTemplateRequest{InstanceTemplate: "global/instanceTemplates/nodes-2"}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceTemplates.Delete(proj, "nodes-1").Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Delete(proj, zone, "nodes").Do()))
	if l := must[*compute.InstanceList](t)(svc.Instances.List(proj, zone).Do()); len(l.Items) != 0 {
		t.Fatalf("%d instances left after the group's deletion", len(l.Items))
	}
	if calls := fake.Calls(); calls["compute.instanceTemplates.insert"] != 3 || len(must[*compute.InstanceTemplateList](t)(svc.InstanceTemplates.List(proj).Do()).Items) != 1 {
		t.Fatalf("templates: calls %v", calls)
	}
}

func readAll(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, b)
	}
	return string(b)
}
