package fakeaws

import (
	"testing"
)

// TestAWSCLIRoutes drives the route tables and the source/destination check with the AWS CLI: a VPC's main table
// found by its filters, routes to an instance created, replaced and deleted (and EC2's error codes for a route
// that exists or does not), a terminated instance's route a blackhole, and modify-instance-attribute's
// --no-source-dest-check as describe-instances and describe-instance-attribute report it.
func TestAWSCLIRoutes(t *testing.T) {
	t.Parallel() // the CLI takes a second or more to start: overlap with the other tests
	_, srv := startFakeAWS(t)
	aws := newEC2CLI(t, srv.URL)

	var vpc struct{ Vpc struct{ VpcId string } }
	aws.do(&vpc, "ec2", "create-vpc", "--cidr-block", "10.0.0.0/16")
	var sn struct{ Subnet struct{ SubnetId string } }
	aws.do(&sn, "ec2", "create-subnet", "--vpc-id", vpc.Vpc.VpcId, "--cidr-block", "10.0.1.0/24")
	var run struct{ Instances []struct{ InstanceId string } }
	aws.do(&run, "ec2", "run-instances", "--image-id", "ami-00000000000000001", "--count", "2", "--subnet-id", sn.Subnet.SubnetId)
	if len(run.Instances) != 2 {
		t.Fatalf("run-instances: %+v", run)
	}
	i1, i2 := run.Instances[0].InstanceId, run.Instances[1].InstanceId

	type cliRoute struct{ DestinationCidrBlock, GatewayId, InstanceId, NetworkInterfaceId, State, Origin string }
	var tables struct {
		RouteTables []struct {
			RouteTableId, VpcId string
			Routes              []cliRoute
			Associations        []struct {
				Main                    bool
				RouteTableAssociationId string
			}
		}
	}
	aws.do(&tables, "ec2", "describe-route-tables", "--filters", "Name=vpc-id,Values="+vpc.Vpc.VpcId, "Name=association.main,Values=true")
	if len(tables.RouteTables) != 1 || len(tables.RouteTables[0].Routes) != 1 || tables.RouteTables[0].Routes[0].GatewayId != "local" ||
		tables.RouteTables[0].Routes[0].DestinationCidrBlock != "10.0.0.0/16" || !tables.RouteTables[0].Associations[0].Main {
		t.Fatalf("describe-route-tables of the VPC's main table: %+v", tables)
	}
	rtb := tables.RouteTables[0].RouteTableId

	aws.do(nil, "ec2", "create-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.1.0/24", "--instance-id", i1)
	aws.fails("RouteAlreadyExists", "ec2", "create-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.1.0/24", "--instance-id", i2)
	aws.fails("InvalidInstanceID.NotFound", "ec2", "create-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.2.0/24", "--instance-id", "i-00000000000000fff")
	aws.fails("InvalidRouteTableID.NotFound", "ec2", "create-route", "--route-table-id", "rtb-00000000000000fff", "--destination-cidr-block", "100.96.2.0/24", "--instance-id", i1)
	aws.fails("InvalidRoute.NotFound", "ec2", "replace-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.9.0/24", "--instance-id", i1)
	aws.fails("InvalidRoute.NotFound", "ec2", "delete-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.9.0/24")
	aws.do(nil, "ec2", "replace-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.1.0/24", "--instance-id", i2)
	aws.do(nil, "ec2", "create-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.2.0/24", "--instance-id", i1)
	aws.do(nil, "ec2", "terminate-instances", "--instance-ids", i1)

	aws.do(&tables, "ec2", "describe-route-tables", "--route-table-ids", rtb)
	got := tables.RouteTables[0].Routes
	if len(got) != 3 || got[1].InstanceId != i2 || got[1].State != "active" || got[1].Origin != "CreateRoute" || got[1].NetworkInterfaceId == "" ||
		got[2].InstanceId != i1 || got[2].State != "blackhole" {
		t.Fatalf("describe-route-tables after the changes: %+v", got)
	}
	aws.do(&tables, "ec2", "describe-route-tables", "--filters", "Name=route.instance-id,Values="+i2)
	if len(tables.RouteTables) != 1 || tables.RouteTables[0].RouteTableId != rtb {
		t.Errorf("describe-route-tables by the route's instance: %+v", tables)
	}
	aws.do(nil, "ec2", "delete-route", "--route-table-id", rtb, "--destination-cidr-block", "100.96.2.0/24")

	// The source/destination check: on, then off.
	type instances struct {
		Reservations []struct {
			Instances []struct {
				InstanceId      string
				SourceDestCheck bool
			}
		}
	}
	var before, after instances
	aws.do(&before, "ec2", "describe-instances", "--instance-ids", i2)
	aws.do(nil, "ec2", "modify-instance-attribute", "--instance-id", i2, "--no-source-dest-check")
	aws.do(&after, "ec2", "describe-instances", "--instance-ids", i2)
	if !before.Reservations[0].Instances[0].SourceDestCheck || after.Reservations[0].Instances[0].SourceDestCheck {
		t.Errorf("sourceDestCheck before %+v, after %+v: want true, then false", before, after)
	}
	var attr struct{ SourceDestCheck struct{ Value bool } }
	aws.do(&attr, "ec2", "describe-instance-attribute", "--instance-id", i2, "--attribute", "sourceDestCheck")
	if attr.SourceDestCheck.Value {
		t.Errorf("describe-instance-attribute sourceDestCheck: %+v", attr)
	}
	aws.do(nil, "ec2", "modify-instance-attribute", "--instance-id", i2, "--source-dest-check")
	aws.do(&after, "ec2", "describe-instances", "--instance-ids", i2)
	if !after.Reservations[0].Instances[0].SourceDestCheck {
		t.Errorf("sourceDestCheck after --source-dest-check: %+v", after)
	}
}
