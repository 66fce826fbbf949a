package fakeaws

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// routesVPC is a VPC with a subnet and one running instance in it.
type routesVPC struct {
	vpc, subnet, instance string
}

func (f *ec2Fake) routesVPC(t *testing.T, cidr, subnetCIDR string) routesVPC {
	t.Helper()
	v := ok[*ec2.CreateVpcOutput](t, "CreateVpc")(f.ec2.CreateVpc(f.ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)}))
	sn := ok[*ec2.CreateSubnetOutput](t, "CreateSubnet")(f.ec2.CreateSubnet(f.ctx, &ec2.CreateSubnetInput{VpcId: v.Vpc.VpcId, CidrBlock: aws.String(subnetCIDR)}))
	run := ok[*ec2.RunInstancesOutput](t, "RunInstances")(f.ec2.RunInstances(f.ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-00000000000000001"),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: sn.Subnet.SubnetId}))
	return routesVPC{vpc: aws.ToString(v.Vpc.VpcId), subnet: aws.ToString(sn.Subnet.SubnetId), instance: aws.ToString(run.Instances[0].InstanceId)}
}

func (f *ec2Fake) routeTables(t *testing.T, filters ...types.Filter) []types.RouteTable {
	t.Helper()
	return ok[*ec2.DescribeRouteTablesOutput](t, "DescribeRouteTables")(f.ec2.DescribeRouteTables(f.ctx, &ec2.DescribeRouteTablesInput{Filters: filters})).RouteTables
}

// routesOf is a table's routes as "destination target state".
func routesOf(rt types.RouteTable) []string {
	var out []string
	for _, r := range rt.Routes {
		target := aws.ToString(r.GatewayId) + aws.ToString(r.InstanceId)
		out = append(out, aws.ToString(r.DestinationCidrBlock)+" "+target+" "+string(r.State))
	}
	return out
}

// TestRouteTables: a VPC comes with its main route table and its local route; routes to an instance are
// created, replaced and deleted, with EC2's errors for a route that exists, one that does not, the local route, an
// instance that does not exist or is of another VPC; a terminated instance's route is a blackhole; a subnet with
// a table of its own is described as that table's association; DeleteVpc removes the main table.
func TestRouteTables(t *testing.T) {
	f := newEC2Fake(t)
	a := f.routesVPC(t, "10.0.0.0/16", "10.0.1.0/24")
	other := f.routesVPC(t, "10.1.0.0/16", "10.1.1.0/24")

	mains := f.routeTables(t, ec2Filter("vpc-id", a.vpc), ec2Filter("association.main", "true"))
	if len(mains) != 1 || len(mains[0].Associations) != 1 || !aws.ToBool(mains[0].Associations[0].Main) {
		t.Fatalf("the VPC's main tables: %+v", mains)
	}
	main := aws.ToString(mains[0].RouteTableId)
	if got := routesOf(mains[0]); len(got) != 1 || got[0] != "10.0.0.0/16 local active" || mains[0].Routes[0].Origin != types.RouteOriginCreateRouteTable {
		t.Fatalf("the main table's routes: %v", got)
	}

	route := func(dest, instance string) *ec2.CreateRouteInput {
		return &ec2.CreateRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String(dest), InstanceId: aws.String(instance)}
	}
	ok[*ec2.CreateRouteOutput](t, "CreateRoute")(f.ec2.CreateRoute(f.ctx, route("100.96.1.0/24", a.instance)))
	_, err := f.ec2.CreateRoute(f.ctx, route("100.96.1.0/24", a.instance))
	wantCode(t, "CreateRoute again", err, "RouteAlreadyExists")
	_, err = f.ec2.CreateRoute(f.ctx, route("10.0.0.0/16", a.instance))
	wantCode(t, "CreateRoute of the local route's destination", err, "RouteAlreadyExists")
	_, err = f.ec2.CreateRoute(f.ctx, route("100.96.2.0/24", "i-00000000000000fff"))
	wantCode(t, "CreateRoute to no instance", err, "InvalidInstanceID.NotFound")
	_, err = f.ec2.CreateRoute(f.ctx, route("100.96.2.0/24", "x-1"))
	wantCode(t, "CreateRoute to a malformed id", err, "InvalidInstanceID.Malformed")
	_, err = f.ec2.CreateRoute(f.ctx, route("100.96.2.0/24", other.instance))
	wantCode(t, "CreateRoute to another VPC's instance", err, "InvalidParameterValue")
	_, err = f.ec2.CreateRoute(f.ctx, route("100.96.2.1/24", a.instance))
	wantCode(t, "CreateRoute to a CIDR not in canonical form", err, "InvalidParameterValue")
	_, err = f.ec2.CreateRoute(f.ctx, &ec2.CreateRouteInput{RouteTableId: aws.String("rtb-00000000000000fff"), DestinationCidrBlock: aws.String("100.96.2.0/24"), InstanceId: aws.String(a.instance)})
	wantCode(t, "CreateRoute in no table", err, "InvalidRouteTableID.NotFound")
	_, err = f.ec2.CreateRoute(f.ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("100.96.2.0/24")})
	wantCode(t, "CreateRoute without a target", err, "MissingParameter")

	_, err = f.ec2.ReplaceRoute(f.ctx, &ec2.ReplaceRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("100.96.9.0/24"), InstanceId: aws.String(a.instance)})
	wantCode(t, "ReplaceRoute of no route", err, "InvalidRoute.NotFound")
	_, err = f.ec2.ReplaceRoute(f.ctx, &ec2.ReplaceRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("10.0.0.0/16"), InstanceId: aws.String(a.instance)})
	wantCode(t, "ReplaceRoute of the local route", err, "InvalidParameterValue")
	_, err = f.ec2.DeleteRoute(f.ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("10.0.0.0/16")})
	wantCode(t, "DeleteRoute of the local route", err, "InvalidParameterValue")
	_, err = f.ec2.DeleteRoute(f.ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("100.96.9.0/24")})
	wantCode(t, "DeleteRoute of no route", err, "InvalidRoute.NotFound")

	// A second instance: the route moves to it; the first is terminated: a route to it is a blackhole.
	run := ok[*ec2.RunInstancesOutput](t, "RunInstances")(f.ec2.RunInstances(f.ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-00000000000000001"),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(a.subnet)}))
	second := aws.ToString(run.Instances[0].InstanceId)
	ok[*ec2.ReplaceRouteOutput](t, "ReplaceRoute")(f.ec2.ReplaceRoute(f.ctx, &ec2.ReplaceRouteInput{RouteTableId: aws.String(main),
		DestinationCidrBlock: aws.String("100.96.1.0/24"), InstanceId: aws.String(second)}))
	ok[*ec2.CreateRouteOutput](t, "CreateRoute")(f.ec2.CreateRoute(f.ctx, route("100.96.2.0/24", a.instance)))
	ok[*ec2.TerminateInstancesOutput](t, "TerminateInstances")(f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{a.instance}}))
	_, err = f.ec2.CreateRoute(f.ctx, route("100.96.3.0/24", a.instance))
	wantCode(t, "CreateRoute to a terminated instance", err, "IncorrectInstanceState")
	got := f.routeTables(t, ec2Filter("route-table-id", main))
	want := []string{"10.0.0.0/16 local active", "100.96.1.0/24 " + second + " active", "100.96.2.0/24 " + a.instance + " blackhole"}
	if g := routesOf(got[0]); len(g) != 3 || g[0] != want[0] || g[1] != want[1] || g[2] != want[2] {
		t.Fatalf("routes = %v, want %v", g, want)
	}
	if r := got[0].Routes[1]; aws.ToString(r.NetworkInterfaceId) == "" || aws.ToString(r.InstanceOwnerId) != AccountID || r.Origin != types.RouteOriginCreateRoute {
		t.Errorf("a route to an instance: %+v", r)
	}
	if bh := f.routeTables(t, ec2Filter("route.state", "blackhole")); len(bh) != 1 || aws.ToString(bh[0].RouteTableId) != main {
		t.Errorf("the tables with a blackhole: %+v", bh)
	}
	ok[*ec2.DeleteRouteOutput](t, "DeleteRoute")(f.ec2.DeleteRoute(f.ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("100.96.2.0/24")}))

	// A table of the subnet's own: the subnet's association is its, the main table keeps the main one.
	own := ok[*ec2.CreateRouteTableOutput](t, "CreateRouteTable")(f.ec2.CreateRouteTable(f.ctx, &ec2.CreateRouteTableInput{VpcId: aws.String(a.vpc)})).RouteTable
	if routesOf(*own)[0] != "10.0.0.0/16 local active" {
		t.Errorf("a new table's routes: %v", routesOf(*own))
	}
	assoc := ok[*ec2.AssociateRouteTableOutput](t, "AssociateRouteTable")(f.ec2.AssociateRouteTable(f.ctx, &ec2.AssociateRouteTableInput{RouteTableId: own.RouteTableId, SubnetId: aws.String(a.subnet)}))
	_, err = f.ec2.AssociateRouteTable(f.ctx, &ec2.AssociateRouteTableInput{RouteTableId: own.RouteTableId, SubnetId: aws.String(other.subnet)})
	wantCode(t, "AssociateRouteTable of another VPC's subnet", err, "InvalidParameterValue")
	bySubnet := f.routeTables(t, ec2Filter("association.subnet-id", a.subnet))
	if len(bySubnet) != 1 || aws.ToString(bySubnet[0].RouteTableId) != aws.ToString(own.RouteTableId) ||
		aws.ToString(bySubnet[0].Associations[0].RouteTableAssociationId) != aws.ToString(assoc.AssociationId) {
		t.Errorf("the subnet's table: %+v", bySubnet)
	}
	if all := f.routeTables(t, ec2Filter("vpc-id", a.vpc)); len(all) != 2 {
		t.Errorf("the VPC's tables: %d, want 2", len(all))
	}
	_, err = f.ec2.DeleteRouteTable(f.ctx, &ec2.DeleteRouteTableInput{RouteTableId: own.RouteTableId})
	wantCode(t, "DeleteRouteTable of an associated table", err, "DependencyViolation")
	_, err = f.ec2.DeleteRouteTable(f.ctx, &ec2.DeleteRouteTableInput{RouteTableId: aws.String(main)})
	wantCode(t, "DeleteRouteTable of the main table", err, "DependencyViolation")
	ok[*ec2.DisassociateRouteTableOutput](t, "DisassociateRouteTable")(f.ec2.DisassociateRouteTable(f.ctx, &ec2.DisassociateRouteTableInput{AssociationId: assoc.AssociationId}))
	ok[*ec2.DeleteRouteTableOutput](t, "DeleteRouteTable")(f.ec2.DeleteRouteTable(f.ctx, &ec2.DeleteRouteTableInput{RouteTableId: own.RouteTableId}))

	// An internet gateway of the VPC is a route's target too.
	igw := ok[*ec2.CreateInternetGatewayOutput](t, "CreateInternetGateway")(f.ec2.CreateInternetGateway(f.ctx, &ec2.CreateInternetGatewayInput{})).InternetGateway.InternetGatewayId
	_, err = f.ec2.CreateRoute(f.ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: igw})
	wantCode(t, "CreateRoute to a detached gateway", err, "InvalidParameterValue")
	ok[*ec2.AttachInternetGatewayOutput](t, "AttachInternetGateway")(f.ec2.AttachInternetGateway(f.ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw, VpcId: aws.String(a.vpc)}))
	ok[*ec2.CreateRouteOutput](t, "CreateRoute")(f.ec2.CreateRoute(f.ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(main), DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: igw}))
	if byGW := f.routeTables(t, ec2Filter("route.gateway-id", aws.ToString(igw))); len(byGW) != 1 {
		t.Errorf("the tables routing to the gateway: %+v", byGW)
	}

	// The VPC goes: its subnet's instances, the subnet, the gateway, then the VPC and its main table.
	ok[*ec2.TerminateInstancesOutput](t, "TerminateInstances")(f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{second}}))
	_, err = f.ec2.DeleteVpc(f.ctx, &ec2.DeleteVpcInput{VpcId: aws.String(a.vpc)})
	wantCode(t, "DeleteVpc with its subnet", err, "DependencyViolation")
	f.s.mu.Lock()
	for _, i := range f.s.ec2.instances {
		if i.subnet == a.subnet {
			delete(f.s.ec2.instances, i.id) // terminated instances leave EC2's answers in time
		}
	}
	f.s.mu.Unlock()
	ok[*ec2.DeleteSubnetOutput](t, "DeleteSubnet")(f.ec2.DeleteSubnet(f.ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(a.subnet)}))
	_, err = f.ec2.DeleteVpc(f.ctx, &ec2.DeleteVpcInput{VpcId: aws.String(a.vpc)})
	wantCode(t, "DeleteVpc with its gateway", err, "DependencyViolation")
	ok[*ec2.DetachInternetGatewayOutput](t, "DetachInternetGateway")(f.ec2.DetachInternetGateway(f.ctx, &ec2.DetachInternetGatewayInput{InternetGatewayId: igw, VpcId: aws.String(a.vpc)}))
	ok[*ec2.DeleteInternetGatewayOutput](t, "DeleteInternetGateway")(f.ec2.DeleteInternetGateway(f.ctx, &ec2.DeleteInternetGatewayInput{InternetGatewayId: igw}))
	ok[*ec2.DeleteVpcOutput](t, "DeleteVpc")(f.ec2.DeleteVpc(f.ctx, &ec2.DeleteVpcInput{VpcId: aws.String(a.vpc)}))
	if left := f.routeTables(t, ec2Filter("vpc-id", a.vpc)); len(left) != 0 {
		t.Errorf("the deleted VPC's tables: %+v", left)
	}
}

// TestRouteLimit: a table holds maxRoutesPerTable routes beside its local one; one more is RouteLimitExceeded.
func TestRouteLimit(t *testing.T) {
	f := newEC2Fake(t)
	a := f.routesVPC(t, "10.0.0.0/16", "10.0.1.0/24")
	main := aws.ToString(f.routeTables(t, ec2Filter("vpc-id", a.vpc))[0].RouteTableId)
	create := func(n int) error {
		_, err := f.ec2.CreateRoute(f.ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(main),
			DestinationCidrBlock: aws.String(fmt.Sprintf("100.96.%d.0/24", n)), InstanceId: aws.String(a.instance)})
		return err
	}
	for n := range maxRoutesPerTable {
		if err := create(n); err != nil {
			t.Fatalf("route %d: %v", n, err)
		}
	}
	wantCode(t, "one route more", create(maxRoutesPerTable), "RouteLimitExceeded")
}

// TestSourceDestCheck: an instance's source/destination check is on, and off once ModifyInstanceAttribute says
// so, as DescribeInstances, its filter and DescribeInstanceAttribute tell; other attributes are refused.
func TestSourceDestCheck(t *testing.T) {
	f := newEC2Fake(t)
	a := f.routesVPC(t, "10.0.0.0/16", "10.0.1.0/24")
	check := func() bool {
		t.Helper()
		out := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{a.instance}}))
		return aws.ToBool(out.Reservations[0].Instances[0].SourceDestCheck)
	}
	if !check() {
		t.Fatal("a new instance's source/destination check is off")
	}
	ok[*ec2.ModifyInstanceAttributeOutput](t, "ModifyInstanceAttribute")(f.ec2.ModifyInstanceAttribute(f.ctx, &ec2.ModifyInstanceAttributeInput{
		InstanceId: aws.String(a.instance), SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}}))
	if check() {
		t.Error("the source/destination check is on after it was turned off")
	}
	off := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("source-dest-check", "false")}}))
	if len(off.Reservations) != 1 {
		t.Errorf("the instances whose check is off: %+v", off.Reservations)
	}
	attr := ok[*ec2.DescribeInstanceAttributeOutput](t, "DescribeInstanceAttribute")(f.ec2.DescribeInstanceAttribute(f.ctx, &ec2.DescribeInstanceAttributeInput{
		InstanceId: aws.String(a.instance), Attribute: types.InstanceAttributeNameSourceDestCheck}))
	if attr.SourceDestCheck == nil || aws.ToBool(attr.SourceDestCheck.Value) {
		t.Errorf("DescribeInstanceAttribute sourceDestCheck: %+v", attr.SourceDestCheck)
	}
	_, err := f.ec2.ModifyInstanceAttribute(f.ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(a.instance), InstanceType: &types.AttributeValue{Value: aws.String("m5.large")}})
	wantCode(t, "ModifyInstanceAttribute of another attribute", err, "InvalidParameterCombination")
	_, err = f.ec2.ModifyInstanceAttribute(f.ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String("i-00000000000000fff"), SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}})
	wantCode(t, "ModifyInstanceAttribute of no instance", err, "InvalidInstanceID.NotFound")
}
