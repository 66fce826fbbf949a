package awstasks

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// shared is one read that concurrent callers share: the first caller makes it, the others wait for its answer,
// and later callers read the answer until it is forgotten. A failed read is not kept: the next caller tries
// again.
type shared[T any] struct {
	mu   sync.Mutex
	call *sharedCall[T]
}

type sharedCall[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// get returns the answer of load, made at most once until forget.
func (s *shared[T]) get(ctx context.Context, load func(context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	c := s.call
	if c == nil {
		c = &sharedCall[T]{done: make(chan struct{})}
		s.call = c
		s.mu.Unlock()
		func() {
			defer func() {
				if c.err != nil {
					s.forgetCall(c)
				}
				close(c.done)
			}()
			c.err = errReadPanicked // replaced unless load panics
			c.val, c.err = load(ctx)
		}()
		return c.val, c.err
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// forget drops the answer: the next get reads again. A read in flight finishes for those waiting on it.
func (s *shared[T]) forget() {
	s.mu.Lock()
	s.call = nil
	s.mu.Unlock()
}

func (s *shared[T]) forgetCall(c *sharedCall[T]) {
	s.mu.Lock()
	if s.call == c {
		s.call = nil
	}
	s.mu.Unlock()
}

var errReadPanicked = errors.New("the read panicked")

// keyed is a shared read per key (the subnets of one VPC, one instance profile).
type keyed[T any] struct {
	mu sync.Mutex
	m  map[string]*shared[T]
}

func (k *keyed[T]) of(key string) *shared[T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*shared[T]{}
	}
	s := k.m[key]
	if s == nil {
		s = &shared[T]{}
		k.m[key] = s
	}
	return s
}

func (k *keyed[T]) forget() {
	k.mu.Lock()
	k.m = nil
	k.mu.Unlock()
}

// reads are the batched reads of one Cloud.
type reads struct {
	volumes   shared[map[string][]ec2types.Volume]         // the cluster's volumes by Name tag
	groups    shared[[]ec2types.SecurityGroup]             // the cluster's security groups
	templates shared[map[string]launchTemplateRead]        // the cluster's launch templates by name
	asgs      shared[map[string]asgtypes.AutoScalingGroup] // the cluster's Auto Scaling groups by name
	subnets   keyed[map[string]ec2types.Subnet]            // by VPC id: the VPC's subnets by id
	vpcs      keyed[*ec2types.Vpc]                         // by id; nil: no such VPC
	profiles  keyed[*iamtypes.InstanceProfile]             // by name; nil: no such profile
	images    keyed[ec2types.Image]                        // by id or name pattern
	running   shared[map[string]ec2types.Image]            // the images the templates' default versions run, by id
}

func (r *reads) forgetAll() {
	r.volumes.forget()
	r.groups.forget()
	r.templates.forget()
	r.asgs.forget()
	r.subnets.forget()
	r.vpcs.forget()
	r.profiles.forget()
	r.images.forget()
	r.running.forget()
}

// ownedFilter is the EC2 filter of what the cluster owns.
func (c *Cloud) ownedFilter() ec2types.Filter {
	return ec2types.Filter{Name: aws.String("tag:" + ClusterTag(c.Cluster)), Values: []string{ownedValue}}
}

// volumes returns the cluster's EBS volumes by their Name tag: one paginated DescribeVolumes per run.
func (c *Cloud) volumes(ctx context.Context) (map[string][]ec2types.Volume, error) {
	return c.reads.volumes.get(ctx, func(ctx context.Context) (map[string][]ec2types.Volume, error) {
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
	return c.reads.groups.get(ctx, func(ctx context.Context) ([]ec2types.SecurityGroup, error) {
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
	return c.reads.templates.get(ctx, func(ctx context.Context) (map[string]launchTemplateRead, error) {
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
	return c.reads.asgs.get(ctx, func(ctx context.Context) (map[string]asgtypes.AutoScalingGroup, error) {
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
	return c.reads.subnets.of(vpcID).get(ctx, func(ctx context.Context) (map[string]ec2types.Subnet, error) {
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
	return c.reads.vpcs.of(id).get(ctx, func(ctx context.Context) (*ec2types.Vpc, error) {
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
	return c.reads.profiles.of(name).get(ctx, func(ctx context.Context) (*iamtypes.InstanceProfile, error) {
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
