package protokube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

// kubenetCluster is the node configuration of cluster c with kubenet's pod network on cloud.
func kubenetCluster(cloud string) *model.NodeConfig {
	yes := true
	return &model.NodeConfig{
		Cluster: &model.Cluster{Metadata: model.ObjectMeta{Name: "c"}, Spec: model.ClusterSpec{
			Networking:            &model.NetworkingSpec{PodCIDR: "100.96.0.0/11", PodNetwork: model.PodNetworkKubenet},
			KubeControllerManager: &model.KubeControllerManagerConfig{AllocateNodeCIDRs: &yes, ClusterCIDR: "100.96.0.0/11"},
		}},
		Protokube: &model.ProtokubeConfig{CloudProvider: cloud, DNSZone: "example.com"},
	}
}

// serveNodes makes the fake API list Nodes, one per address, node<i> with the pod range 100.96.<i>.0/24.
func serveNodes(t *testing.T, api *kubetest.API, ips ...string) {
	t.Helper()
	var items []any
	for i, ip := range ips {
		items = append(items, map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("node%d", i)},
			"spec":     map[string]any{"podCIDR": fmt.Sprintf("100.96.%d.0/24", i)},
			"status":   map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": ip}}},
		})
	}
	b, err := json.Marshal(map[string]any{"kind": "NodeList", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	api.Lock()
	api.Objects["/api/v1/nodes"] = list
	api.Unlock()
}

// cloudRouter identifies this instance on nc's cloud (its fake, as the environment points to it) and returns
// its Router.
func cloudRouter(t *testing.T, nc *model.NodeConfig) (Options, nodecloud.Router) {
	t.Helper()
	o := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Root: "/"}
	if err := o.identify(context.Background(), nc.Protokube); err != nil {
		t.Fatal(err)
	}
	router, ok := o.cloud.(nodecloud.Router)
	if !ok {
		t.Fatalf("the %s instance %T routes no pod ranges", nc.Protokube.CloudProvider, o.cloud)
	}
	return o, router
}

// cloudRound runs the pod-route part of a round on a cloud: the tasks addPodRoutes adds for the Nodes kube
// serves, which the ownership check takes and which hold no route of the node's own table, applied.
func cloudRound(t *testing.T, kube *kubetasks.Client, nc *model.NodeConfig, o Options, router nodecloud.Router) *engine.Plan {
	t.Helper()
	ctx := context.Background()
	r := &Round{kube: kube}
	g := engine.NewGraph[*Round]()
	addPodRoutes(ctx, g, r, nc, self{IP: o.Node.InternalIP}, router, o.Logger)
	if err := checkOwned("node.conf", g, r.cloudTasks); err != nil {
		t.Fatalf("the ownership check refuses the cloud's tasks: %v", err)
	}
	if len(r.cloudTasks) > 0 && checkOwned("node.conf", g, nil) == nil {
		t.Error("the ownership check takes tasks it does not know")
	}
	for _, task := range g.Tasks() {
		if task.Key().Type == "PodRoutes" {
			t.Errorf("a round on %s routes in the node's own table: %s", nc.Protokube.CloudProvider, task.Key())
		}
	}
	res, err := engine.Run(ctx, g, r, engine.Options{Target: engine.Apply, Logger: o.Logger})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

// TestAWSRoundPodRoutes: on AWS, a round whose kube-apiserver is ready routes each Node's pod range to its
// instance in the VPC's route table, and turns those instances' source/destination check off; it makes no route
// of the node's own table; the ownership check takes the cloud's tasks; a second round changes nothing and reads
// the instances and the route tables once each; a Node deleted loses its route.
func TestAWSRoundPodRoutes(t *testing.T) {
	ctx := context.Background()
	f := newAWSFixture(t, "example.com", "us-east-1a", "us-east-1b", "us-east-1c")
	var ids, ips []string
	for _, i := range f.instances {
		ids, ips = append(ids, i.me.NodeID), append(ips, i.me.InternalIP)
	}
	if _, err := f.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: []types.Tag{{Key: aws.String(model.ClusterTagKey("c")), Value: aws.String("owned")}}}); err != nil {
		t.Fatal(err)
	}
	setenv(t, f.env(t, f.imds(t, ids[0])))
	nc := kubenetCluster(model.CloudAWS)
	o, router := cloudRouter(t, nc)
	api, kube := kubetest.New(t)
	serveNodes(t, api, ips...)
	round := func() *engine.Plan { return cloudRound(t, kube, nc, o, router) }
	routes := func() []string {
		t.Helper()
		out, err := f.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []types.Filter{{Name: aws.String("vpc-id"), Values: []string{f.vpc}}}})
		if err != nil || len(out.RouteTables) != 1 {
			t.Fatalf("the VPC's route tables: %+v, %v", out, err)
		}
		var got []string
		for _, r := range out.RouteTables[0].Routes {
			if aws.ToString(r.InstanceId) != "" {
				got = append(got, aws.ToString(r.DestinationCidrBlock)+" "+aws.ToString(r.InstanceId))
			}
		}
		return got
	}

	if p := round(); len(p.Changes) != 4 {
		t.Errorf("the first round's changes: %v, want the table and three checks", p.Changes)
	}
	want := []string{"100.96.0.0/24 " + ids[0], "100.96.1.0/24 " + ids[1], "100.96.2.0/24 " + ids[2]}
	if diff := cmp.Diff(want, routes()); diff != "" {
		t.Errorf("the VPC's routes (-want +got):\n%s", diff)
	}
	out, err := f.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToBool(i.SourceDestCheck) {
				t.Errorf("instance %s: its source/destination check is on", aws.ToString(i.InstanceId))
			}
		}
	}

	f.s.ResetCalls()
	if p := round(); !p.Empty() {
		t.Errorf("the second round changed %v", p.Changes)
	}
	if diff := cmp.Diff(map[string]int{"DescribeInstances": 1, "DescribeRouteTables": 1}, f.s.Calls()); diff != "" {
		t.Errorf("the AWS calls of a round with nothing to change (-want +got):\n%s", diff)
	}

	serveNodes(t, api, ips[:2]...)
	round()
	if diff := cmp.Diff(want[:2], routes()); diff != "" {
		t.Errorf("the VPC's routes after a Node went (-want +got):\n%s", diff)
	}
	if !slices.Contains(ids, o.Node.NodeID) {
		t.Errorf("the round's node %s is not one of the instances", o.Node.NodeID)
	}
}
