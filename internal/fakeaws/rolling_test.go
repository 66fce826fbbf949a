package fakeaws

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestTerminateInstanceInAutoScalingGroup: without decrementing, the instance is terminated (its volume detached)
// and the group launches a replacement from its current template version; decrementing below the minimum is
// refused and changes nothing; above it, the group shrinks; an instance of no group is not found.
func TestTerminateInstanceInAutoScalingGroup(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a")
	f.template(t, "grp", "#!/bin/bash\n")
	ok[*autoscaling.CreateAutoScalingGroupOutput](t, "CreateAutoScalingGroup")(f.asg.CreateAutoScalingGroup(f.ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("g"), LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("grp")},
		MinSize: aws.Int32(1), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}))
	old := aws.ToString(f.group(t, "g").Instances[0].InstanceId)
	vol := ok[*ec2.CreateVolumeOutput](t, "CreateVolume")(f.ec2.CreateVolume(f.ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1)}))
	ok[*ec2.AttachVolumeOutput](t, "AttachVolume")(f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: vol.VolumeId, InstanceId: aws.String(old), Device: aws.String("/dev/xvdf")}))

	_, err := f.asg.TerminateInstanceInAutoScalingGroup(f.ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(old), ShouldDecrementDesiredCapacity: aws.Bool(true)})
	wantCode(t, "TerminateInstanceInAutoScalingGroup below the minimum", err, "ValidationError")
	if g := f.group(t, "g"); len(g.Instances) != 1 || aws.ToString(g.Instances[0].InstanceId) != old {
		t.Fatalf("a refused termination changed the group: %+v", g.Instances)
	}

	out := ok[*autoscaling.TerminateInstanceInAutoScalingGroupOutput](t, "TerminateInstanceInAutoScalingGroup")(f.asg.TerminateInstanceInAutoScalingGroup(f.ctx,
		&autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(old), ShouldDecrementDesiredCapacity: aws.Bool(false)}))
	if out.Activity == nil || aws.ToString(out.Activity.AutoScalingGroupName) != "g" || !strings.Contains(aws.ToString(out.Activity.Description), old) {
		t.Errorf("activity %+v", out.Activity)
	}
	g := f.group(t, "g")
	if len(g.Instances) != 1 || aws.ToString(g.Instances[0].InstanceId) == old || g.Instances[0].LifecycleState != astypes.LifecycleStateInService {
		t.Fatalf("after the termination the group holds %+v, want one new instance in service", g.Instances)
	}
	repl := aws.ToString(g.Instances[0].InstanceId)
	st := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{old}}))
	if s := st.Reservations[0].Instances[0].State.Name; s != types.InstanceStateNameTerminated {
		t.Errorf("the old instance is %s, want terminated", s)
	}
	v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{aws.ToString(vol.VolumeId)}}))
	if len(v.Volumes[0].Attachments) != 0 {
		t.Errorf("the terminated instance's volume is still attached: %+v", v.Volumes[0].Attachments)
	}

	ok[*autoscaling.SetDesiredCapacityOutput](t, "SetDesiredCapacity")(f.asg.SetDesiredCapacity(f.ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("g"), DesiredCapacity: aws.Int32(2)}))
	ok[*autoscaling.TerminateInstanceInAutoScalingGroupOutput](t, "TerminateInstanceInAutoScalingGroup")(f.asg.TerminateInstanceInAutoScalingGroup(f.ctx,
		&autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(repl), ShouldDecrementDesiredCapacity: aws.Bool(true)}))
	g = f.group(t, "g")
	var ids []string
	for _, i := range g.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	if aws.ToInt32(g.DesiredCapacity) != 1 || len(ids) != 1 || slices.Contains(ids, repl) {
		t.Errorf("after a decrementing termination: desired %d, instances %v", aws.ToInt32(g.DesiredCapacity), ids)
	}

	_, err = f.asg.TerminateInstanceInAutoScalingGroup(f.ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(old), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	wantCode(t, "TerminateInstanceInAutoScalingGroup of a terminated instance", err, "ValidationError")
}
