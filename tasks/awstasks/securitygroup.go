package awstasks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// SecurityGroup is a security group the cluster owns in its VPC ("control-plane.<cluster>", "nodes.<cluster>").
// Its ingress rules are SecurityGroupRule tasks, and their set a SecurityGroupIngress. It is found by name and VPC among the groups tagged with the
// cluster's ownership tag. Its key is "SecurityGroup/<Name>".
type SecurityGroup struct {
	// Name is the group's name, unique in its VPC.
	Name string
	// VPC is the VPC the group is in. Required to create; cannot change.
	VPC *VPC
	// Description is the group's description (nil: its name, on create). Cannot change: EC2 has no call for it.
	Description *string
	// Tags are the group's tags besides Name and the ownership tag (see the package's tag rules).
	Tags map[string]string `kubeup:"nilempty"`

	// ID is the group's id (output).
	ID *string `kubeup:"output"`

	rawTags map[string]string
}

var (
	_ engine.Resource[*SecurityGroup, *Cloud] = (*SecurityGroup)(nil)
	_ engine.Renderer[*SecurityGroup, *Cloud] = (*SecurityGroup)(nil)
	_ engine.Classed                          = (*SecurityGroup)(nil)
)

func (g *SecurityGroup) Key() engine.Key { return engine.Key{Type: "SecurityGroup", Name: g.Name} }

func (g *SecurityGroup) Deps() []engine.Task {
	if g.VPC == nil {
		return nil
	}
	return []engine.Task{g.VPC}
}

func (g *SecurityGroup) APIClass() string { return "ec2" }

// Find looks the group up among the cluster's security groups (one DescribeSecurityGroups per run for all).
func (g *SecurityGroup) Find(ctx context.Context, c *Cloud) (*SecurityGroup, error) {
	all, err := c.securityGroups(ctx)
	if err != nil {
		return nil, err
	}
	var found []ec2types.SecurityGroup
	for _, sg := range all {
		if aws.ToString(sg.GroupName) == g.Name && (g.VPC == nil || aws.ToString(sg.VpcId) == g.VPC.ID) {
			found = append(found, sg)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		ids := make([]string, len(found))
		for i, sg := range found {
			ids[i] = aws.ToString(sg.GroupId) + " in " + aws.ToString(sg.VpcId)
		}
		return nil, engine.Terminal(fmt.Errorf("%d security groups are named %s and owned by the cluster (%s): name the VPC "+
			"of the group in the spec, or delete the ones that are not the cluster's", len(found), g.Name, strings.Join(ids, ", ")))
	}
	sg := found[0]
	raw := tagsOf(sg.Tags)
	return &SecurityGroup{
		Name:        g.Name,
		VPC:         &VPC{ID: aws.ToString(sg.VpcId)},
		Description: sg.Description,
		Tags:        c.tagView(raw, g.Tags),
		ID:          sg.GroupId,
		rawTags:     raw,
	}, nil
}

// CheckChanges requires a VPC to create, and refuses to change the VPC or the description.
func (g *SecurityGroup) CheckChanges(actual, expected, changes *SecurityGroup) error {
	if expected.Name == "" {
		return errors.New("field Name of a security group is empty")
	}
	if actual == nil {
		if expected.VPC == nil {
			return fmt.Errorf("field VPC is required to create security group %s", expected.Name)
		}
		return nil
	}
	if changes.VPC != nil {
		return fmt.Errorf("field VPC of security group %s (%s) cannot change from %s to %s: a group stays in its VPC; "+
			"delete the cluster's groups in %s (kubeup delete cluster) or keep the VPC",
			expected.Name, aws.ToString(actual.ID), actual.VPC.ID, expected.VPC.ID, actual.VPC.ID)
	}
	if changes.Description != nil {
		return fmt.Errorf("field Description of security group %s (%s) cannot change from %q to %q: EC2 cannot change a "+
			"group's description; keep %q, or delete the group to have it made again", expected.Name, aws.ToString(actual.ID),
			aws.ToString(actual.Description), *expected.Description, aws.ToString(actual.Description))
	}
	return nil
}

// Render creates the group with its tags, or reconciles its tags.
func (g *SecurityGroup) Render(ctx context.Context, c *Cloud, actual, expected, changes *SecurityGroup) error {
	defer c.reads.groups.Forget()
	what := "security group " + expected.Name
	desired := c.desiredTags(expected.Name, expected.Tags)
	if actual != nil {
		id := aws.ToString(actual.ID)
		return c.retag(ctx, id, fmt.Sprintf("%s (%s)", what, id), actual.rawTags, desired)
	}
	desc := expected.Description
	if desc == nil {
		desc = aws.String(expected.Name)
	}
	out, err := c.EC2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         aws.String(expected.Name),
		Description:       desc,
		VpcId:             aws.String(expected.VPC.ID),
		TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeSecurityGroup, desired)},
	})
	if ErrorCode(err) == "InvalidGroup.Duplicate" {
		return g.adopt(ctx, c, expected, Classify("creating "+what, err))
	}
	if err != nil {
		return Classify("creating "+what, err)
	}
	expected.ID = out.GroupId
	engine.Logger(ctx).Info("created security group", "id", aws.ToString(out.GroupId), "vpc", expected.VPC.ID)
	return nil
}

// adopt takes up the group of expected's name that a create found already there: the cluster's own (an earlier
// run made it and the list did not show it yet), or someone else's, which is an error. dup is the create's error.
func (g *SecurityGroup) adopt(ctx context.Context, c *Cloud, expected *SecurityGroup, dup error) error {
	what := "security group " + expected.Name
	out, err := c.EC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("group-name"), Values: []string{expected.Name}},
		{Name: aws.String("vpc-id"), Values: []string{expected.VPC.ID}},
	}})
	if err != nil {
		return Classify("reading "+what, err)
	}
	if len(out.SecurityGroups) == 0 {
		return engine.NotReady(fmt.Errorf("%w; the group is not visible yet", dup))
	}
	sg := out.SecurityGroups[0]
	if tagsOf(sg.Tags)[ClusterTag(c.Cluster)] != ownedValue {
		return engine.Terminal(fmt.Errorf("creating %s in VPC %s: group %s of that name is there without the tag %s=%s: kubeup "+
			"did not make it, or its tag was removed; delete it, or tag it (aws ec2 create-tags) for the cluster to manage it: %w",
			what, expected.VPC.ID, aws.ToString(sg.GroupId), ClusterTag(c.Cluster), ownedValue, dup))
	}
	expected.ID = sg.GroupId
	engine.Logger(ctx).Info("found security group made by an earlier run", "id", aws.ToString(sg.GroupId))
	return c.retag(ctx, aws.ToString(sg.GroupId), what, tagsOf(sg.Tags), c.desiredTags(expected.Name, expected.Tags))
}
