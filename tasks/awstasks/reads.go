package awstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"kubeup.dev/kubeup/tasks/sharedread"
)

// reads are the batched reads of one Cloud.
type reads struct {
	volumes   sharedread.Shared[map[string][]ec2types.Volume]         // the cluster's volumes by Name tag
	groups    sharedread.Shared[[]ec2types.SecurityGroup]             // the cluster's security groups
	templates sharedread.Shared[map[string]launchTemplateRead]        // the cluster's launch templates by name
	asgs      sharedread.Shared[map[string]asgtypes.AutoScalingGroup] // the cluster's Auto Scaling groups by name
	subnets   sharedread.Keyed[map[string]ec2types.Subnet]            // by VPC id: the VPC's subnets by id
	vpcs      sharedread.Keyed[*ec2types.Vpc]                         // by id; nil: no such VPC
	profiles  sharedread.Keyed[*iamtypes.InstanceProfile]             // by name; nil: no such profile
	images    sharedread.Keyed[ec2types.Image]                        // by id or name pattern
	running   sharedread.Shared[map[string]ec2types.Image]            // the images the templates' default versions run, by id
	instances sharedread.Shared[[]ec2types.Instance]                  // the cluster's running instances
	tables    sharedread.Keyed[[]ec2types.RouteTable]                 // by VPC id: the VPC's route tables
}

func (r *reads) forgetAll() {
	r.volumes.Forget()
	r.groups.Forget()
	r.templates.Forget()
	r.asgs.Forget()
	r.subnets.Forget()
	r.vpcs.Forget()
	r.profiles.Forget()
	r.images.Forget()
	r.running.Forget()
	r.instances.Forget()
	r.tables.Forget()
}

// ownedFilter is the EC2 filter of what the cluster owns.
func (c *Cloud) ownedFilter() ec2types.Filter {
	return ec2types.Filter{Name: aws.String("tag:" + ClusterTag(c.Cluster)), Values: []string{ownedValue}}
}

// volumes returns the cluster's EBS volumes by their Name tag: one paginated DescribeVolumes per run.
func (c *Cloud) volumes(ctx context.Context) (map[string][]ec2types.Volume, error) {
	return c.reads.volumes.Get(ctx, func(ctx context.Context) (map[string][]ec2types.Volume, error) {
		out := map[string][]ec2types.Volume{}
		p := ec2.NewDescribeVolumesPaginator(c.EC2, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{c.ownedFilter()}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify("listing the cluster's EBS volumes", err)
			}
			for _, v := range page.Volumes {
				name := tagsOf(v.Tags)["Name"]
				out[name] = append(out[name], v)
			}
		}
		return out, nil
	})
}

// securityGroups returns the cluster's security groups: one paginated DescribeSecurityGroups per run.
func (c *Cloud) securityGroups(ctx context.Context) ([]ec2types.SecurityGroup, error) {
	return c.reads.groups.Get(ctx, func(ctx context.Context) ([]ec2types.SecurityGroup, error) {
		var out []ec2types.SecurityGroup
		p := ec2.NewDescribeSecurityGroupsPaginator(c.EC2, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{c.ownedFilter()}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify("listing the cluster's security groups", err)
			}
			out = append(out, page.SecurityGroups...)
		}
		return out, nil
	})
}

// launchTemplateRead is a launch template with its default version.
type launchTemplateRead struct {
	template ec2types.LaunchTemplate
	def      *ec2types.LaunchTemplateVersion // nil when the default version was not found
}

// launchTemplates returns the cluster's launch templates by name with their default versions: one paginated
// DescribeLaunchTemplates and, when there are any, one paginated DescribeLaunchTemplateVersions of the default
// versions of every template, per run.
func (c *Cloud) launchTemplates(ctx context.Context) (map[string]launchTemplateRead, error) {
	return c.reads.templates.Get(ctx, func(ctx context.Context) (map[string]launchTemplateRead, error) {
		out := map[string]launchTemplateRead{}
		byID := map[string]string{}
		p := ec2.NewDescribeLaunchTemplatesPaginator(c.EC2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{c.ownedFilter()}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify("listing the cluster's launch templates", err)
			}
			for _, t := range page.LaunchTemplates {
				name := aws.ToString(t.LaunchTemplateName)
				out[name] = launchTemplateRead{template: t}
				byID[aws.ToString(t.LaunchTemplateId)] = name
			}
		}
		if len(out) == 0 {
			return out, nil
		}
		vp := ec2.NewDescribeLaunchTemplateVersionsPaginator(c.EC2, &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{"$Default"}})
		for vp.HasMorePages() {
			page, err := vp.NextPage(ctx)
			if err != nil {
				return nil, Classify("reading the default versions of the cluster's launch templates", err)
			}
			for i := range page.LaunchTemplateVersions {
				v := page.LaunchTemplateVersions[i]
				name, ok := byID[aws.ToString(v.LaunchTemplateId)]
				if !ok {
					continue // another template of the account
				}
				r := out[name]
				r.def = &v
				out[name] = r
			}
		}
		return out, nil
	})
}

// autoScalingGroups returns the cluster's Auto Scaling groups by name: one paginated DescribeAutoScalingGroups
// per run.
func (c *Cloud) autoScalingGroups(ctx context.Context) (map[string]asgtypes.AutoScalingGroup, error) {
	return c.reads.asgs.Get(ctx, func(ctx context.Context) (map[string]asgtypes.AutoScalingGroup, error) {
		out := map[string]asgtypes.AutoScalingGroup{}
		key := ClusterTag(c.Cluster)
		p := autoscaling.NewDescribeAutoScalingGroupsPaginator(c.AutoScaling, &autoscaling.DescribeAutoScalingGroupsInput{
			Filters: []asgtypes.Filter{{Name: aws.String("tag-key"), Values: []string{key}}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify("listing the cluster's Auto Scaling groups", err)
			}
			for _, g := range page.AutoScalingGroups {
				if asgTags(g.Tags)[key] != ownedValue {
					continue
				}
				out[aws.ToString(g.AutoScalingGroupName)] = g
			}
		}
		return out, nil
	})
}

// subnetsOf returns the subnets of VPC vpcID by id: one paginated DescribeSubnets per VPC and run.
func (c *Cloud) subnetsOf(ctx context.Context, vpcID string) (map[string]ec2types.Subnet, error) {
	return c.reads.subnets.Of(vpcID).Get(ctx, func(ctx context.Context) (map[string]ec2types.Subnet, error) {
		out := map[string]ec2types.Subnet{}
		p := ec2.NewDescribeSubnetsPaginator(c.EC2, &ec2.DescribeSubnetsInput{
			Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpcID}}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify(fmt.Sprintf("listing the subnets of VPC %s", vpcID), err)
			}
			for _, s := range page.Subnets {
				out[aws.ToString(s.SubnetId)] = s
			}
		}
		return out, nil
	})
}

// vpc returns the VPC id, nil when there is none: one DescribeVpcs per VPC and run.
func (c *Cloud) vpc(ctx context.Context, id string) (*ec2types.Vpc, error) {
	return c.reads.vpcs.Of(id).Get(ctx, func(ctx context.Context) (*ec2types.Vpc, error) {
		out, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{id}})
		if ErrorCode(err) == "InvalidVpcID.NotFound" {
			return nil, nil
		}
		if err != nil {
			return nil, Classify("reading VPC "+id, err)
		}
		for i := range out.Vpcs {
			if aws.ToString(out.Vpcs[i].VpcId) == id {
				return &out.Vpcs[i], nil
			}
		}
		return nil, nil
	})
}

// instanceProfile returns the IAM instance profile name, nil when there is none: IAM has no batch read, so one
// GetInstanceProfile per profile and run.
func (c *Cloud) instanceProfile(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	return c.reads.profiles.Of(name).Get(ctx, func(ctx context.Context) (*iamtypes.InstanceProfile, error) {
		out, err := c.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		if ErrorCode(err) == "NoSuchEntity" {
			return nil, nil
		}
		if err != nil {
			return nil, Classify("reading IAM instance profile "+name, err)
		}
		return out.InstanceProfile, nil
	})
}

// clusterInstances returns the cluster's running instances: one paginated DescribeInstances per run.
func (c *Cloud) clusterInstances(ctx context.Context) ([]ec2types.Instance, error) {
	return c.reads.instances.Get(ctx, func(ctx context.Context) ([]ec2types.Instance, error) {
		return c.describeInstances(ctx, "listing the cluster's instances",
			c.ownedFilter(), ec2types.Filter{Name: aws.String("instance-state-name"), Values: []string{"running"}})
	})
}

// describeInstances returns the instances filters pass (one paginated DescribeInstances), for doing.
func (c *Cloud) describeInstances(ctx context.Context, doing string, filters ...ec2types.Filter) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	p := ec2.NewDescribeInstancesPaginator(c.EC2, &ec2.DescribeInstancesInput{Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify(doing, err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// routeTables returns the route tables of VPC vpcID: one paginated DescribeRouteTables per VPC and run.
func (c *Cloud) routeTables(ctx context.Context, vpcID string) ([]ec2types.RouteTable, error) {
	return c.reads.tables.Of(vpcID).Get(ctx, func(ctx context.Context) ([]ec2types.RouteTable, error) {
		return c.describeRouteTables(ctx, fmt.Sprintf("listing the route tables of VPC %s", vpcID),
			ec2types.Filter{Name: aws.String("vpc-id"), Values: []string{vpcID}})
	})
}

// describeRouteTables returns the route tables filter passes (one paginated DescribeRouteTables), for doing.
func (c *Cloud) describeRouteTables(ctx context.Context, doing string, filter ec2types.Filter) ([]ec2types.RouteTable, error) {
	var out []ec2types.RouteTable
	p := ec2.NewDescribeRouteTablesPaginator(c.EC2, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{filter}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify(doing, err)
		}
		out = append(out, page.RouteTables...)
	}
	return out, nil
}
