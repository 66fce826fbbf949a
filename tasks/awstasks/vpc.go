package awstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"kubeup.dev/kubeup/engine"
)

// VPC is the user's VPC the cluster runs in (spec.aws.vpcID). kubeup checks that it exists and never creates or
// changes it: the model adds it with the lifecycle engine.ExistsAndValidates. Its key is "VPC/<ID>".
type VPC struct {
	// ID is the VPC's id: "vpc-0123456789abcdef0".
	ID string
	// CIDR is the VPC's primary IPv4 block (output).
	CIDR *string `kubeup:"output"`
}

var (
	_ engine.Resource[*VPC, *Cloud] = (*VPC)(nil)
	_ engine.Renderer[*VPC, *Cloud] = (*VPC)(nil)
	_ engine.Classed                = (*VPC)(nil)
)

func (v *VPC) Key() engine.Key     { return engine.Key{Type: "VPC", Name: v.ID} }
func (v *VPC) Deps() []engine.Task { return nil }
func (v *VPC) APIClass() string    { return "ec2" }

// Find reads the VPC (one DescribeVpcs per VPC and run); nil when there is none.
func (v *VPC) Find(ctx context.Context, c *Cloud) (*VPC, error) {
	found, err := c.vpc(ctx, v.ID)
	if err != nil || found == nil {
		return nil, err
	}
	return &VPC{ID: aws.ToString(found.VpcId), CIDR: found.CidrBlock}, nil
}

// CheckChanges has nothing to refuse: a VPC has no field kubeup could change.
func (v *VPC) CheckChanges(actual, expected, changes *VPC) error { return nil }

// Render never changes the world: the VPC is the user's. It is only reached when the task is not added with the
// lifecycle ExistsAndValidates, and the VPC does not exist.
func (v *VPC) Render(ctx context.Context, c *Cloud, actual, expected, changes *VPC) error {
	return engine.Terminal(fmt.Errorf("VPC %s does not exist in %s: kubeup never creates a VPC; create it (with a subnet per zone) "+
		"and name it in spec.aws.vpcID", expected.ID, c.Region))
}
