package awstasks

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// VPC is the user's VPC the cluster runs in (spec.aws.vpcID). kubeup checks that it exists and never creates or
// changes it: the model adds it with the lifecycle engine.ExistsAndValidates. Find never returns nil: a VPC that
// is not there is its terminal error (wrapping engine.ErrNotFound), which names the spec's field (SpecPath), the
// region and the fix. Its key is "VPC/<ID>".
type VPC struct {
	// ID is the VPC's id: "vpc-0123456789abcdef0".
	ID string
	// SpecPath is the field of the spec that names the VPC ("spec.aws.vpcID"), for its errors; "": none.
	SpecPath string `kubeup:"-"`
	// PodCIDR is the cluster's pod range, which kubenet's routes (VPCRoutes) route through the VPC's tables; ""
	// when none is. A pod range that overlaps the VPC's blocks is refused: the VPC's local route holds those
	// addresses, and no route to an instance can take them.
	PodCIDR string `kubeup:"-"`
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

// Find reads the VPC (one DescribeVpcs per VPC and run); a VPC that is not there is an error (see VPC).
func (v *VPC) Find(ctx context.Context, c *Cloud) (*VPC, error) {
	found, err := c.vpc(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, v.missing(c)
	}
	if err := v.checkPodCIDR(found); err != nil {
		return nil, err
	}
	return &VPC{ID: aws.ToString(found.VpcId), CIDR: found.CidrBlock, PodCIDR: v.PodCIDR}, nil
}

// checkPodCIDR refuses a pod range that overlaps one of the VPC's IPv4 blocks.
func (v *VPC) checkPodCIDR(found *ec2types.Vpc) error {
	pod, err := netip.ParsePrefix(v.PodCIDR)
	if err != nil {
		return nil // none, or not a range: the spec's validation says so
	}
	blocks := []string{aws.ToString(found.CidrBlock)}
	for _, a := range found.CidrBlockAssociationSet {
		blocks = append(blocks, aws.ToString(a.CidrBlock))
	}
	for _, b := range blocks {
		if p, err := netip.ParsePrefix(b); err == nil && p.Overlaps(pod) {
			return engine.Terminal(fmt.Errorf("spec.networking.podCIDR: %s overlaps %s of VPC %s (spec.aws.vpcID): the VPC's local route holds those addresses, "+
				"and kubenet's routes to the nodes' instances cannot; give the cluster a pod range outside the VPC's (the default, 100.96.0.0/11)", pod, p, v.ID))
		}
	}
	return nil
}

// CheckChanges has nothing to refuse: a VPC has no field kubeup could change.
func (v *VPC) CheckChanges(actual, expected, changes *VPC) error { return nil }

// missing is the error of a VPC that is not there.
func (v *VPC) missing(c *Cloud) error {
	return engine.Terminal(fmt.Errorf("%s: kubeup never creates a VPC; create it (with a subnet per zone) or name an existing "+
		"one: %w", specSays(v.SpecPath, fmt.Sprintf("VPC %s does not exist in region %s", v.ID, c.Region)), engine.ErrNotFound))
}

// specSays is what, said of the spec's field path (spec.aws.subnets[2]: what) when there is one.
func specSays(path, what string) string {
	if path == "" {
		return what
	}
	return path + ": " + what
}

// Render never changes the world: the VPC is the user's (Find fails when it is not there).
func (v *VPC) Render(ctx context.Context, c *Cloud, actual, expected, changes *VPC) error {
	return expected.missing(c)
}
