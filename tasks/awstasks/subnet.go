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
// engine.ExistsAndValidates. Find never returns nil, nor a subnet of another VPC or zone than the task says: a
// subnet that is not there is its terminal error (wrapping engine.ErrNotFound), one elsewhere a terminal error,
// each naming the spec's field (SpecPath), the region, the zone and the fix. Its key is "Subnet/<ID>".
type Subnet struct {
	// ID is the subnet's id: "subnet-0123456789abcdef0".
	ID string
	// SpecPath is the field of the spec that names the subnet ("spec.aws.subnets[2]"), for its errors; "": none.
	SpecPath string `kubeup:"-"`
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
// subnet of the VPC), or by its id when the subnet is not there (it may be in another VPC) or names no VPC. A
// subnet that is not there, or not in the VPC and zone the task says, is an error (see Subnet).
func (s *Subnet) Find(ctx context.Context, c *Cloud) (*Subnet, error) {
	a, err := s.find(ctx, c)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, s.missing(c)
	}
	if s.elsewhere(a) {
		return nil, s.misplaced(c, a)
	}
	return a, nil
}

func (s *Subnet) find(ctx context.Context, c *Cloud) (*Subnet, error) {
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

// elsewhere reports whether the subnet found (a) is in another VPC or zone than the task says.
func (s *Subnet) elsewhere(a *Subnet) bool {
	return s.VPC != nil && (a.VPC == nil || a.VPC.ID != s.VPC.ID) || s.Zone != nil && aws.ToString(a.Zone) != *s.Zone
}

// missing is the error of a subnet that is not there.
func (s *Subnet) missing(c *Cloud) error {
	where := "region " + c.Region
	if s.Zone != nil {
		where = "zone " + *s.Zone + " of region " + c.Region
	}
	return engine.Terminal(fmt.Errorf("%s: kubeup never creates a subnet; create it in VPC %s and %s, or name an existing one "+
		"of that zone: %w", specSays(s.SpecPath, fmt.Sprintf("subnet %s does not exist in region %s", s.ID, c.Region)), vpcID(s.VPC), where,
		engine.ErrNotFound))
}

// misplaced is the error of a subnet found (a) in another VPC or zone than the task says.
func (s *Subnet) misplaced(c *Cloud, a *Subnet) error {
	return engine.Terminal(fmt.Errorf("%s: kubeup never changes a subnet; name the subnet of zone %s in VPC %s",
		specSays(s.SpecPath, fmt.Sprintf("subnet %s is in zone %s of VPC %s (region %s), not in zone %s of VPC %s as the spec says",
			s.ID, aws.ToString(a.Zone), vpcID(a.VPC), c.Region, valueOr(s.Zone, "any"), vpcID(s.VPC))),
		valueOr(s.Zone, "any"), vpcID(s.VPC)))
}

// CheckChanges has nothing to refuse: nothing of a subnet is changed.
func (s *Subnet) CheckChanges(actual, expected, changes *Subnet) error { return nil }

// Render never changes the world: the subnet is the user's (Find fails when it is not there or elsewhere).
func (s *Subnet) Render(ctx context.Context, c *Cloud, actual, expected, changes *Subnet) error {
	if actual == nil {
		return expected.missing(c)
	}
	return expected.misplaced(c, actual)
}

func vpcID(v *VPC) string {
	if v == nil {
		return "any"
	}
	return v.ID
}
