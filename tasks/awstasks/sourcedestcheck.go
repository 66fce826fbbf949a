package awstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// SourceDestCheck is the source/destination check of one of the cluster's instances. With kubenet's routes
// (VPCRoutes) an instance receives and sends its pods' packets, whose addresses are not its own: EC2 drops them
// unless the check is off. Its key is "SourceDestCheck/<instance id>".
type SourceDestCheck struct {
	// Instance is the instance's id.
	Instance string
	// Enabled is whether the check is on: false for a node of kubenet's routes.
	Enabled *bool
}

var (
	_ engine.Resource[*SourceDestCheck, *Cloud] = (*SourceDestCheck)(nil)
	_ engine.Renderer[*SourceDestCheck, *Cloud] = (*SourceDestCheck)(nil)
	_ engine.Classed                            = (*SourceDestCheck)(nil)
)

func (s *SourceDestCheck) Key() engine.Key {
	return engine.Key{Type: "SourceDestCheck", Name: s.Instance}
}
func (s *SourceDestCheck) Deps() []engine.Task { return nil }
func (s *SourceDestCheck) APIClass() string    { return "ec2" }

// Find reads the instance among the cluster's running instances (one DescribeInstances per run); nil when it is
// not one of them.
func (s *SourceDestCheck) Find(ctx context.Context, c *Cloud) (*SourceDestCheck, error) {
	instances, err := c.clusterInstances(ctx)
	if err != nil {
		return nil, err
	}
	for _, i := range instances {
		if aws.ToString(i.InstanceId) == s.Instance {
			return &SourceDestCheck{Instance: s.Instance, Enabled: aws.Bool(aws.ToBool(i.SourceDestCheck))}, nil
		}
	}
	return nil, nil
}

// CheckChanges refuses an instance that is not one of the cluster's running instances: kubeup changes no other.
func (s *SourceDestCheck) CheckChanges(actual, expected, changes *SourceDestCheck) error {
	if actual == nil {
		return fmt.Errorf("instance %s is not a running instance of the cluster (tag %s): kubeup changes no other instance's source/destination check", expected.Instance, ClusterTag("<cluster>"))
	}
	return nil
}

// Render turns the check on or off (ModifyInstanceAttribute).
func (s *SourceDestCheck) Render(ctx context.Context, c *Cloud, actual, expected, changes *SourceDestCheck) error {
	defer c.reads.instances.Forget()
	_, err := c.EC2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{
		InstanceId: aws.String(expected.Instance), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: expected.Enabled},
	})
	if err != nil {
		return Classify(fmt.Sprintf("turning the source/destination check of instance %s %s", expected.Instance, onOff(aws.ToBool(expected.Enabled))), err)
	}
	engine.Logger(ctx).Info("set an instance's source/destination check", "instance", expected.Instance, "enabled", aws.ToBool(expected.Enabled))
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
