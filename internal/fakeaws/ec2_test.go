package fakeaws

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// ec2Fake is a fake with its EC2 and Auto Scaling clients (us-east-1, one attempt).
type ec2Fake struct {
	s   *Server
	ec2 *ec2.Client
	asg *autoscaling.Client
	ctx context.Context
}

func newEC2Fake(t *testing.T) *ec2Fake {
	t.Helper()
	s, srv := startFakeAWS(t)
	cfg := testAWSConfig(srv.URL)
	return &ec2Fake{s: s, ec2: ec2.NewFromConfig(cfg), asg: autoscaling.NewFromConfig(cfg), ctx: context.Background()}
}

// errCode is the AWS error code of err ("" for nil).
func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "not an API error: " + err.Error()
	}
	return ""
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := errCode(err); got != code {
		t.Fatalf("%s: error %q (%v), want %q", what, got, err, code)
	}
}

func ok[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func tagSpec(rt types.ResourceType, kv ...string) []types.TagSpecification {
	ts := types.TagSpecification{ResourceType: rt}
	for i := 0; i < len(kv); i += 2 {
		ts.Tags = append(ts.Tags, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return []types.TagSpecification{ts}
}

func ec2Filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

func tagMap(tags []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func volumeIDs(vs []types.Volume) []string {
	var ids []string
	for _, v := range vs {
		ids = append(ids, aws.ToString(v.VolumeId))
	}
	return ids
}

func (f *ec2Fake) createVolume(t *testing.T, zone string, size int32, kv ...string) string {
	t.Helper()
	out, err := f.ec2.CreateVolume(f.ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String(zone), Size: aws.Int32(size),
		VolumeType: types.VolumeTypeGp3, TagSpecifications: tagSpec(types.ResourceTypeVolume, kv...)})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	return aws.ToString(out.VolumeId)
}

func TestVolumes(t *testing.T) {
	f := newEC2Fake(t)
	in := &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(20), VolumeType: types.VolumeTypeGp3,
		Iops: aws.Int32(4000), Throughput: aws.Int32(250), Encrypted: aws.Bool(true), KmsKeyId: aws.String("alias/etcd"),
		ClientToken: aws.String("tok-a"), TagSpecifications: tagSpec(types.ResourceTypeVolume, "Name", "a.etcd-main.c", "cluster", "c")}
	first := ok[*ec2.CreateVolumeOutput](t, "CreateVolume")(f.ec2.CreateVolume(f.ctx, in))
	if first.State != types.VolumeStateCreating || aws.ToInt32(first.Size) != 20 || aws.ToInt32(first.Iops) != 4000 ||
		aws.ToInt32(first.Throughput) != 250 || !aws.ToBool(first.Encrypted) || aws.ToString(first.KmsKeyId) != "alias/etcd" ||
		tagMap(first.Tags)["Name"] != "a.etcd-main.c" || aws.ToString(first.AvailabilityZone) != "us-east-1a" {
		t.Fatalf("CreateVolume answered %+v", first)
	}
	id := aws.ToString(first.VolumeId)
	// The same client token and parameters: the same volume; other parameters: a mismatch.
	again := ok[*ec2.CreateVolumeOutput](t, "CreateVolume again")(f.ec2.CreateVolume(f.ctx, in))
	if aws.ToString(again.VolumeId) != id {
		t.Fatalf("CreateVolume with the same token made %s, then %s", id, aws.ToString(again.VolumeId))
	}
	reordered := *in
	reordered.TagSpecifications = tagSpec(types.ResourceTypeVolume, "cluster", "c", "Name", "a.etcd-main.c")
	if again := ok[*ec2.CreateVolumeOutput](t, "CreateVolume, tags reordered")(f.ec2.CreateVolume(f.ctx, &reordered)); aws.ToString(again.VolumeId) != id {
		t.Fatalf("CreateVolume with the same token and tags in another order made %s", aws.ToString(again.VolumeId))
	}
	other := *in
	other.Size = aws.Int32(21)
	_, err := f.ec2.CreateVolume(f.ctx, &other)
	wantCode(t, "CreateVolume, same token, other size", err, "IdempotentParameterMismatch")

	b := f.createVolume(t, "us-east-1b", 10, "Name", "b.etcd-main.c", "cluster", "c")
	o := f.createVolume(t, "us-east-1b", 10, "Name", "other", "cluster", "d")
	for _, c := range []struct {
		name    string
		filters []types.Filter
		ids     []string
		want    []string
	}{
		{"all", nil, nil, []string{id, b, o}},
		{"tag", []types.Filter{ec2Filter("tag:cluster", "c")}, nil, []string{id, b}},
		{"tag glob", []types.Filter{ec2Filter("tag:Name", "*.etcd-main.c")}, nil, []string{id, b}},
		{"tag-key", []types.Filter{ec2Filter("tag-key", "cluster")}, nil, []string{id, b, o}},
		{"zone and tag", []types.Filter{ec2Filter("availability-zone", "us-east-1b"), ec2Filter("tag:cluster", "c", "d")}, nil, []string{b, o}},
		{"status", []types.Filter{ec2Filter("status", "available")}, nil, []string{id, b, o}},
		{"status in-use", []types.Filter{ec2Filter("status", "in-use")}, nil, nil},
		{"volume-id", []types.Filter{ec2Filter("volume-id", o)}, nil, []string{o}},
		{"ids", nil, []string{o, id}, []string{id, o}},
		{"ids and filter", []types.Filter{ec2Filter("tag:cluster", "d")}, []string{o, id}, []string{o}},
	} {
		out := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes "+c.name)(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{Filters: c.filters, VolumeIds: c.ids}))
		if got := volumeIDs(out.Volumes); !slices.Equal(got, c.want) {
			t.Errorf("DescribeVolumes %s: %v, want %v", c.name, got, c.want)
		}
	}
	_, err = f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{"vol-00000000000000fff"}})
	wantCode(t, "DescribeVolumes of a volume that does not exist", err, "InvalidVolume.NotFound")
	_, err = f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{ec2Filter("colour", "red")}})
	wantCode(t, "DescribeVolumes with an unknown filter", err, "InvalidParameterValue")

	// ModifyVolume: the size only grows.
	_, err = f.ec2.ModifyVolume(f.ctx, &ec2.ModifyVolumeInput{VolumeId: aws.String(id), Size: aws.Int32(10)})
	wantCode(t, "ModifyVolume smaller", err, "InvalidParameterValue")
	mod := ok[*ec2.ModifyVolumeOutput](t, "ModifyVolume")(f.ec2.ModifyVolume(f.ctx, &ec2.ModifyVolumeInput{VolumeId: aws.String(id), Size: aws.Int32(30), Iops: aws.Int32(5000)}))
	if m := mod.VolumeModification; aws.ToInt32(m.TargetSize) != 30 || aws.ToInt32(m.OriginalSize) != 20 || aws.ToInt32(m.TargetIops) != 5000 || aws.ToInt32(m.TargetThroughput) != 250 {
		t.Errorf("ModifyVolume answered %+v", m)
	}
	v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})).Volumes[0]
	if aws.ToInt32(v.Size) != 30 || aws.ToInt32(v.Iops) != 5000 || v.VolumeType != types.VolumeTypeGp3 || v.State != types.VolumeStateAvailable {
		t.Errorf("after ModifyVolume: %+v", v)
	}

	// Wrong parameters.
	for _, c := range []struct {
		name string
		in   ec2.CreateVolumeInput
		code string
	}{
		{"no zone", ec2.CreateVolumeInput{Size: aws.Int32(1)}, "MissingParameter"},
		{"zone of another region", ec2.CreateVolumeInput{AvailabilityZone: aws.String("eu-west-1a"), Size: aws.Int32(1)}, "InvalidParameterValue"},
		{"no size", ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a")}, "MissingParameter"},
		{"io1 without iops", ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(10), VolumeType: types.VolumeTypeIo1}, "MissingParameter"},
		{"key unencrypted", ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(10), KmsKeyId: aws.String("k")}, "InvalidParameterDependency"},
		{"tags for another type", ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(10), TagSpecifications: tagSpec(types.ResourceTypeInstance, "a", "b")}, "InvalidParameterValue"},
	} {
		_, err := f.ec2.CreateVolume(f.ctx, &c.in)
		wantCode(t, "CreateVolume "+c.name, err, c.code)
	}

	ok[*ec2.DeleteVolumeOutput](t, "DeleteVolume")(f.ec2.DeleteVolume(f.ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(o)}))
	_, err = f.ec2.DeleteVolume(f.ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(o)})
	wantCode(t, "DeleteVolume again", err, "InvalidVolume.NotFound")
	if out := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{})); len(out.Volumes) != 2 {
		t.Errorf("after DeleteVolume: %v", volumeIDs(out.Volumes))
	}
}

func TestDescribeVolumesPages(t *testing.T) {
	f := newEC2Fake(t)
	var want []string
	for range 12 {
		want = append(want, f.createVolume(t, "us-east-1c", 1, "cluster", "c"))
	}
	f.createVolume(t, "us-east-1c", 1, "cluster", "other")
	var got []string
	pages := 0
	p := ec2.NewDescribeVolumesPaginator(f.ec2, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(5), Filters: []types.Filter{ec2Filter("tag:cluster", "c")}})
	for p.HasMorePages() {
		out := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes page")(p.NextPage(f.ctx))
		got = append(got, volumeIDs(out.Volumes)...)
		pages++
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("pages of 5: %d pages of %v, want %v", pages, got, want)
	}
	_, err := f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(4)})
	wantCode(t, "DescribeVolumes MaxResults 4", err, "InvalidParameterValue")
	_, err = f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(5), VolumeIds: want[:1]})
	wantCode(t, "DescribeVolumes MaxResults with ids", err, "InvalidParameterCombination")
}

// network makes a VPC 10.0.0.0/16 with a subnet 10.0.<n>.0/24 in each of zones; it returns the VPC's id and the
// subnets' ids.
func (f *ec2Fake) network(t *testing.T, zones ...string) (string, []string) {
	t.Helper()
	vpc := ok[*ec2.CreateVpcOutput](t, "CreateVpc")(f.ec2.CreateVpc(f.ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")}))
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	var subnets []string
	for n, z := range zones {
		sn := ok[*ec2.CreateSubnetOutput](t, "CreateSubnet")(f.ec2.CreateSubnet(f.ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID),
			CidrBlock: aws.String("10.0." + string(rune('1'+n)) + ".0/24"), AvailabilityZone: aws.String(z)}))
		subnets = append(subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	return vpcID, subnets
}

// template makes launch template name of the newest amd64 Debian image with user data.
func (f *ec2Fake) template(t *testing.T, name, userData string, groups ...string) string {
	t.Helper()
	img := ok[*ec2.DescribeImagesOutput](t, "DescribeImages")(f.ec2.DescribeImages(f.ctx, &ec2.DescribeImagesInput{Owners: []string{DebianOwner},
		Filters: []types.Filter{ec2Filter("name", "debian-12-amd64-*")}}))
	sort.Slice(img.Images, func(i, j int) bool {
		return aws.ToString(img.Images[i].CreationDate) > aws.ToString(img.Images[j].CreationDate)
	})
	out := ok[*ec2.CreateLaunchTemplateOutput](t, "CreateLaunchTemplate")(f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: img.Images[0].ImageId, InstanceType: types.InstanceTypeT3Medium,
			SecurityGroupIds: groups, UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			IamInstanceProfile: &types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("kubeup")},
			TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{{ResourceType: types.ResourceTypeInstance,
				Tags: []types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}}}}},
	}))
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

// runInstance launches an instance of template in subnet.
func (f *ec2Fake) runInstance(t *testing.T, template, subnet string) types.Instance {
	t.Helper()
	out := ok[*ec2.RunInstancesOutput](t, "RunInstances")(f.ec2.RunInstances(f.ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId: aws.String(subnet), LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String(template), Version: aws.String("$Latest")}}))
	return out.Instances[0]
}

func TestAttachVolume(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a", "us-east-1b")
	lt := f.template(t, "nodes.c", "#!/bin/sh\necho hello\n")
	i1, i2 := f.runInstance(t, lt, subnets[0]), f.runInstance(t, lt, subnets[0])
	i3 := f.runInstance(t, lt, subnets[1])
	id1, id2, id3 := aws.ToString(i1.InstanceId), aws.ToString(i2.InstanceId), aws.ToString(i3.InstanceId)
	va, va2 := f.createVolume(t, "us-east-1a", 10), f.createVolume(t, "us-east-1a", 10)

	att := ok[*ec2.AttachVolumeOutput](t, "AttachVolume")(f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(va), InstanceId: aws.String(id1), Device: aws.String("/dev/xvdf")}))
	if att.State != types.VolumeAttachmentStateAttaching || aws.ToString(att.InstanceId) != id1 || aws.ToString(att.Device) != "/dev/xvdf" {
		t.Errorf("AttachVolume answered %+v", att)
	}
	for _, c := range []struct {
		name                  string
		volume, instance, dev string
		code                  string
	}{
		{"device in use", va2, id1, "/dev/xvdf", "InvalidParameterValue"},
		{"root device", va2, id1, "/dev/xvda", "InvalidParameterValue"},
		{"bad device name", va2, id1, "/dev/nvme1n1", "InvalidParameterValue"},
		{"attached elsewhere", va, id2, "/dev/xvdf", "VolumeInUse"},
		{"attached here", va, id1, "/dev/xvdg", "VolumeInUse"},
		{"other zone", va2, id3, "/dev/xvdf", "InvalidVolume.ZoneMismatch"},
		{"no instance", va2, "i-00000000000000fff", "/dev/xvdf", "InvalidInstanceID.NotFound"},
		{"no volume", "vol-00000000000000fff", id1, "/dev/xvdf", "InvalidVolume.NotFound"},
	} {
		_, err := f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(c.volume), InstanceId: aws.String(c.instance), Device: aws.String(c.dev)})
		wantCode(t, "AttachVolume "+c.name, err, c.code)
	}
	v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{
		Filters: []types.Filter{ec2Filter("attachment.instance-id", id1)}})).Volumes
	if len(v) != 1 || v[0].State != types.VolumeStateInUse || len(v[0].Attachments) != 1 ||
		v[0].Attachments[0].State != types.VolumeAttachmentStateAttached || aws.ToString(v[0].Attachments[0].Device) != "/dev/xvdf" {
		t.Fatalf("DescribeVolumes of the attached volume: %+v", v)
	}
	inst := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id1}}))
	bdm := inst.Reservations[0].Instances[0].BlockDeviceMappings
	if len(bdm) != 1 || aws.ToString(bdm[0].DeviceName) != "/dev/xvdf" || aws.ToString(bdm[0].Ebs.VolumeId) != va || bdm[0].Ebs.Status != types.AttachmentStatusAttached {
		t.Errorf("DescribeInstances' block devices: %+v", bdm)
	}
	_, err := f.ec2.DeleteVolume(f.ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(va)})
	wantCode(t, "DeleteVolume of an attached volume", err, "VolumeInUse")

	_, err = f.ec2.DetachVolume(f.ctx, &ec2.DetachVolumeInput{VolumeId: aws.String(va), InstanceId: aws.String(id2)})
	wantCode(t, "DetachVolume from another instance", err, "InvalidAttachment.NotFound")
	det := ok[*ec2.DetachVolumeOutput](t, "DetachVolume")(f.ec2.DetachVolume(f.ctx, &ec2.DetachVolumeInput{VolumeId: aws.String(va)}))
	if det.State != types.VolumeAttachmentStateDetaching || aws.ToString(det.InstanceId) != id1 {
		t.Errorf("DetachVolume answered %+v", det)
	}
	_, err = f.ec2.DetachVolume(f.ctx, &ec2.DetachVolumeInput{VolumeId: aws.String(va)})
	wantCode(t, "DetachVolume again", err, "IncorrectState")

	// A terminated instance lets its volumes go, and takes no more.
	ok[*ec2.AttachVolumeOutput](t, "AttachVolume to i2")(f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(va), InstanceId: aws.String(id2), Device: aws.String("/dev/sdf")}))
	term := ok[*ec2.TerminateInstancesOutput](t, "TerminateInstances")(f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id2}}))
	if c := term.TerminatingInstances[0]; c.CurrentState.Name != types.InstanceStateNameTerminated || c.PreviousState.Name != types.InstanceStateNameRunning {
		t.Errorf("TerminateInstances answered %+v", c)
	}
	if v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{va}})).Volumes[0]; v.State != types.VolumeStateAvailable {
		t.Errorf("the volume of a terminated instance is %s", v.State)
	}
	_, err = f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(va), InstanceId: aws.String(id2), Device: aws.String("/dev/sdf")})
	wantCode(t, "AttachVolume to a terminated instance", err, "IncorrectInstanceState")
	running := ok[*ec2.DescribeInstancesOutput](t, "DescribeInstances")(f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{
		Filters: []types.Filter{ec2Filter("instance-state-name", "running")}}))
	var ids []string
	for _, r := range running.Reservations {
		for _, i := range r.Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
	}
	if !slices.Equal(ids, []string{id1, id3}) {
		t.Errorf("running instances: %v, want %v", ids, []string{id1, id3})
	}
}

func TestEventualConsistency(t *testing.T) {
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a")
	lt := f.template(t, "nodes.c", "x")
	i1 := aws.ToString(f.runInstance(t, lt, subnets[0]).InstanceId)
	if err := f.s.SetFaults(Faults{VolumeInvisibleCalls: 2, AttachingPolls: 2}); err != nil {
		t.Fatal(err)
	}
	id := f.createVolume(t, "us-east-1a", 1, "k", "v")
	for n := range 2 {
		out := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{ec2Filter("tag:k", "v")}}))
		if len(out.Volumes) != 0 {
			t.Fatalf("answer %d shows the new volume", n+1)
		}
	}
	if out := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})); len(out.Volumes) != 1 {
		t.Fatalf("answer 3: %v", volumeIDs(out.Volumes))
	}
	ok[*ec2.AttachVolumeOutput](t, "AttachVolume")(f.ec2.AttachVolume(f.ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(id), InstanceId: aws.String(i1), Device: aws.String("/dev/xvdf")}))
	var states []types.VolumeAttachmentState
	for range 3 {
		v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes")(f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})).Volumes[0]
		states = append(states, v.Attachments[0].State)
	}
	if want := []types.VolumeAttachmentState{"attaching", "attaching", "attached"}; !slices.Equal(states, want) {
		t.Errorf("attachment states %v, want %v", states, want)
	}

	// A volume asked for by id while invisible is not found.
	id2 := f.createVolume(t, "us-east-1a", 1)
	_, err := f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id2}})
	wantCode(t, "DescribeVolumes of an invisible volume", err, "InvalidVolume.NotFound")
}

func TestThrottling(t *testing.T) {
	f := newEC2Fake(t)
	if err := f.s.SetFaults(Faults{ThrottleRate: 1}); err != nil {
		t.Fatal(err)
	}
	throttles := retry.IsErrorThrottles(retry.DefaultThrottles)
	_, err := f.ec2.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{})
	wantCode(t, "EC2 throttled", err, "RequestLimitExceeded")
	if throttles.IsErrorThrottle(err) != aws.TrueTernary {
		t.Errorf("the SDK does not take EC2's %v for throttling", err)
	}
	_, err = f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	wantCode(t, "Auto Scaling throttled", err, "Throttling")
	if throttles.IsErrorThrottle(err) != aws.TrueTernary {
		t.Errorf("the SDK does not take Auto Scaling's %v for throttling", err)
	}
	if n := f.s.Calls()["DescribeVolumes"]; n != 1 {
		t.Errorf("DescribeVolumes counted %d times, want 1", n)
	}
}

func TestTags(t *testing.T) {
	f := newEC2Fake(t)
	vpc, subnets := f.network(t, "us-east-1a")
	vol := f.createVolume(t, "us-east-1a", 1, "a", "1")
	ok[*ec2.CreateTagsOutput](t, "CreateTags")(f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{vpc, subnets[0], vol},
		Tags: []types.Tag{{Key: aws.String("owner"), Value: aws.String("me")}, {Key: aws.String("b"), Value: aws.String("2")}}}))
	_, err := f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{"vol-00000000000000fff"}, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	wantCode(t, "CreateTags of a volume that does not exist", err, "InvalidVolume.NotFound")
	_, err = f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: []types.Tag{{Key: aws.String("aws:x"), Value: aws.String("v")}}})
	wantCode(t, "CreateTags aws:", err, "InvalidParameterValue")
	// DeleteTags with a value deletes only a tag of that value.
	ok[*ec2.DeleteTagsOutput](t, "DeleteTags")(f.ec2.DeleteTags(f.ctx, &ec2.DeleteTagsInput{Resources: []string{vpc, vol},
		Tags: []types.Tag{{Key: aws.String("b")}, {Key: aws.String("owner"), Value: aws.String("not me")}}}))
	type row struct{ id, typ, k, v string }
	for _, c := range []struct {
		name    string
		filters []types.Filter
		want    []row
	}{
		{"all", nil, []row{{vol, "volume", "a", "1"}, {vol, "volume", "owner", "me"}, {vpc, "vpc", "owner", "me"},
			{subnets[0], "subnet", "b", "2"}, {subnets[0], "subnet", "owner", "me"}}},
		{"resource-type", []types.Filter{ec2Filter("resource-type", "subnet")}, []row{{subnets[0], "subnet", "b", "2"}, {subnets[0], "subnet", "owner", "me"}}},
		{"resource-id and key", []types.Filter{ec2Filter("resource-id", vol), ec2Filter("key", "owner")}, []row{{vol, "volume", "owner", "me"}}},
	} {
		out := ok[*ec2.DescribeTagsOutput](t, "DescribeTags")(f.ec2.DescribeTags(f.ctx, &ec2.DescribeTagsInput{Filters: c.filters}))
		var got []row
		for _, d := range out.Tags {
			got = append(got, row{aws.ToString(d.ResourceId), string(d.ResourceType), aws.ToString(d.Key), aws.ToString(d.Value)})
		}
		sort.Slice(got, func(i, j int) bool { return got[i].id+got[i].k < got[j].id+got[j].k })
		sort.Slice(c.want, func(i, j int) bool { return c.want[i].id+c.want[i].k < c.want[j].id+c.want[j].k })
		if !slices.Equal(got, c.want) {
			t.Errorf("DescribeTags %s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAvailabilityZones(t *testing.T) {
	f := newEC2Fake(t)
	out := ok[*ec2.DescribeAvailabilityZonesOutput](t, "DescribeAvailabilityZones")(f.ec2.DescribeAvailabilityZones(f.ctx, &ec2.DescribeAvailabilityZonesInput{}))
	var names []string
	for _, z := range out.AvailabilityZones {
		names = append(names, aws.ToString(z.ZoneName))
	}
	if want := []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}; !slices.Equal(names, want) {
		t.Errorf("zones %v, want %v", names, want)
	}
	if z := out.AvailabilityZones[0]; z.State != types.AvailabilityZoneStateAvailable || aws.ToString(z.ZoneId) != "use1-az1" || aws.ToString(z.RegionName) != "us-east-1" {
		t.Errorf("zone %+v", z)
	}
	eu := ec2.NewFromConfig(aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption}, Region: "eu-west-3", Credentials: f.ec2.Options().Credentials, BaseEndpoint: f.ec2.Options().BaseEndpoint, RetryMaxAttempts: 1})
	out = ok[*ec2.DescribeAvailabilityZonesOutput](t, "DescribeAvailabilityZones eu")(eu.DescribeAvailabilityZones(f.ctx, &ec2.DescribeAvailabilityZonesInput{
		Filters: []types.Filter{ec2Filter("zone-name", "eu-west-3b", "us-east-1a")}}))
	if len(out.AvailabilityZones) != 1 || aws.ToString(out.AvailabilityZones[0].ZoneName) != "eu-west-3b" {
		t.Errorf("eu-west-3 zones filtered: %+v", out.AvailabilityZones)
	}
	// Resources are the region's own.
	f.createVolume(t, "us-east-1a", 1)
	if v := ok[*ec2.DescribeVolumesOutput](t, "DescribeVolumes eu")(eu.DescribeVolumes(f.ctx, &ec2.DescribeVolumesInput{})); len(v.Volumes) != 0 {
		t.Errorf("eu-west-3 sees volumes of us-east-1: %v", volumeIDs(v.Volumes))
	}
	regions := ok[*ec2.DescribeRegionsOutput](t, "DescribeRegions")(f.ec2.DescribeRegions(f.ctx, &ec2.DescribeRegionsInput{RegionNames: []string{"us-east-1"}}))
	if len(regions.Regions) != 1 || aws.ToString(regions.Regions[0].RegionName) != "us-east-1" {
		t.Errorf("DescribeRegions: %+v", regions.Regions)
	}
}
