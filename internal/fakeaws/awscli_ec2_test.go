package fakeaws

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ec2CLI is an awsCLI (static credentials, us-east-1, an empty configuration, JSON answers) whose commands report
// their stderr rather than fail the test.
type ec2CLI struct {
	t   *testing.T
	cli *awsCLI
}

func newEC2CLI(t *testing.T, endpoint string) *ec2CLI {
	t.Helper()
	return &ec2CLI{t: t, cli: newAWSCLI(t, endpoint)}
}

// run runs aws args; it returns stdout and, when the command fails, its stderr (ok false).
func (c *ec2CLI) run(args ...string) (stdout []byte, stderr string, ok bool) {
	c.t.Helper()
	stdout, stderr, err := c.cli.invoke(args...)
	return stdout, stderr, err == nil
}

// do runs aws args and decodes its JSON answer (if any) into v.
func (c *ec2CLI) do(v any, args ...string) {
	c.t.Helper()
	out, stderr, ok := c.run(args...)
	if !ok {
		c.t.Fatalf("aws %s: %s", strings.Join(args, " "), stderr)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			c.t.Fatalf("aws %s: decoding %q: %v", strings.Join(args, " "), out, err)
		}
	}
}

// fails runs aws args, which must fail with AWS error code.
func (c *ec2CLI) fails(code string, args ...string) {
	c.t.Helper()
	out, stderr, ok := c.run(args...)
	if ok || !strings.Contains(stderr, "("+code+")") {
		c.t.Errorf("aws %s: ok=%v, stdout %q, stderr %q; want the error %s", strings.Join(args, " "), ok, out, stderr, code)
	}
}

type cliTag struct{ Key, Value string }

func cliTags(tags []cliTag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	return m
}

// TestAWSCLIEC2 drives the fake with the AWS CLI: the independent client that says the fake speaks EC2 and
// Auto Scaling, not only the Go SDK's dialect. Volumes with a client token and filters, zones, a VPC and subnets,
// a security group and its rules, images, a launch template, an Auto Scaling group and its instances, an
// attachment, and AWS's error codes as the CLI reports them.
func TestAWSCLIEC2(t *testing.T) {
	t.Parallel() // the CLI takes a second or more to start: overlap with the other tests
	s, srv := startFakeAWS(t)
	aws := newEC2CLI(t, srv.URL)

	// Volumes: made with a client token (twice: one volume), described with filters.
	type volume struct {
		VolumeId, AvailabilityZone, State, VolumeType string
		Size                                          int
		Tags                                          []cliTag
		Attachments                                   []struct{ InstanceId, Device, State string }
	}
	var v1, v1again, v2 volume
	tags := "ResourceType=volume,Tags=[{Key=kubernetes.io/cluster/c,Value=owned},{Key=Name,Value=a.etcd-main.c}]"
	aws.do(&v1, "ec2", "create-volume", "--availability-zone", "us-east-1a", "--size", "20", "--volume-type", "gp3",
		"--client-token", "a.etcd-main.c", "--tag-specifications", tags)
	aws.do(&v1again, "ec2", "create-volume", "--availability-zone", "us-east-1a", "--size", "20", "--volume-type", "gp3",
		"--client-token", "a.etcd-main.c", "--tag-specifications", tags)
	aws.do(&v2, "ec2", "create-volume", "--availability-zone", "us-east-1b", "--size", "5",
		"--tag-specifications", "ResourceType=volume,Tags=[{Key=kubernetes.io/cluster/d,Value=owned}]")
	if v1.VolumeId == "" || v1again.VolumeId != v1.VolumeId || v1.Size != 20 || v1.VolumeType != "gp3" || cliTags(v1.Tags)["Name"] != "a.etcd-main.c" {
		t.Fatalf("create-volume: %+v, then %+v", v1, v1again)
	}
	aws.fails("IdempotentParameterMismatch", "ec2", "create-volume", "--availability-zone", "us-east-1a", "--size", "21",
		"--volume-type", "gp3", "--client-token", "a.etcd-main.c", "--tag-specifications", tags)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--filters", "Name=tag:kubernetes.io/cluster/c,Values=owned"}, []string{v1.VolumeId}},
		{[]string{"--filters", "Name=tag-key,Values=kubernetes.io/cluster/c,kubernetes.io/cluster/d"}, []string{v1.VolumeId, v2.VolumeId}},
		{[]string{"--filters", "Name=availability-zone,Values=us-east-1b", "Name=status,Values=available"}, []string{v2.VolumeId}},
		{[]string{"--volume-ids", v2.VolumeId}, []string{v2.VolumeId}},
		{[]string{"--filters", "Name=tag:Name,Values=nothing*"}, nil},
	} {
		var out struct{ Volumes []volume }
		aws.do(&out, append([]string{"ec2", "describe-volumes"}, c.args...)...)
		var got []string
		for _, v := range out.Volumes {
			got = append(got, v.VolumeId)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("describe-volumes %v: %v, want %v", c.args, got, c.want)
		}
	}
	var zones struct {
		AvailabilityZones []struct{ ZoneName, State string }
	}
	aws.do(&zones, "ec2", "describe-availability-zones", "--filters", "Name=zone-name,Values=us-east-1a,us-east-1c")
	if len(zones.AvailabilityZones) != 2 || zones.AvailabilityZones[1].ZoneName != "us-east-1c" || zones.AvailabilityZones[0].State != "available" {
		t.Errorf("describe-availability-zones: %+v", zones)
	}

	// A VPC and its subnets.
	var vpc struct {
		Vpc struct{ VpcId, CidrBlock, State string }
	}
	aws.do(&vpc, "ec2", "create-vpc", "--cidr-block", "10.0.0.0/16")
	var subnets []string
	for n, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		var sn struct {
			Subnet struct{ SubnetId, VpcId, CidrBlock, AvailabilityZone string }
		}
		aws.do(&sn, "ec2", "create-subnet", "--vpc-id", vpc.Vpc.VpcId, "--cidr-block", "10.0."+string(rune('1'+n))+".0/24", "--availability-zone", z)
		if sn.Subnet.AvailabilityZone != z || sn.Subnet.VpcId != vpc.Vpc.VpcId {
			t.Errorf("create-subnet: %+v", sn)
		}
		subnets = append(subnets, sn.Subnet.SubnetId)
	}
	aws.fails("InvalidSubnet.Conflict", "ec2", "create-subnet", "--vpc-id", vpc.Vpc.VpcId, "--cidr-block", "10.0.1.0/25")
	var sns struct {
		Subnets []struct{ SubnetId, CidrBlock string }
	}
	aws.do(&sns, "ec2", "describe-subnets", "--filters", "Name=vpc-id,Values="+vpc.Vpc.VpcId, "Name=availability-zone,Values=us-east-1b")
	if len(sns.Subnets) != 1 || sns.Subnets[0].SubnetId != subnets[1] || sns.Subnets[0].CidrBlock != "10.0.2.0/24" {
		t.Errorf("describe-subnets: %+v", sns)
	}
	var vpcs struct {
		Vpcs []struct{ VpcId, CidrBlock string }
	}
	aws.do(&vpcs, "ec2", "describe-vpcs", "--vpc-ids", vpc.Vpc.VpcId)
	if len(vpcs.Vpcs) != 1 || vpcs.Vpcs[0].CidrBlock != "10.0.0.0/16" {
		t.Errorf("describe-vpcs: %+v", vpcs)
	}

	// A security group and its rules.
	var sg struct{ GroupId string }
	aws.do(&sg, "ec2", "create-security-group", "--group-name", "nodes.c", "--description", "nodes", "--vpc-id", vpc.Vpc.VpcId,
		"--tag-specifications", "ResourceType=security-group,Tags=[{Key=kubernetes.io/cluster/c,Value=owned}]")
	aws.fails("InvalidGroup.Duplicate", "ec2", "create-security-group", "--group-name", "nodes.c", "--description", "again", "--vpc-id", vpc.Vpc.VpcId)
	aws.do(nil, "ec2", "authorize-security-group-ingress", "--group-id", sg.GroupId, "--protocol", "tcp", "--port", "22", "--cidr", "10.0.0.0/8")
	aws.do(nil, "ec2", "authorize-security-group-ingress", "--group-id", sg.GroupId, "--ip-permissions",
		"IpProtocol=-1,UserIdGroupPairs=[{GroupId="+sg.GroupId+"}]")
	aws.fails("InvalidPermission.Duplicate", "ec2", "authorize-security-group-ingress", "--group-id", sg.GroupId, "--protocol", "tcp", "--port", "22", "--cidr", "10.0.0.0/8")
	type permission struct {
		IpProtocol       string
		FromPort, ToPort int
		IpRanges         []struct{ CidrIp string }
		UserIdGroupPairs []struct{ GroupId string }
	}
	var groups struct {
		SecurityGroups []struct {
			GroupId, GroupName, VpcId          string
			IpPermissions, IpPermissionsEgress []permission
			Tags                               []cliTag
		}
	}
	aws.do(&groups, "ec2", "describe-security-groups", "--filters", "Name=tag:kubernetes.io/cluster/c,Values=owned")
	if len(groups.SecurityGroups) != 1 {
		t.Fatalf("describe-security-groups: %+v", groups)
	}
	g := groups.SecurityGroups[0]
	if g.GroupId != sg.GroupId || g.GroupName != "nodes.c" || len(g.IpPermissions) != 2 || len(g.IpPermissionsEgress) != 1 ||
		g.IpPermissions[0].IpProtocol != "tcp" || g.IpPermissions[0].FromPort != 22 || g.IpPermissions[0].IpRanges[0].CidrIp != "10.0.0.0/8" ||
		g.IpPermissions[1].IpProtocol != "-1" || g.IpPermissions[1].UserIdGroupPairs[0].GroupId != sg.GroupId {
		t.Errorf("security group %+v", g)
	}

	// The newest Debian image, a launch template of it.
	var images struct {
		Images []struct{ ImageId, Name, CreationDate, Architecture string }
	}
	aws.do(&images, "ec2", "describe-images", "--owners", DebianOwner, "--filters", "Name=name,Values=debian-12-amd64-*", "Name=state,Values=available")
	sort.Slice(images.Images, func(i, j int) bool { return images.Images[i].CreationDate > images.Images[j].CreationDate })
	if len(images.Images) != 2 || images.Images[0].Name != "debian-12-amd64-20261101-2000" || images.Images[0].Architecture != "x86_64" {
		t.Fatalf("describe-images: %+v", images)
	}
	userData := base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\nexec nodeup --conf=s3://state/c/nodeup/nodes\n"))
	data, _ := json.Marshal(map[string]any{"ImageId": images.Images[0].ImageId, "InstanceType": "t3.medium", "UserData": userData,
		"SecurityGroupIds": []string{sg.GroupId}, "IamInstanceProfile": map[string]string{"Name": "kubeup"},
		"BlockDeviceMappings": []any{map[string]any{"DeviceName": "/dev/xvda", "Ebs": map[string]any{"VolumeSize": 64, "VolumeType": "gp3"}}},
		"TagSpecifications":   []any{map[string]any{"ResourceType": "instance", "Tags": []cliTag{{"kubernetes.io/cluster/c", "owned"}}}}})
	var lt struct {
		LaunchTemplate struct {
			LaunchTemplateId, LaunchTemplateName      string
			DefaultVersionNumber, LatestVersionNumber int
		}
	}
	aws.do(&lt, "ec2", "create-launch-template", "--launch-template-name", "nodes.c", "--launch-template-data", string(data),
		"--tag-specifications", "ResourceType=launch-template,Tags=[{Key=kubernetes.io/cluster/c,Value=owned}]")
	if lt.LaunchTemplate.LaunchTemplateName != "nodes.c" || lt.LaunchTemplate.LatestVersionNumber != 1 {
		t.Errorf("create-launch-template: %+v", lt)
	}
	aws.fails("InvalidLaunchTemplateName.AlreadyExistsException", "ec2", "create-launch-template", "--launch-template-name", "nodes.c",
		"--launch-template-data", string(data))
	var versions struct {
		LaunchTemplateVersions []struct {
			VersionNumber      int
			DefaultVersion     bool
			LaunchTemplateData struct {
				ImageId, InstanceType, UserData string
				SecurityGroupIds                []string
				IamInstanceProfile              struct{ Name string }
				BlockDeviceMappings             []struct {
					DeviceName string
					Ebs        struct{ VolumeSize int }
				}
			}
		}
	}
	aws.do(&versions, "ec2", "describe-launch-template-versions", "--launch-template-name", "nodes.c", "--versions", "$Latest")
	if len(versions.LaunchTemplateVersions) != 1 {
		t.Fatalf("describe-launch-template-versions: %+v", versions)
	}
	if v := versions.LaunchTemplateVersions[0]; v.VersionNumber != 1 || !v.DefaultVersion || v.LaunchTemplateData.UserData != userData ||
		v.LaunchTemplateData.IamInstanceProfile.Name != "kubeup" || !slices.Equal(v.LaunchTemplateData.SecurityGroupIds, []string{sg.GroupId}) ||
		len(v.LaunchTemplateData.BlockDeviceMappings) != 1 || v.LaunchTemplateData.BlockDeviceMappings[0].Ebs.VolumeSize != 64 {
		t.Errorf("version %+v", v)
	}
	var lts struct {
		LaunchTemplates []struct{ LaunchTemplateName string }
	}
	aws.do(&lts, "ec2", "describe-launch-templates", "--filters", "Name=tag:kubernetes.io/cluster/c,Values=owned")
	if len(lts.LaunchTemplates) != 1 || lts.LaunchTemplates[0].LaunchTemplateName != "nodes.c" {
		t.Errorf("describe-launch-templates: %+v", lts)
	}

	// An Auto Scaling group of three, one per zone.
	aws.do(nil, "autoscaling", "create-auto-scaling-group", "--auto-scaling-group-name", "nodes.c",
		"--launch-template", "LaunchTemplateName=nodes.c,Version=$Latest", "--min-size", "3", "--max-size", "5",
		"--vpc-zone-identifier", strings.Join(subnets, ","), "--tags", "Key=kubernetes.io/cluster/c,Value=owned,PropagateAtLaunch=true")
	aws.fails("AlreadyExists", "autoscaling", "create-auto-scaling-group", "--auto-scaling-group-name", "nodes.c",
		"--launch-template", "LaunchTemplateName=nodes.c", "--min-size", "1", "--max-size", "1", "--vpc-zone-identifier", subnets[0])
	var asgs struct {
		AutoScalingGroups []struct {
			AutoScalingGroupName              string
			MinSize, MaxSize, DesiredCapacity int
			VPCZoneIdentifier                 string
			LaunchTemplate                    struct{ LaunchTemplateName, Version string }
			Instances                         []struct{ InstanceId, AvailabilityZone, LifecycleState, HealthStatus string }
			Tags                              []struct {
				Key, Value        string
				PropagateAtLaunch bool
			}
		}
	}
	aws.do(&asgs, "autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", "nodes.c")
	if len(asgs.AutoScalingGroups) != 1 {
		t.Fatalf("describe-auto-scaling-groups: %+v", asgs)
	}
	group := asgs.AutoScalingGroups[0]
	var zs, instanceIDs []string
	for _, i := range group.Instances {
		zs = append(zs, i.AvailabilityZone)
		instanceIDs = append(instanceIDs, i.InstanceId)
		if i.LifecycleState != "InService" {
			t.Errorf("instance %+v", i)
		}
	}
	sort.Strings(zs)
	if group.DesiredCapacity != 3 || group.MaxSize != 5 || group.LaunchTemplate.LaunchTemplateName != "nodes.c" || group.LaunchTemplate.Version != "$Latest" ||
		!slices.Equal(zs, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) || len(group.Tags) != 1 || !group.Tags[0].PropagateAtLaunch {
		t.Errorf("group %+v", group)
	}
	var reservations struct {
		Reservations []struct {
			Instances []struct {
				InstanceId, PrivateIpAddress, PublicIpAddress, ImageId, InstanceType string
				State                                                                struct{ Name string }
				Placement                                                            struct{ AvailabilityZone string }
				Tags                                                                 []cliTag
			}
		}
	}
	aws.do(&reservations, "ec2", "describe-instances", "--filters", "Name=tag:aws:autoscaling:groupName,Values=nodes.c", "Name=instance-state-name,Values=running")
	var described []string
	for _, r := range reservations.Reservations {
		for _, i := range r.Instances {
			described = append(described, i.InstanceId)
			tags := cliTags(i.Tags)
			if i.ImageId != images.Images[0].ImageId || i.InstanceType != "t3.medium" || !strings.HasPrefix(i.PrivateIpAddress, "10.0.") ||
				i.PublicIpAddress == "" || i.State.Name != "running" || tags["kubernetes.io/cluster/c"] != "owned" {
				t.Errorf("instance %+v", i)
			}
		}
	}
	sort.Strings(described)
	sort.Strings(instanceIDs)
	if !slices.Equal(described, instanceIDs) {
		t.Errorf("describe-instances: %v, the group's: %v", described, instanceIDs)
	}
	if n := len(s.Instances()); n != 3 {
		t.Errorf("%d instances, want 3", n)
	}

	// The volume attached to the instance of its zone, seen by describe-volumes.
	inA := ""
	for _, r := range reservations.Reservations {
		if i := r.Instances[0]; i.Placement.AvailabilityZone == "us-east-1a" {
			inA = i.InstanceId
		}
	}
	aws.do(nil, "ec2", "attach-volume", "--volume-id", v1.VolumeId, "--instance-id", inA, "--device", "/dev/xvdf")
	var attached struct{ Volumes []volume }
	aws.do(&attached, "ec2", "describe-volumes", "--filters", "Name=attachment.instance-id,Values="+inA)
	if len(attached.Volumes) != 1 || attached.Volumes[0].State != "in-use" || attached.Volumes[0].Attachments[0].State != "attached" ||
		attached.Volumes[0].Attachments[0].Device != "/dev/xvdf" {
		t.Errorf("describe-volumes of the attached volume: %+v", attached)
	}
	aws.fails("VolumeInUse", "ec2", "delete-volume", "--volume-id", v1.VolumeId)

	// Scaled in, then deleted with its instances.
	aws.do(nil, "autoscaling", "update-auto-scaling-group", "--auto-scaling-group-name", "nodes.c", "--min-size", "1", "--desired-capacity", "1")
	aws.do(&asgs, "autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", "nodes.c")
	if g := asgs.AutoScalingGroups[0]; g.DesiredCapacity != 1 || len(g.Instances) != 1 {
		t.Errorf("after update-auto-scaling-group: %+v", g)
	}
	aws.fails("ResourceInUse", "autoscaling", "delete-auto-scaling-group", "--auto-scaling-group-name", "nodes.c")
	aws.do(nil, "autoscaling", "delete-auto-scaling-group", "--auto-scaling-group-name", "nodes.c", "--force-delete")
	aws.do(&asgs, "autoscaling", "describe-auto-scaling-groups")
	if len(asgs.AutoScalingGroups) != 0 || len(s.Instances()) != 0 {
		t.Errorf("after delete-auto-scaling-group: %+v, %d instances", asgs, len(s.Instances()))
	}
	aws.do(nil, "ec2", "delete-volume", "--volume-id", v1.VolumeId)
	aws.do(nil, "ec2", "delete-launch-template", "--launch-template-name", "nodes.c")
	aws.do(nil, "ec2", "delete-security-group", "--group-id", sg.GroupId)
}
