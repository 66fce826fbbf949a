package awstasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"
)

const testPodCIDR = "100.96.0.0/11"

// routesFixture is a VPC of two subnets, the first on the VPC's main route table, the second on a table of its
// own, with three instances of the cluster (two in the first subnet) and one of another's.
type routesFixture struct {
	c               *Cloud
	srv             *fakeaws.Server
	vpc             string
	main, own       string // the route tables
	ips, ids        []string
	foreignInstance string // the other's instance's address
	foreignID       string // and id
}

func newRoutesFixture(t *testing.T) *routesFixture {
	t.Helper()
	ctx := context.Background()
	c, srv := newTestCloud(t)
	vpc, err := c.EC2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	f := &routesFixture{c: c, srv: srv, vpc: aws.ToString(vpc.Vpc.VpcId)}
	var subnets []string
	for _, cidr := range []string{"10.0.1.0/24", "10.0.2.0/24"} {
		sn, err := c.EC2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(cidr)})
		if err != nil {
			t.Fatal(err)
		}
		subnets = append(subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	tables, err := c.EC2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{})
	if err != nil || len(tables.RouteTables) != 1 {
		t.Fatalf("the VPC's tables: %+v, %v", tables, err)
	}
	f.main = aws.ToString(tables.RouteTables[0].RouteTableId)
	own, err := c.EC2.CreateRouteTable(ctx, &ec2.CreateRouteTableInput{VpcId: vpc.Vpc.VpcId})
	if err != nil {
		t.Fatal(err)
	}
	f.own = aws.ToString(own.RouteTable.RouteTableId)
	if _, err := c.EC2.AssociateRouteTable(ctx, &ec2.AssociateRouteTableInput{RouteTableId: own.RouteTable.RouteTableId, SubnetId: aws.String(subnets[1])}); err != nil {
		t.Fatal(err)
	}
	run := func(subnet string, tags []ec2types.TagSpecification) ec2types.Instance {
		out, err := c.EC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-00000000000000001"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			SubnetId: aws.String(subnet), TagSpecifications: tags})
		if err != nil {
			t.Fatal(err)
		}
		return out.Instances[0]
	}
	owned := []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String(ClusterTag(testCluster)), Value: aws.String("owned")}}}}
	for _, sn := range []string{subnets[0], subnets[0], subnets[1]} {
		i := run(sn, owned)
		f.ids = append(f.ids, aws.ToString(i.InstanceId))
		f.ips = append(f.ips, aws.ToString(i.PrivateIpAddress))
	}
	other := run(subnets[0], nil)
	f.foreignInstance, f.foreignID = aws.ToString(other.PrivateIpAddress), aws.ToString(other.InstanceId)
	return f
}

// graph is a round's graph of kubenet's routes for routes (pod range -> node address), planned after c.NewRun.
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
		for _, v := range p.Tables {
			engine.Add(g, v)
		}
		for _, s := range p.Checks {
			engine.Add(g, s)
		}
		return g
	}
}

// routes are the routes of table id as "destination target state", the local one left out.
func (f *routesFixture) routes(t *testing.T, id string) []string {
	t.Helper()
	out, err := f.c.EC2.DescribeRouteTables(context.Background(), &ec2.DescribeRouteTablesInput{RouteTableIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.RouteTables[0].Routes {
		if aws.ToString(r.GatewayId) == "local" {
			continue
		}
		got = append(got, aws.ToString(r.DestinationCidrBlock)+" "+aws.ToString(r.GatewayId)+aws.ToString(r.InstanceId)+" "+string(r.State))
	}
	return got
}

// checks are the source/destination checks of the cluster's instances, in their order.
func (f *routesFixture) checks(t *testing.T) []bool {
	t.Helper()
	out, err := f.c.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: f.ids})
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			got = append(got, aws.ToBool(i.SourceDestCheck))
		}
	}
	return got
}

// TestPodRoutes: kubenet's routes go to every route table the cluster's subnets use (the main one and a subnet's
// own), each range to the instance of its node's address, and those instances' source/destination check goes off;
// the dry run shows them by field path; a second round changes nothing and reads the instances and the tables
// once each; a node gone loses its route; an instance gone leaves a blackhole that the next round deletes; an
// address of no instance of the cluster's is routed nowhere.
func TestPodRoutes(t *testing.T) {
	f := newRoutesFixture(t)
	c := f.c
	routes := map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1], "100.96.3.0/24": f.ips[2], "100.96.4.0/24": f.foreignInstance}
	var plan *PodRoutes
	dry := mustRun(t, c, engine.DryRun, f.graph(t, routes, &plan))
	if !slices.Equal(plan.Unmatched, []string{f.foreignInstance}) {
		t.Errorf("unmatched = %v, want the other cluster's instance %s", plan.Unmatched, f.foreignInstance)
	}
	var keys []string
	for _, ch := range dry.Changes {
		keys = append(keys, ch.Key.String())
		if ch.Key.Type == "VPCRoutes" && (len(ch.Fields) != 1 || ch.Fields[0].Name != "Routes") {
			t.Errorf("%s: fields %+v, want Routes", ch.Key, ch.Fields)
		}
	}
	slices.Sort(keys)
	wantKeys := []string{"SourceDestCheck/" + f.ids[0], "SourceDestCheck/" + f.ids[1], "SourceDestCheck/" + f.ids[2], "VPCRoutes/" + f.main, "VPCRoutes/" + f.own}
	slices.Sort(wantKeys)
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("dry run's changes (-want +got):\n%s", diff)
	}
	var text strings.Builder
	if err := dry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "100.96.3.0/24") || !strings.Contains(text.String(), f.ids[2]) {
		t.Errorf("the dry run's text does not show the routes:\n%s", text.String())
	}
	if got := f.routes(t, f.main); len(got) != 0 {
		t.Fatalf("the dry run made routes: %v", got)
	}

	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	want := []string{"100.96.1.0/24 " + f.ids[0] + " active", "100.96.2.0/24 " + f.ids[1] + " active", "100.96.3.0/24 " + f.ids[2] + " active"}
	for _, table := range []string{f.main, f.own} {
		if diff := cmp.Diff(want, f.routes(t, table)); diff != "" {
			t.Errorf("table %s (-want +got):\n%s", table, diff)
		}
	}
	if got := f.checks(t); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("source/destination checks = %v, want all off", got)
	}

	srv := f.srv
	srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("the second round changed %v", p.Changes)
	}
	if diff := cmp.Diff(map[string]int{"DescribeInstances": 1, "DescribeRouteTables": 1}, srv.Calls()); diff != "" {
		t.Errorf("calls of a round with nothing to change (-want +got):\n%s", diff)
	}

	// The third node goes (its Node deleted): its range loses its route in both tables.
	delete(routes, "100.96.3.0/24")
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	for _, table := range []string{f.main, f.own} {
		if diff := cmp.Diff(want[:2], f.routes(t, table)); diff != "" {
			t.Errorf("table %s after a node went (-want +got):\n%s", table, diff)
		}
	}

	// The second node's instance is terminated, its Node not deleted yet: its route is a blackhole, which the next
	// round deletes, and its address is routed nowhere.
	if _, err := c.EC2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{f.ids[1]}}); err != nil {
		t.Fatal(err)
	}
	if got := f.routes(t, f.main); len(got) != 2 || !strings.HasSuffix(got[1], " blackhole") {
		t.Fatalf("the terminated instance's route: %v, want a blackhole", got)
	}
	mustRun(t, c, engine.Apply, f.graph(t, routes, &plan))
	if !slices.Contains(plan.Unmatched, f.ips[1]) {
		t.Errorf("unmatched = %v, want the terminated instance's address %s", plan.Unmatched, f.ips[1])
	}
	for _, table := range []string{f.main, f.own} {
		if diff := cmp.Diff(want[:1], f.routes(t, table)); diff != "" {
			t.Errorf("table %s after an instance went (-want +got):\n%s", table, diff)
		}
	}
	if p := mustRun(t, c, engine.DryRun, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("a round after the cleanup: %v", p.Changes)
	}
}

// TestPodRoutesLeaveOthersRoutes: a route not kubeup's (an internet gateway's) to a wanted range is refused,
// naming the table, the range and its target, and nothing of that table changes; one inside the pod range to a
// range not wanted (to the gateway, or to an instance not of the cluster), and the routes outside the pod range,
// are never touched.
func TestPodRoutesLeaveOthersRoutes(t *testing.T) {
	f := newRoutesFixture(t)
	ctx := context.Background()
	c := f.c
	igw, err := c.EC2.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EC2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: aws.String(f.vpc)}); err != nil {
		t.Fatal(err)
	}
	gw := aws.ToString(igw.InternetGateway.InternetGatewayId)
	for _, dst := range []string{"0.0.0.0/0", "100.96.1.0/24", "100.96.9.0/24"} {
		if _, err := c.EC2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(f.main), DestinationCidrBlock: aws.String(dst), GatewayId: aws.String(gw)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.EC2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(f.main), DestinationCidrBlock: aws.String("100.96.10.0/24"), InstanceId: aws.String(f.foreignID)}); err != nil {
		t.Fatal(err)
	}
	before := f.routes(t, f.main)
	routes := map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1]}
	_, err = runOnce(t, c, engine.Apply, f.graph(t, routes, nil))
	if err == nil || !strings.Contains(err.Error(), "routes[100.96.1.0/24]: route table "+f.main+" already routes it (target "+gw) {
		t.Fatalf("a foreign route to a wanted range: %v, want it refused naming it", err)
	}
	if diff := cmp.Diff(before, f.routes(t, f.main)); diff != "" {
		t.Errorf("the refused table changed (-before +after):\n%s", diff)
	}
	// The other table has no such route: it is routed.
	if got := f.routes(t, f.own); len(got) != 2 {
		t.Errorf("the subnet's own table: %v, want both ranges", got)
	}
	// Without the wanted range that the gateway holds, the main table takes the other and keeps the gateway's.
	delete(routes, "100.96.1.0/24")
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	want := append(slices.Clone(before), "100.96.2.0/24 "+f.ids[1]+" active")
	if diff := cmp.Diff(want, f.routes(t, f.main)); diff != "" {
		t.Errorf("the main table (-want +got):\n%s", diff)
	}
}

// TestPodRoutesLostRace: another control-plane node made the route between this round's read and its write
// (RouteAlreadyExists), or deleted the one it replaces (InvalidRoute.NotFound): the round does not fail, and the
// next converges.
func TestPodRoutesLostRace(t *testing.T) {
	f := newRoutesFixture(t)
	ctx := context.Background()
	c := f.c
	routes := map[string]string{"100.96.1.0/24": f.ips[0]}
	c.NewRun()
	plan, err := c.PlanPodRoutes(ctx, testPodCIDR, routes)
	if err != nil {
		t.Fatal(err)
	}
	v := plan.Tables[0]
	actual, err := v.Find(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// The other node routes the range to another instance first: this round's create is refused, harmlessly.
	if _, err := c.EC2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(v.RouteTable), DestinationCidrBlock: aws.String("100.96.1.0/24"), InstanceId: aws.String(f.ids[1])}); err != nil {
		t.Fatal(err)
	}
	if err := v.Render(ctx, c, actual, v, nil); err != nil {
		t.Fatalf("a lost race to create: %v", err)
	}
	// The next round replaces it; then the other node deletes it before this one's replace: it is created.
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil))
	routes["100.96.1.0/24"] = f.ips[2]
	c.NewRun()
	plan, err = c.PlanPodRoutes(ctx, testPodCIDR, routes)
	if err != nil {
		t.Fatal(err)
	}
	v = plan.Tables[0]
	if actual, err = v.Find(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EC2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(v.RouteTable), DestinationCidrBlock: aws.String("100.96.1.0/24")}); err != nil {
		t.Fatal(err)
	}
	if err := v.Render(ctx, c, actual, v, nil); err != nil {
		t.Fatalf("a lost race to replace: %v", err)
	}
	if got := f.routes(t, v.RouteTable); !slices.Equal(got, []string{"100.96.1.0/24 " + f.ids[2] + " active"}) {
		t.Errorf("routes = %v", got)
	}
	mustRun(t, c, engine.Apply, f.graph(t, routes, nil)) // the other table, the third instance's check
	if p := mustRun(t, c, engine.DryRun, f.graph(t, routes, nil)); !p.Empty() {
		t.Errorf("the next round: %v", p.Changes)
	}
}

// TestPodRoutesQuota: a table holds AWS's default quota of routes (50); one more is an error that names the quota
// and how to raise it.
func TestPodRoutesQuota(t *testing.T) {
	f := newRoutesFixture(t)
	routes := map[string]string{}
	for n := range 50 {
		routes[fmt.Sprintf("100.96.%d.0/24", n)] = f.ips[n%3]
	}
	mustRun(t, f.c, engine.Apply, f.graph(t, routes, nil))
	routes["100.96.50.0/24"] = f.ips[0]
	_, err := runOnce(t, f.c, engine.Apply, f.graph(t, routes, nil))
	if err == nil || !strings.Contains(err.Error(), "RouteLimitExceeded") || !strings.Contains(err.Error(), `"Routes per route table"`) {
		t.Errorf("the 51st route: %v, want RouteLimitExceeded and the quota to raise", err)
	}
}

// TestVPCRoutesValidate: a range outside the pod range, a range not in canonical form and a target that is not an
// instance are refused before anything runs.
func TestVPCRoutesValidate(t *testing.T) {
	for _, c := range []struct {
		routes map[string]string
		want   string
	}{
		{map[string]string{"10.1.0.0/24": "i-1"}, "not inside the cluster's pod range"},
		{map[string]string{"100.96.1.1/24": "i-1"}, "canonical form"},
		{map[string]string{"100.96.1.0/24": "igw-1"}, "not an instance id"},
	} {
		v := &VPCRoutes{RouteTable: "rtb-1", PodCIDR: testPodCIDR, Routes: c.routes}
		if err := v.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%v) = %v, want %q", c.routes, err, c.want)
		}
	}
	if err := (&VPCRoutes{RouteTable: "rtb-1", PodCIDR: testPodCIDR, Routes: map[string]string{"100.96.1.0/24": "i-1"}}).Validate(); err != nil {
		t.Errorf("a valid task: %v", err)
	}
}

// TestDeleteOwnedDeletesPodRoutes: deleting the cluster deletes the routes to its instances from every table
// (the dry run says so first), and leaves the others' routes.
func TestDeleteOwnedDeletesPodRoutes(t *testing.T) {
	f := newRoutesFixture(t)
	ctx := context.Background()
	c := f.c
	mustRun(t, c, engine.Apply, f.graph(t, map[string]string{"100.96.1.0/24": f.ips[0], "100.96.2.0/24": f.ips[1]}, nil))
	igw, err := c.EC2.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EC2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: aws.String(f.vpc)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EC2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(f.main), DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: igw.InternetGateway.InternetGatewayId}); err != nil {
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
		if strings.HasPrefix(k, "VPCRoute/") {
			routes = append(routes, k)
		}
	}
	want := []string{"VPCRoute/" + f.main + "/100.96.1.0/24", "VPCRoute/" + f.main + "/100.96.2.0/24", "VPCRoute/" + f.own + "/100.96.1.0/24", "VPCRoute/" + f.own + "/100.96.2.0/24"}
	slices.Sort(want)
	if diff := cmp.Diff(want, routes); diff != "" || !slices.Equal(dry, got) {
		t.Errorf("deleted (-want +got):\n%s\ndry run %v, apply %v", diff, dry, got)
	}
	if diff := cmp.Diff([]string{"0.0.0.0/0 " + aws.ToString(igw.InternetGateway.InternetGatewayId) + " active"}, f.routes(t, f.main)); diff != "" {
		t.Errorf("the main table's routes left (-want +got):\n%s", diff)
	}
	if got := f.routes(t, f.own); len(got) != 0 {
		t.Errorf("the subnet's table's routes left: %v", got)
	}
}
