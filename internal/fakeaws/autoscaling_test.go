package fakeaws

import (
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func (f *ec2Fake) group(t *testing.T, name string) astypes.AutoScalingGroup {
	t.Helper()
	out := ok[*autoscaling.DescribeAutoScalingGroupsOutput](t, "DescribeAutoScalingGroups")(f.asg.DescribeAutoScalingGroups(f.ctx,
		&autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}}))
	if len(out.AutoScalingGroups) != 1 {
		t.Fatalf("DescribeAutoScalingGroups %s: %d groups", name, len(out.AutoScalingGroups))
	}
	return out.AutoScalingGroups[0]
}

// zonesOf are the zones of a group's instances, sorted.
func zonesOf(g astypes.AutoScalingGroup) []string {
	var zones []string
	for _, i := range g.Instances {
		zones = append(zones, aws.ToString(i.AvailabilityZone))
	}
	sort.Strings(zones)
	return zones
}

func TestAutoScalingGroups(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a", "us-east-1b", "us-east-1c")
	lt := f.template(t, "control-plane.c", "#!/bin/bash\nnodeup --conf=s3://b/c/nodeup/control-plane\n")
	in := &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("control-plane.c"),
		LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("control-plane.c"), Version: aws.String("$Latest")},
		MinSize:        aws.Int32(3), MaxSize: aws.Int32(3), VPCZoneIdentifier: aws.String(strings.Join(subnets, ",")),
		Tags: []astypes.Tag{{Key: aws.String("cluster"), Value: aws.String("c"), PropagateAtLaunch: aws.Bool(true)},
			{Key: aws.String("only-group"), Value: aws.String("x"), PropagateAtLaunch: aws.Bool(false)}}}
	ok[*autoscaling.CreateAutoScalingGroupOutput](t, "CreateAutoScalingGroup")(f.asg.CreateAutoScalingGroup(f.ctx, in))
	_, err := f.asg.CreateAutoScalingGroup(f.ctx, in)
	wantCode(t, "CreateAutoScalingGroup again", err, "AlreadyExists")

	g := f.group(t, "control-plane.c")
	if aws.ToInt32(g.DesiredCapacity) != 3 || aws.ToString(g.LaunchTemplate.LaunchTemplateId) != lt || aws.ToString(g.LaunchTemplate.Version) != "$Latest" ||
		aws.ToString(g.VPCZoneIdentifier) != strings.Join(subnets, ",") || len(g.Tags) != 2 {
		t.Errorf("group %+v", g)
	}
	if z := zonesOf(g); !slices.Equal(z, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) {
		t.Errorf("instances in zones %v, want one in each", z)
	}
	var ids []string
	for _, i := range g.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
		if i.LifecycleState != astypes.LifecycleStateInService || aws.ToString(i.LaunchTemplate.Version) != "1" {
			t.Errorf("instance %+v", i)
		}
	}
	out := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids}))
	for _, r := range out.Reservations {
		i := r.Instances[0]
		tags := tagMap(i.Tags)
		if tags["cluster"] != "c" || tags["aws:autoscaling:groupName"] != "control-plane.c" || tags["from-template"] != "yes" || tags["only-group"] != "" ||
			tags["aws:ec2launchtemplate:id"] != lt || tags["aws:ec2launchtemplate:version"] != "1" {
			t.Errorf("instance %s tags %v", aws.ToString(i.InstanceId), tags)
		}
		if !strings.HasPrefix(aws.ToString(i.PrivateIpAddress), "10.0.") || !strings.HasPrefix(aws.ToString(i.PublicIpAddress), "203.0.113.") ||
			i.State.Name != types.InstanceStateNameRunning || i.InstanceType != types.InstanceTypeT3Medium ||
			!strings.HasSuffix(aws.ToString(i.IamInstanceProfile.Arn), ":instance-profile/kubeup") {
			t.Errorf("instance %+v", i)
		}
		attr := ok[*ec2.DescribeInstanceAttributeOutput](t, "DescribeInstanceAttribute")(f.ec2.DescribeInstanceAttribute(f.ctx, &ec2.DescribeInstanceAttributeInput{
			InstanceId: i.InstanceId, Attribute: types.InstanceAttributeNameUserData}))
		if ud, _ := base64.StdEncoding.DecodeString(aws.ToString(attr.UserData.Value)); !strings.Contains(string(ud), "nodeup --conf=s3://b/c/nodeup/control-plane") {
			t.Errorf("user data %q", ud)
		}
	}
	// IMDS's identities: the newest instance, or the one named.
	f.s.mu.Lock()
	newest, ok1 := f.s.instanceIdentity("")
	first, ok2 := f.s.instanceIdentity(ids[0])
	f.s.mu.Unlock()
	if !ok1 || !ok2 || newest.InstanceID != slices.Max(ids) || first.InstanceID != ids[0] || first.Region != "us-east-1" ||
		!strings.HasPrefix(first.Zone, "us-east-1") || first.PrivateIP == "" || !strings.Contains(first.UserData, "nodeup") {
		t.Errorf("identities %+v %+v", newest, first)
	}
	if n := len(f.s.Instances()); n != 3 {
		t.Errorf("Instances: %d, want 3", n)
	}

	// An instance terminated through EC2 is replaced in its zone.
	ok[*ec2.TerminateInstancesOutput](t, "TerminateInstances")(f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}))
	g = f.group(t, "control-plane.c")
	if z := zonesOf(g); len(g.Instances) != 3 || aws.ToString(g.Instances[2].InstanceId) <= slices.Max(ids) || !slices.Equal(z, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) {
		t.Errorf("after a termination: %+v", g.Instances)
	}

	// Scaling in and out, the desired capacity following the bounds.
	ok[*autoscaling.UpdateAutoScalingGroupOutput](t, "UpdateAutoScalingGroup")(f.asg.UpdateAutoScalingGroup(f.ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("control-plane.c"), MinSize: aws.Int32(0), MaxSize: aws.Int32(1)}))
	if g = f.group(t, "control-plane.c"); aws.ToInt32(g.DesiredCapacity) != 1 || len(g.Instances) != 1 {
		t.Errorf("after max 1: desired %d, %d instances", aws.ToInt32(g.DesiredCapacity), len(g.Instances))
	}
	_, err = f.asg.UpdateAutoScalingGroup(f.ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("control-plane.c"), DesiredCapacity: aws.Int32(5)})
	wantCode(t, "UpdateAutoScalingGroup desired above max", err, "ValidationError")
	// A new template version set as the group's: new instances launch from it.
	ok[*ec2.CreateLaunchTemplateVersionOutput](t, "CreateLaunchTemplateVersion")(f.ec2.CreateLaunchTemplateVersion(f.ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId: aws.String(lt), SourceVersion: aws.String("1"), LaunchTemplateData: &types.RequestLaunchTemplateData{InstanceType: types.InstanceTypeM5Large}}))
	ok[*autoscaling.UpdateAutoScalingGroupOutput](t, "UpdateAutoScalingGroup")(f.asg.UpdateAutoScalingGroup(f.ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("control-plane.c"), MaxSize: aws.Int32(4), DesiredCapacity: aws.Int32(4),
		LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(lt), Version: aws.String("2")}}))
	g = f.group(t, "control-plane.c")
	var types2 []string
	for _, i := range g.Instances {
		types2 = append(types2, aws.ToString(i.InstanceType)+"/"+aws.ToString(i.LaunchTemplate.Version))
	}
	if want := []string{"t3.medium/1", "m5.large/2", "m5.large/2", "m5.large/2"}; !slices.Equal(types2, want) || aws.ToString(g.LaunchTemplate.Version) != "2" {
		t.Errorf("instances %v, want %v", types2, want)
	}

	// Tags.
	ok[*autoscaling.CreateOrUpdateTagsOutput](t, "CreateOrUpdateTags")(f.asg.CreateOrUpdateTags(f.ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{
		{ResourceId: aws.String("control-plane.c"), ResourceType: aws.String("auto-scaling-group"), Key: aws.String("role"), Value: aws.String("cp"), PropagateAtLaunch: aws.Bool(true)}}}))
	ok[*autoscaling.DeleteTagsOutput](t, "DeleteTags")(f.asg.DeleteTags(f.ctx, &autoscaling.DeleteTagsInput{Tags: []astypes.Tag{
		{ResourceId: aws.String("control-plane.c"), ResourceType: aws.String("auto-scaling-group"), Key: aws.String("only-group")}}}))
	tags := ok[*autoscaling.DescribeTagsOutput](t, "DescribeTags")(f.asg.DescribeTags(f.ctx, &autoscaling.DescribeTagsInput{
		Filters: []astypes.Filter{{Name: aws.String("auto-scaling-group"), Values: []string{"control-plane.c"}}}}))
	var keys []string
	for _, tg := range tags.Tags {
		keys = append(keys, aws.ToString(tg.Key)+"="+aws.ToString(tg.Value))
	}
	if !slices.Equal(keys, []string{"cluster=c", "role=cp"}) {
		t.Errorf("DescribeTags: %v", keys)
	}
	byTag := ok[*autoscaling.DescribeAutoScalingGroupsOutput](t, "DescribeAutoScalingGroups")(f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []astypes.Filter{{Name: aws.String("tag:cluster"), Values: []string{"c"}}}}))
	none := ok[*autoscaling.DescribeAutoScalingGroupsOutput](t, "DescribeAutoScalingGroups")(f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []astypes.Filter{{Name: aws.String("tag:cluster"), Values: []string{"d"}}}}))
	if len(byTag.AutoScalingGroups) != 1 || len(none.AutoScalingGroups) != 0 {
		t.Errorf("groups by tag: %d and %d", len(byTag.AutoScalingGroups), len(none.AutoScalingGroups))
	}
	inst := ok[*autoscaling.DescribeAutoScalingInstancesOutput](t, "DescribeAutoScalingInstances")(f.asg.DescribeAutoScalingInstances(f.ctx, &autoscaling.DescribeAutoScalingInstancesInput{}))
	if len(inst.AutoScalingInstances) != 4 || aws.ToString(inst.AutoScalingInstances[0].AutoScalingGroupName) != "control-plane.c" {
		t.Errorf("DescribeAutoScalingInstances: %+v", inst.AutoScalingInstances)
	}

	// Deleting: refused while instances remain, unless forced.
	_, err = f.asg.DeleteAutoScalingGroup(f.ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("control-plane.c")})
	wantCode(t, "DeleteAutoScalingGroup with instances", err, "ResourceInUse")
	ok[*autoscaling.DeleteAutoScalingGroupOutput](t, "DeleteAutoScalingGroup")(f.asg.DeleteAutoScalingGroup(f.ctx, &autoscaling.DeleteAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("control-plane.c"), ForceDelete: aws.Bool(true)}))
	if out := ok[*autoscaling.DescribeAutoScalingGroupsOutput](t, "DescribeAutoScalingGroups")(f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{})); len(out.AutoScalingGroups) != 0 {
		t.Errorf("after DeleteAutoScalingGroup: %+v", out.AutoScalingGroups)
	}
	if n := len(f.s.Instances()); n != 0 {
		t.Errorf("%d instances running after the group's deletion", n)
	}
	_, err = f.asg.DeleteAutoScalingGroup(f.ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("control-plane.c")})
	wantCode(t, "DeleteAutoScalingGroup again", err, "ValidationError")
}

func TestAutoScalingGroupValidation(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a")
	f.template(t, "nodes.c", "x")
	bad, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("bad.c"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000fff")}})
	if err != nil || bad == nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	spec := func(name string) *astypes.LaunchTemplateSpecification {
		return &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String(name)}
	}
	for _, c := range []struct {
		name string
		in   autoscaling.CreateAutoScalingGroupInput
	}{
		{"no template", autoscaling.CreateAutoScalingGroupInput{MinSize: aws.Int32(1), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}},
		{"template missing", autoscaling.CreateAutoScalingGroupInput{LaunchTemplate: spec("other.c"), MinSize: aws.Int32(1), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}},
		{"image missing", autoscaling.CreateAutoScalingGroupInput{LaunchTemplate: spec("bad.c"), MinSize: aws.Int32(1), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}},
		{"min above max", autoscaling.CreateAutoScalingGroupInput{LaunchTemplate: spec("nodes.c"), MinSize: aws.Int32(2), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}},
		{"subnet missing", autoscaling.CreateAutoScalingGroupInput{LaunchTemplate: spec("nodes.c"), MinSize: aws.Int32(1), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String("subnet-00000000000000fff")}},
		{"version missing", autoscaling.CreateAutoScalingGroupInput{LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("nodes.c"), Version: aws.String("7")},
			MinSize: aws.Int32(1), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}},
	} {
		c.in.AutoScalingGroupName = aws.String("g")
		_, err := f.asg.CreateAutoScalingGroup(f.ctx, &c.in)
		wantCode(t, "CreateAutoScalingGroup "+c.name, err, "ValidationError")
	}
	// Pages of groups.
	for _, n := range []string{"a", "b", "c"} {
		ok[*autoscaling.CreateAutoScalingGroupOutput](t, "CreateAutoScalingGroup")(f.asg.CreateAutoScalingGroup(f.ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(n), LaunchTemplate: spec("nodes.c"), MinSize: aws.Int32(0), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(1),
			VPCZoneIdentifier: aws.String(subnets[0])}))
	}
	var names []string
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(f.asg, &autoscaling.DescribeAutoScalingGroupsInput{MaxRecords: aws.Int32(2)})
	for p.HasMorePages() {
		out := ok[*autoscaling.DescribeAutoScalingGroupsOutput](t, "DescribeAutoScalingGroups page")(p.NextPage(f.ctx))
		for _, g := range out.AutoScalingGroups {
			names = append(names, aws.ToString(g.AutoScalingGroupName))
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("pages of groups: %v", names)
	}
	if n := len(f.s.Instances()); n != 3 {
		t.Errorf("%d instances, want 3", n)
	}
}

// TemplateInvisibleCalls: Auto Scaling does not know a new launch template for that many calls.
func TestTemplateInvisibleToAutoScaling(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a")
	if err := f.s.SetFaults(Faults{TemplateInvisibleCalls: 2}); err != nil {
		t.Fatal(err)
	}
	lt := f.template(t, "nodes.c", "#!/bin/bash\n")
	in := &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("nodes.c"),
		LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(lt), Version: aws.String("1")},
		MinSize:        aws.Int32(0), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String(subnets[0])}
	for i := 0; i < 2; i++ {
		_, err := f.asg.CreateAutoScalingGroup(f.ctx, in)
		wantCode(t, "CreateAutoScalingGroup right after CreateLaunchTemplate", err, "ValidationError")
		if !strings.Contains(err.Error(), "launch template") || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("error %v, want the template said not to exist", err)
		}
	}
	ok[*autoscaling.CreateAutoScalingGroupOutput](t, "CreateAutoScalingGroup at the third call")(f.asg.CreateAutoScalingGroup(f.ctx, in))
}
