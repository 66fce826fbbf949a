package awstasks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// GroupState is one Auto Scaling group of the cluster as a rolling update sees it: its sizes, the launch
// template version it launches, and its instances.
type GroupState struct {
	// Name is the group's name: "<instance group>.<cluster>".
	Name string
	// Min, Max and Desired are the group's sizes.
	Min, Max, Desired int32
	// Template is the launch template (id) and Version the version the group launches now.
	Template, Version string
	// Instances are the group's instances, sorted by id.
	Instances []GroupInstance
}

// GroupInstance is one instance of an Auto Scaling group.
type GroupInstance struct {
	ID, Zone, InstanceType string
	// LifecycleState is Auto Scaling's (InService, Pending, Terminating, ...) and HealthStatus its health
	// (Healthy, Unhealthy).
	LifecycleState, HealthStatus string
	// Template and Version are the launch template (id) and version the instance was launched from.
	Template, Version string
}

// InService reports whether Auto Scaling counts the instance as serving: InService and Healthy.
func (i GroupInstance) InService() bool {
	return i.LifecycleState == string(asgtypes.LifecycleStateInService) && i.HealthStatus == "Healthy"
}

// Groups reads the Auto Scaling groups of the given names (one paginated DescribeAutoScalingGroups), by name. A
// name without a group is absent from the map. Groups that are not the cluster's (no ownership tag) are refused.
func (c *Cloud) Groups(ctx context.Context, names []string) (map[string]*GroupState, error) {
	out := map[string]*GroupState{}
	if len(names) == 0 {
		return out, nil
	}
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(c.AutoScaling, &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: names,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify("listing the Auto Scaling groups "+strings.Join(names, ", "), err)
		}
		for _, g := range page.AutoScalingGroups {
			name := aws.ToString(g.AutoScalingGroupName)
			if asgTags(g.Tags)[ClusterTag(c.Cluster)] != ownedValue {
				return nil, fmt.Errorf("the Auto Scaling group %s is not cluster %s's (no tag %s=%s): kubeup replaces only the machines of its own groups",
					name, c.Cluster, ClusterTag(c.Cluster), ownedValue)
			}
			s := &GroupState{Name: name, Desired: aws.ToInt32(g.DesiredCapacity), Min: aws.ToInt32(g.MinSize), Max: aws.ToInt32(g.MaxSize)}
			s.Template, s.Version = templateOf(g.LaunchTemplate, g.MixedInstancesPolicy)
			for _, i := range g.Instances {
				gi := GroupInstance{
					ID: aws.ToString(i.InstanceId), Zone: aws.ToString(i.AvailabilityZone), InstanceType: aws.ToString(i.InstanceType),
					LifecycleState: string(i.LifecycleState), HealthStatus: aws.ToString(i.HealthStatus),
				}
				gi.Template, gi.Version = templateOf(i.LaunchTemplate, nil)
				s.Instances = append(s.Instances, gi)
			}
			slices.SortFunc(s.Instances, func(a, b GroupInstance) int { return strings.Compare(a.ID, b.ID) })
			out[name] = s
		}
	}
	return out, nil
}

func templateOf(lt *asgtypes.LaunchTemplateSpecification, mixed *asgtypes.MixedInstancesPolicy) (id, version string) {
	if lt == nil && mixed != nil && mixed.LaunchTemplate != nil {
		lt = mixed.LaunchTemplate.LaunchTemplateSpecification
	}
	if lt == nil {
		return "", ""
	}
	id = aws.ToString(lt.LaunchTemplateId)
	if id == "" {
		id = aws.ToString(lt.LaunchTemplateName)
	}
	return id, aws.ToString(lt.Version)
}

// TerminateInGroup terminates one instance of an Auto Scaling group without lowering the group's desired
// capacity: the group launches a replacement from its current launch template version.
func (c *Cloud) TerminateInGroup(ctx context.Context, instanceID string) error {
	_, err := c.AutoScaling.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId:                     aws.String(instanceID),
		ShouldDecrementDesiredCapacity: aws.Bool(false),
	})
	if err != nil {
		return Classify("terminating instance "+instanceID+" in its Auto Scaling group", err)
	}
	return nil
}

// InstanceAddresses returns the private and public addresses of the instances ids, by id (one paginated
// DescribeInstances).
func (c *Cloud) InstanceAddresses(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	p := ec2.NewDescribeInstancesPaginator(c.EC2, &ec2.DescribeInstancesInput{InstanceIds: ids})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify("reading the addresses of instances "+strings.Join(ids, ", "), err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				var addrs []string
				for _, a := range []*string{i.PrivateIpAddress, i.PublicIpAddress} {
					if aws.ToString(a) != "" {
						addrs = append(addrs, *a)
					}
				}
				out[aws.ToString(i.InstanceId)] = addrs
			}
		}
	}
	return out, nil
}
