package awstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// Subnet is one of the user's subnets the cluster runs in (spec.aws.subnets). kubeup checks that it exists, in
// the VPC and zone the spec says, and never creates or changes it: the model adds it with the lifecycle
// engine.ExistsAndValidates. Its key is "Subnet/<ID>".
type Subnet struct {
	// ID is the subnet's id: "subnet-0123456789abcdef0".
	ID string
	// VPC is the VPC the subnet must be in; nil: any.
	VPC *VPC
	// Zone is the availability zone the subnet must be in ("us-east-1a"); nil: any.
	Zone *string
	// CIDR is the subnet's IPv4 block (output).
	CIDR *string `kubeup:"output"`
}

var (
	_ engine.Resource[*Subnet, *Cloud] = (*Subnet)(nil)
	_ engine.Renderer[*Subnet, *Cloud] = (*Subnet)(nil)
	_ engine.Classed                   = (*Subnet)(nil)
)

func (s *Subnet) Key() engine.Key { return engine.Key{Type: "Subnet", Name: s.ID} }

func (s *Subnet) Deps() []engine.Task {
	if s.VPC == nil {
		return nil
	}
	return []engine.Task{s.VPC}
}

func (s *Subnet) APIClass() string { return "ec2" }

// Find reads the subnet: from the subnets of its VPC (one DescribeSubnets per VPC and run, shared by every
// subnet of the VPC), or by its id when the subnet is not there (it may be in another VPC) or names no VPC. nil
// when there is no such subnet.
func (s *Subnet) Find(ctx context.Context, c *Cloud) (*Subnet, error) {
	if s.VPC != nil {
		all, err := c.subnetsOf(ctx, s.VPC.ID)
		if err != nil {
			return nil, err
		}
		if found, ok := all[s.ID]; ok {
			return subnetFrom(found), nil
		}
	}
	found, err := c.reads.subnets.Of("id:"+s.ID).Get(ctx, func(ctx context.Context) (map[string]ec2types.Subnet, error) {
		out, err := c.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{s.ID}})
		if ErrorCode(err) == "InvalidSubnetID.NotFound" {
			return nil, nil
		}
		if err != nil {
			return nil, Classify("reading subnet "+s.ID, err)
		}
		m := map[string]ec2types.Subnet{}
		for _, sn := range out.Subnets {
			m[aws.ToString(sn.SubnetId)] = sn
		}
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	if sn, ok := found[s.ID]; ok {
		return subnetFrom(sn), nil
	}
	return nil, nil
}

func subnetFrom(sn ec2types.Subnet) *Subnet {
	return &Subnet{
		ID:   aws.ToString(sn.SubnetId),
		VPC:  &VPC{ID: aws.ToString(sn.VpcId)},
		Zone: sn.AvailabilityZone,
		CIDR: sn.CidrBlock,
	}
}

// CheckChanges has nothing to refuse: nothing of a subnet is changed.
func (s *Subnet) CheckChanges(actual, expected, changes *Subnet) error { return nil }

// Render never changes the world: the subnet is the user's. It is only reached when the task is not added with
// the lifecycle ExistsAndValidates.
func (s *Subnet) Render(ctx context.Context, c *Cloud, actual, expected, changes *Subnet) error {
	if actual == nil {
		return engine.Terminal(fmt.Errorf("subnet %s does not exist in %s: kubeup never creates a subnet; create it, or name "+
			"an existing one in spec.aws.subnets", expected.ID, c.Region))
	}
	return engine.Terminal(fmt.Errorf("subnet %s is in VPC %s and zone %s, not what the spec says (VPC %s, zone %s): kubeup never "+
		"changes a subnet; name the right subnet for the zone in spec.aws.subnets", expected.ID, actual.VPC.ID, aws.ToString(actual.Zone),
		vpcID(expected.VPC), valueOr(expected.Zone, "any")))
}

func vpcID(v *VPC) string {
	if v == nil {
		return "any"
	}
	return v.ID
}
