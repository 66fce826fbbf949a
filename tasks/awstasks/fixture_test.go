package awstasks

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"kubeup.dev/kubeup/engine"
)

// network is what the user makes before kubeup runs: a VPC, a subnet per zone, an instance profile.
type network struct {
	vpc     string
	subnets []string // in zones a, b, c
	profile string
}

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// makeNetwork makes a VPC with three subnets and the instance profile "kubeup", as the user would.
func makeNetwork(t testing.TB, c *Cloud) network {
	t.Helper()
	ctx := context.Background()
	vpc, err := c.EC2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	n := network{vpc: aws.ToString(vpc.Vpc.VpcId), profile: "kubeup"}
	for i, z := range zones {
		sn, err := c.EC2.CreateSubnet(ctx, &ec2.CreateSubnetInput{
			VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(z), CidrBlock: aws.String("10.0." + string(rune('1'+i)) + ".0/24"),
		})
		if err != nil {
			t.Fatal(err)
		}
		n.subnets = append(n.subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	if _, err := c.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(n.profile)}); err != nil {
		t.Fatal(err)
	}
	return n
}

// spec is what a test varies in the cluster graph.
type spec struct {
	userData     string
	minSize      int32
	maxSize      int32
	subnets      []int // indexes into network.subnets of the nodes' group
	instanceType string
	image        string
}

func defaultSpec() spec {
	return spec{userData: "#!/bin/bash\necho nodes\n", minSize: 1, maxSize: 3, subnets: []int{0, 1, 2},
		instanceType: "m6i.large", image: "debian-12-amd64"}
}

// clusterGraph is a cluster's AWS graph as the model builds one: the user's network checked, two security groups
// with rules, a launch template and an Auto Scaling group per role, three etcd volumes.
func clusterGraph(n network, s spec) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		vpc := engine.Add(g, &VPC{ID: n.vpc}, validate)
		var subnets []*Subnet
		for i, id := range n.subnets {
			subnets = append(subnets, engine.Add(g, &Subnet{ID: id, VPC: vpc, Zone: aws.String(zones[i])}, validate))
		}
		profile := engine.Add(g, &InstanceProfile{Name: n.profile}, validate)
		owned := map[string]string{ClusterTag(testCluster): "owned"}
		cp := engine.Add(g, &SecurityGroup{Name: "control-plane." + testCluster, VPC: vpc, Tags: owned})
		nodes := engine.Add(g, &SecurityGroup{Name: "nodes." + testCluster, VPC: vpc, Tags: owned})
		cpRules := []*SecurityGroupRule{
			engine.Add(g, &SecurityGroupRule{Name: "control-plane." + testCluster + "/https", Group: cp, Protocol: "tcp",
				FromPort: aws.Int32(443), ToPort: aws.Int32(443), CIDR: aws.String("0.0.0.0/0")}),
			engine.Add(g, &SecurityGroupRule{Name: "control-plane." + testCluster + "/from-nodes", Group: cp, Protocol: "-1", SourceGroup: nodes}),
		}
		nodeRules := []*SecurityGroupRule{
			engine.Add(g, &SecurityGroupRule{Name: "nodes." + testCluster + "/from-control-plane", Group: nodes, Protocol: "-1", SourceGroup: cp}),
			engine.Add(g, &SecurityGroupRule{Name: "nodes." + testCluster + "/from-nodes", Group: nodes, Protocol: "-1", SourceGroup: nodes}),
		}
		engine.Add(g, &SecurityGroupIngress{Group: cp, Rules: cpRules})
		engine.Add(g, &SecurityGroupIngress{Group: nodes, Rules: nodeRules})
		for _, role := range []string{"control-plane", "nodes"} {
			group := nodes
			if role == "control-plane" {
				group = cp
			}
			lt := engine.Add(g, &LaunchTemplate{
				Name:             role + "." + testCluster,
				Image:            aws.String(s.image),
				InstanceType:     aws.String(s.instanceType),
				InstanceProfile:  profile,
				SecurityGroups:   []*SecurityGroup{group},
				RootVolumeSizeGB: aws.Int32(30),
				RootVolumeType:   aws.String("gp3"),
				Tags:             map[string]string{ClusterTag(testCluster): "owned", "k8s.io/role/" + role: "1"},
				MakeUserData:     func() (string, error) { return s.userData + "# " + role + "\n", nil },
			})
			var sns []*Subnet
			for _, i := range s.subnets {
				sns = append(sns, subnets[i])
			}
			engine.Add(g, &AutoScalingGroup{
				Name:           role + "." + testCluster,
				MinSize:        aws.Int32(s.minSize),
				MaxSize:        aws.Int32(s.maxSize),
				Subnets:        sns,
				LaunchTemplate: lt,
				Tags:           map[string]string{ClusterTag(testCluster): "owned", "k8s.io/role/" + role: "1"},
			})
		}
		for _, m := range []string{"a", "b", "c"} {
			engine.Add(g, etcdVolume(m, 20))
		}
		return g
	}
}
