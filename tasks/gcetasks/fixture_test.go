package gcetasks

import (
	"context"
	"kubeup.dev/kubeup/internal/gcelabels"
	"net/http/httptest"
	"testing"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

const (
	testProject = "p"
	testCluster = "gce.example.com"
	testRegion  = "us-central1"
)

var zones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// newTestCloud returns a Cloud of testCluster against a new fake GCE, with the user's network "net", its
// subnetwork "sub" in testRegion and a managed zone for example.com, made through the SDK as the user would.
func newTestCloud(t testing.TB) (*Cloud, *fakegce.Server) {
	t.Helper()
	srv := fakegce.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := context.Background()
	cs, ds, err := servicesAt(ctx, hs.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCloudOf(cs, ds, testProject, testCluster, "example.com", nil)
	c.Region = testRegion
	if c.IAM, err = iamAt(ctx, hs.URL+"/"); err != nil {
		t.Fatal(err)
	}
	op, err := cs.Networks.Insert(testProject, &compute.Network{Name: "net", AutoCreateSubnetworks: false, ForceSendFields: []string{"AutoCreateSubnetworks"}}).Do()
	if err == nil {
		err = c.waitOperation(ctx, "making the network", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	op, err = cs.Subnetworks.Insert(testProject, testRegion, &compute.Subnetwork{
		Name: "sub", Network: "projects/" + testProject + "/global/networks/net", IpCidrRange: "10.0.0.0/20",
	}).Do()
	if err == nil {
		err = c.waitOperation(ctx, "making the subnetwork", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ds.ManagedZones.Create(testProject, &dns.ManagedZone{Name: "example-com", DnsName: "example.com.", Description: "test"}).Do(); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	return c, srv
}

// spec is what a test varies in the cluster graph.
type spec struct {
	script   string
	size     int64
	diskGB   int64
	machine  string
	diskType string
	forward  bool // the nodes' canIpForward
}

func defaultSpec() spec {
	return spec{script: "#!/bin/bash\necho nodes\n", size: 1, diskGB: 20, machine: "e2-standard-2", diskType: "pd-ssd"}
}

// clusterGraph is a cluster's GCE graph as the model builds one: the user's network and subnetwork checked, two
// firewall rules, three etcd disks, a template and a group per zone for the nodes, the API's record.
func clusterGraph(s spec) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		nw := engine.Add(g, &Network{Name: "net"}, validate)
		sub := engine.Add(g, &Subnetwork{Name: "sub", Region: testRegion, Network: nw}, validate)
		engine.Add(g, &FirewallRule{Name: "cp-gce-example-com-https", Network: nw, SourceRanges: []string{"0.0.0.0/0"},
			TargetTags: []string{"control-plane"}, Allowed: []FirewallAllow{{Protocol: "tcp", Ports: []string{"443"}}}})
		engine.Add(g, &FirewallRule{Name: "nodes-gce-example-com-to-cp", Network: nw, SourceTags: []string{"nodes"},
			TargetTags: []string{"control-plane"}, Allowed: []FirewallAllow{{Protocol: "tcp", Ports: []string{"2379-2380", "443"}}, {Protocol: "icmp"}}})
		members := []string{"a", "b", "c"}
		for i, m := range members {
			engine.Add(g, &Disk{Name: gcelabels.ResourceName(m+".etcd-main."+testCluster, 63), Zone: &zones[i], SizeGB: ptr(s.diskGB),
				Type: ptr(s.diskType), Labels: gcelabels.EtcdLabels("main", m, members)})
		}
		tmpl := engine.Add(g, &InstanceTemplate{Name: "nodes-gce-example-com", MachineType: s.machine,
			Image: "projects/debian-cloud/global/images/family/debian-12", ServiceAccount: ptr("default"), Network: nw, Subnetwork: sub,
			Tags: []string{"nodes", "kubeup"}, Labels: map[string]string{"kubeup-role-node": "1"}, RootDiskSizeGB: ptr[int64](30),
			CanIpForward: s.forward, MakeStartupScript: func() (string, error) { return s.script, nil }})
		for _, z := range zones {
			engine.Add(g, &InstanceGroupManager{Name: "nodes-" + z + "-gce-example-com", Zone: ptr(z), TargetSize: ptr(s.size), Template: tmpl})
		}
		engine.Add(g, &dnstasks.Record[*Cloud]{Name: "api.gce.example.com", Type: "A", Values: []string{"203.0.113.123"}, Placeholder: true})
		return g
	}
}

func ptr[T any](v T) *T { return &v }

// runOnce runs a fresh graph of build in a new run of c.
func runOnce(c *Cloud, target engine.Target, build func() *engine.Graph[*Cloud]) (*engine.Plan, error) {
	c.NewRun()
	res, err := engine.Run(context.Background(), build(), c, engine.Options{Target: target})
	if res == nil {
		return nil, err
	}
	return res.Plan, err
}

func mustRun(t testing.TB, c *Cloud, target engine.Target, build func() *engine.Graph[*Cloud]) *engine.Plan {
	t.Helper()
	p, err := runOnce(c, target, build)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return p
}

// freshRuns wraps build so that each graph it makes starts a new run of c (for enginetest.ApplyThenNoChanges).
func freshRuns(c *Cloud, build func() *engine.Graph[*Cloud]) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		c.NewRun()
		return build()
	}
}

// mutatingCalls returns the calls of calls that change something.
func mutatingCalls(calls map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range calls {
		if fakegce.Mutating(op) && n > 0 {
			out[op] = n
		}
	}
	return out
}
