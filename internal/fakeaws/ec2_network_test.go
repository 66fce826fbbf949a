package fakeaws

import (
	"encoding/base64"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestVpcsAndSubnets(t *testing.T) {
	f := newEC2Fake(t)
	vpc, subnets := f.network(t, "us-east-1a", "us-east-1b")
	for _, c := range []struct {
		name string
		in   ec2.CreateSubnetInput
		code string
	}{
		{"outside the VPC", ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String("10.1.0.0/24"), AvailabilityZone: aws.String("us-east-1a")}, "InvalidSubnet.Range"},
		{"overlapping", ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String("10.0.1.128/25"), AvailabilityZone: aws.String("us-east-1a")}, "InvalidSubnet.Conflict"},
		{"no VPC", ec2.CreateSubnetInput{VpcId: aws.String("vpc-00000000000000fff"), CidrBlock: aws.String("10.0.9.0/24")}, "InvalidVpcID.NotFound"},
		{"bad zone", ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String("10.0.9.0/24"), AvailabilityZone: aws.String("us-east-1z")}, "InvalidParameterValue"},
		{"bad CIDR", ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String("10.0.9.0/33")}, "InvalidParameterValue"},
	} {
		_, err := f.ec2.CreateSubnet(f.ctx, &c.in)
		wantCode(t, "CreateSubnet "+c.name, err, c.code)
	}
	ok[*ec2.CreateTagsOutput](t, "CreateTags")(f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{subnets[1]},
		Tags: []types.Tag{{Key: aws.String("role"), Value: aws.String("b")}}}))
	for _, c := range []struct {
		name    string
		ids     []string
		filters []types.Filter
		want    []string
	}{
		{"all", nil, nil, subnets},
		{"vpc-id", nil, []types.Filter{ec2Filter("vpc-id", vpc)}, subnets},
		{"zone", nil, []types.Filter{ec2Filter("availability-zone", "us-east-1b")}, subnets[1:]},
		{"tag", nil, []types.Filter{ec2Filter("tag:role", "b")}, subnets[1:]},
		{"ids", []string{subnets[0]}, nil, subnets[:1]},
	} {
		out := ok[*ec2.DescribeSubnetsOutput](t, "DescribeSubnets "+c.name)(f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: c.ids, Filters: c.filters}))
		var got []string
		for _, sn := range out.Subnets {
			got = append(got, aws.ToString(sn.SubnetId))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("DescribeSubnets %s: %v, want %v", c.name, got, c.want)
		}
	}
	sn := ok[*ec2.DescribeSubnetsOutput](t, "DescribeSubnets")(f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: subnets[:1]})).Subnets[0]
	if aws.ToString(sn.CidrBlock) != "10.0.1.0/24" || aws.ToString(sn.VpcId) != vpc || aws.ToString(sn.AvailabilityZone) != "us-east-1a" ||
		sn.State != types.SubnetStateAvailable || aws.ToInt32(sn.AvailableIpAddressCount) != 251 {
		t.Errorf("subnet %+v", sn)
	}
	v := ok[*ec2.DescribeVpcsOutput](t, "DescribeVpcs")(f.ec2.DescribeVpcs(f.ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpc}})).Vpcs
	if len(v) != 1 || aws.ToString(v[0].CidrBlock) != "10.0.0.0/16" || v[0].State != types.VpcStateAvailable {
		t.Errorf("DescribeVpcs: %+v", v)
	}
	_, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-00000000000000fff"}})
	wantCode(t, "DescribeSubnets of a subnet that does not exist", err, "InvalidSubnetID.NotFound")

	_, err = f.ec2.DeleteVpc(f.ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpc)})
	wantCode(t, "DeleteVpc with subnets", err, "DependencyViolation")
	for _, id := range subnets {
		ok[*ec2.DeleteSubnetOutput](t, "DeleteSubnet")(f.ec2.DeleteSubnet(f.ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(id)}))
	}
	ok[*ec2.DeleteVpcOutput](t, "DeleteVpc")(f.ec2.DeleteVpc(f.ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpc)}))
	if out := ok[*ec2.DescribeSecurityGroupsOutput](t, "DescribeSecurityGroups")(f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{})); len(out.SecurityGroups) != 0 {
		t.Errorf("the VPC's default group outlives it: %+v", out.SecurityGroups)
	}
}

func TestSecurityGroups(t *testing.T) {
	f := newEC2Fake(t)
	vpc, _ := f.network(t, "us-east-1a")
	create := func(name string, kv ...string) string {
		t.Helper()
		out := ok[*ec2.CreateSecurityGroupOutput](t, "CreateSecurityGroup")(f.ec2.CreateSecurityGroup(f.ctx, &ec2.CreateSecurityGroupInput{
			GroupName: aws.String(name), Description: aws.String("group " + name), VpcId: aws.String(vpc),
			TagSpecifications: tagSpec(types.ResourceTypeSecurityGroup, kv...)}))
		return aws.ToString(out.GroupId)
	}
	cp := create("control-plane.c", "cluster", "c")
	nodes := create("nodes.c", "cluster", "c")
	_, err := f.ec2.CreateSecurityGroup(f.ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes.c"), Description: aws.String("x"), VpcId: aws.String(vpc)})
	wantCode(t, "CreateSecurityGroup of a name taken", err, "InvalidGroup.Duplicate")

	perm := func(proto string, from, to int32, cidr, group string) types.IpPermission {
		p := types.IpPermission{IpProtocol: aws.String(proto), FromPort: aws.Int32(from), ToPort: aws.Int32(to)}
		if cidr != "" {
			p.IpRanges = []types.IpRange{{CidrIp: aws.String(cidr)}}
		}
		if group != "" {
			p.UserIdGroupPairs = []types.UserIdGroupPair{{GroupId: aws.String(group)}}
		}
		return p
	}
	auth := ok[*ec2.AuthorizeSecurityGroupIngressOutput](t, "AuthorizeSecurityGroupIngress")(f.ec2.AuthorizeSecurityGroupIngress(f.ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(cp), IpPermissions: []types.IpPermission{perm("tcp", 443, 443, "0.0.0.0/0", ""), perm("-1", 0, 0, "", nodes), perm("tcp", 443, 443, "10.0.0.0/8", "")}}))
	if !aws.ToBool(auth.Return) || len(auth.SecurityGroupRules) != 3 {
		t.Errorf("AuthorizeSecurityGroupIngress answered %+v", auth)
	}
	_, err = f.ec2.AuthorizeSecurityGroupIngress(f.ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(cp),
		IpPermissions: []types.IpPermission{perm("tcp", 22, 22, "1.2.3.4/32", ""), perm("tcp", 443, 443, "0.0.0.0/0", "")}})
	wantCode(t, "AuthorizeSecurityGroupIngress of a rule there", err, "InvalidPermission.Duplicate")
	_, err = f.ec2.AuthorizeSecurityGroupIngress(f.ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(cp),
		IpPermissions: []types.IpPermission{perm("tcp", 22, 22, "", "sg-00000000000000fff")}})
	wantCode(t, "AuthorizeSecurityGroupIngress from a group that does not exist", err, "InvalidGroup.NotFound")

	for _, c := range []struct {
		name    string
		in      ec2.DescribeSecurityGroupsInput
		want    []string
		wantErr string
	}{
		{"by name filter", ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("group-name", "nodes.c")}}, []string{nodes}, ""},
		{"by tag", ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("tag:cluster", "c"), ec2Filter("vpc-id", vpc)}}, []string{cp, nodes}, ""},
		{"by tag-key", ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("tag-key", "cluster")}}, []string{cp, nodes}, ""},
		{"by id", ec2.DescribeSecurityGroupsInput{GroupIds: []string{nodes}}, []string{nodes}, ""},
		{"by name", ec2.DescribeSecurityGroupsInput{GroupNames: []string{"control-plane.c"}}, []string{cp}, ""},
		{"missing", ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-00000000000000fff"}}, nil, "InvalidGroup.NotFound"},
	} {
		out, err := f.ec2.DescribeSecurityGroups(f.ctx, &c.in)
		wantCode(t, "DescribeSecurityGroups "+c.name, err, c.wantErr)
		if err != nil {
			continue
		}
		var got []string
		for _, g := range out.SecurityGroups {
			got = append(got, aws.ToString(g.GroupId))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("DescribeSecurityGroups %s: %v, want %v", c.name, got, c.want)
		}
	}
	g := ok[*ec2.DescribeSecurityGroupsOutput](t, "DescribeSecurityGroups")(f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{cp}})).SecurityGroups[0]
	if aws.ToString(g.GroupName) != "control-plane.c" || aws.ToString(g.Description) != "group control-plane.c" || aws.ToString(g.VpcId) != vpc ||
		tagMap(g.Tags)["cluster"] != "c" {
		t.Errorf("group %+v", g)
	}
	if len(g.IpPermissionsEgress) != 1 || aws.ToString(g.IpPermissionsEgress[0].IpProtocol) != "-1" || aws.ToString(g.IpPermissionsEgress[0].IpRanges[0].CidrIp) != "0.0.0.0/0" {
		t.Errorf("egress %+v", g.IpPermissionsEgress)
	}
	if len(g.IpPermissions) != 2 {
		t.Fatalf("ingress %+v, want 2 permissions", g.IpPermissions)
	}
	https, all := g.IpPermissions[0], g.IpPermissions[1]
	var cidrs []string
	for _, r := range https.IpRanges {
		cidrs = append(cidrs, aws.ToString(r.CidrIp))
	}
	if aws.ToString(https.IpProtocol) != "tcp" || aws.ToInt32(https.FromPort) != 443 || aws.ToInt32(https.ToPort) != 443 || !slices.Equal(cidrs, []string{"0.0.0.0/0", "10.0.0.0/8"}) {
		t.Errorf("https permission %+v (%v)", https, cidrs)
	}
	if aws.ToString(all.IpProtocol) != "-1" || len(all.UserIdGroupPairs) != 1 || aws.ToString(all.UserIdGroupPairs[0].GroupId) != nodes {
		t.Errorf("all-traffic permission %+v", all)
	}
	rules := ok[*ec2.DescribeSecurityGroupRulesOutput](t, "DescribeSecurityGroupRules")(f.ec2.DescribeSecurityGroupRules(f.ctx, &ec2.DescribeSecurityGroupRulesInput{
		Filters: []types.Filter{ec2Filter("group-id", cp)}}))
	if len(rules.SecurityGroupRules) != 4 {
		t.Errorf("DescribeSecurityGroupRules: %d rules, want 3 ingress and 1 egress", len(rules.SecurityGroupRules))
	}

	_, err = f.ec2.DeleteSecurityGroup(f.ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(nodes)})
	wantCode(t, "DeleteSecurityGroup of a group another's rule names", err, "DependencyViolation")
	ok[*ec2.RevokeSecurityGroupIngressOutput](t, "RevokeSecurityGroupIngress")(f.ec2.RevokeSecurityGroupIngress(f.ctx, &ec2.RevokeSecurityGroupIngressInput{
		GroupId: aws.String(cp), IpPermissions: []types.IpPermission{perm("-1", 0, 0, "", nodes)}}))
	_, err = f.ec2.RevokeSecurityGroupIngress(f.ctx, &ec2.RevokeSecurityGroupIngressInput{
		GroupId: aws.String(cp), IpPermissions: []types.IpPermission{perm("-1", 0, 0, "", nodes)}})
	wantCode(t, "RevokeSecurityGroupIngress of a rule not there", err, "InvalidPermission.NotFound")
	ok[*ec2.DeleteSecurityGroupOutput](t, "DeleteSecurityGroup")(f.ec2.DeleteSecurityGroup(f.ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(nodes)}))
	ok[*ec2.DeleteSecurityGroupOutput](t, "DeleteSecurityGroup")(f.ec2.DeleteSecurityGroup(f.ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(cp)}))
	out := ok[*ec2.DescribeSecurityGroupsOutput](t, "DescribeSecurityGroups")(f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{}))
	if len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupName) != "default" {
		t.Errorf("after the deletions: %+v", out.SecurityGroups)
	}
	_, err = f.ec2.DeleteSecurityGroup(f.ctx, &ec2.DeleteSecurityGroupInput{GroupId: out.SecurityGroups[0].GroupId})
	wantCode(t, "DeleteSecurityGroup default", err, "CannotDelete")
}

func TestImages(t *testing.T) {
	f := newEC2Fake(t)
	for _, c := range []struct {
		name string
		in   ec2.DescribeImagesInput
		want []string
	}{
		{"amd64 by name", ec2.DescribeImagesInput{Owners: []string{DebianOwner}, Filters: []types.Filter{ec2Filter("name", "debian-12-amd64-*")}},
			[]string{"debian-12-amd64-20261001-1900", "debian-12-amd64-20261101-2000"}},
		{"arm64 by architecture", ec2.DescribeImagesInput{Filters: []types.Filter{ec2Filter("architecture", "arm64"), ec2Filter("state", "available")}},
			[]string{"debian-12-arm64-20261001-1900", "debian-12-arm64-20261101-2000"}},
		{"one name", ec2.DescribeImagesInput{Filters: []types.Filter{ec2Filter("name", "debian-12-amd64-20261101-2000")}}, []string{"debian-12-amd64-20261101-2000"}},
		{"other owner", ec2.DescribeImagesInput{Owners: []string{"self"}}, nil},
	} {
		out := ok[*ec2.DescribeImagesOutput](t, "DescribeImages "+c.name)(f.ec2.DescribeImages(f.ctx, &c.in))
		var got []string
		for _, im := range out.Images {
			got = append(got, aws.ToString(im.Name))
			if aws.ToString(im.CreationDate) == "" || im.State != types.ImageStateAvailable || aws.ToString(im.OwnerId) != DebianOwner {
				t.Errorf("image %+v", im)
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("DescribeImages %s: %v, want %v", c.name, got, c.want)
		}
	}
	_, err := f.ec2.DescribeImages(f.ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000fff"}})
	wantCode(t, "DescribeImages of an image that does not exist", err, "InvalidAMIID.NotFound")
}

func TestLaunchTemplates(t *testing.T) {
	f := newEC2Fake(t)
	vpc, _ := f.network(t, "us-east-1a")
	sg := ok[*ec2.CreateSecurityGroupOutput](t, "CreateSecurityGroup")(f.ec2.CreateSecurityGroup(f.ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("nodes.c"), Description: aws.String("nodes"), VpcId: aws.String(vpc)})).GroupId
	ud := base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\nnodeup\n"))
	data := &types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), InstanceType: types.InstanceTypeT3Medium,
		IamInstanceProfile: &types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("kubeup")},
		SecurityGroupIds:   []string{aws.ToString(sg)}, UserData: aws.String(ud),
		BlockDeviceMappings: []types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"),
			Ebs: &types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(64), VolumeType: types.VolumeTypeGp3, DeleteOnTermination: aws.Bool(true)}}},
		TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("cluster"), Value: aws.String("c")}}},
			{ResourceType: types.ResourceTypeVolume, Tags: []types.Tag{{Key: aws.String("cluster"), Value: aws.String("c")}}}},
		MetadataOptions: &types.LaunchTemplateInstanceMetadataOptionsRequest{HttpTokens: types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(2)}}
	in := &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("nodes.c"), LaunchTemplateData: data, ClientToken: aws.String("lt-token"),
		TagSpecifications: tagSpec(types.ResourceTypeLaunchTemplate, "cluster", "c")}
	lt := ok[*ec2.CreateLaunchTemplateOutput](t, "CreateLaunchTemplate")(f.ec2.CreateLaunchTemplate(f.ctx, in)).LaunchTemplate
	if aws.ToInt64(lt.DefaultVersionNumber) != 1 || aws.ToInt64(lt.LatestVersionNumber) != 1 || tagMap(lt.Tags)["cluster"] != "c" {
		t.Errorf("CreateLaunchTemplate answered %+v", lt)
	}
	id := aws.ToString(lt.LaunchTemplateId)
	again := ok[*ec2.CreateLaunchTemplateOutput](t, "CreateLaunchTemplate again")(f.ec2.CreateLaunchTemplate(f.ctx, in)).LaunchTemplate
	if aws.ToString(again.LaunchTemplateId) != id {
		t.Errorf("the same client token made %s, then %s", id, aws.ToString(again.LaunchTemplateId))
	}
	_, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("nodes.c"), LaunchTemplateData: data})
	wantCode(t, "CreateLaunchTemplate of a name taken", err, "InvalidLaunchTemplateName.AlreadyExistsException")
	_, err = f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("x"), LaunchTemplateData: data})
	wantCode(t, "CreateLaunchTemplate of a short name", err, "InvalidLaunchTemplateName.MalformedException")

	// Version 2 from version 1 with another instance type; version 3 from nothing.
	v2 := ok[*ec2.CreateLaunchTemplateVersionOutput](t, "CreateLaunchTemplateVersion")(f.ec2.CreateLaunchTemplateVersion(f.ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateName: aws.String("nodes.c"), SourceVersion: aws.String("1"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{InstanceType: types.InstanceTypeM5Large}})).LaunchTemplateVersion
	if aws.ToInt64(v2.VersionNumber) != 2 || aws.ToBool(v2.DefaultVersion) || v2.LaunchTemplateData.InstanceType != types.InstanceTypeM5Large ||
		aws.ToString(v2.LaunchTemplateData.ImageId) != "ami-00000000000000001" || aws.ToString(v2.LaunchTemplateData.UserData) != ud {
		t.Errorf("version 2: %+v", v2)
	}
	ok[*ec2.CreateLaunchTemplateVersionOutput](t, "CreateLaunchTemplateVersion 3")(f.ec2.CreateLaunchTemplateVersion(f.ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId: aws.String(id), LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000002")}}))
	ok[*ec2.ModifyLaunchTemplateOutput](t, "ModifyLaunchTemplate")(f.ec2.ModifyLaunchTemplate(f.ctx, &ec2.ModifyLaunchTemplateInput{
		LaunchTemplateId: aws.String(id), DefaultVersion: aws.String("2")}))

	versions := func(vs ...string) []int64 {
		t.Helper()
		out := ok[*ec2.DescribeLaunchTemplateVersionsOutput](t, "DescribeLaunchTemplateVersions")(f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateName: aws.String("nodes.c"), Versions: vs}))
		var got []int64
		for _, v := range out.LaunchTemplateVersions {
			got = append(got, aws.ToInt64(v.VersionNumber))
		}
		return got
	}
	for _, c := range []struct {
		versions []string
		want     []int64
	}{
		{nil, []int64{1, 2, 3}},
		{[]string{"$Latest"}, []int64{3}},
		{[]string{"$Default"}, []int64{2}},
		{[]string{"$Latest", "$Default", "1"}, []int64{1, 2, 3}},
	} {
		if got := versions(c.versions...); !slices.Equal(got, c.want) {
			t.Errorf("versions %v: %v, want %v", c.versions, got, c.want)
		}
	}
	v1 := ok[*ec2.DescribeLaunchTemplateVersionsOutput](t, "DescribeLaunchTemplateVersions")(f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(id), Versions: []string{"1"}})).LaunchTemplateVersions[0].LaunchTemplateData
	if aws.ToString(v1.IamInstanceProfile.Name) != "kubeup" || !slices.Equal(v1.SecurityGroupIds, []string{aws.ToString(sg)}) ||
		len(v1.BlockDeviceMappings) != 1 || aws.ToInt32(v1.BlockDeviceMappings[0].Ebs.VolumeSize) != 64 || v1.BlockDeviceMappings[0].Ebs.VolumeType != types.VolumeTypeGp3 ||
		len(v1.TagSpecifications) != 2 || v1.MetadataOptions.HttpTokens != types.LaunchTemplateHttpTokensStateRequired || aws.ToInt32(v1.MetadataOptions.HttpPutResponseHopLimit) != 2 {
		t.Errorf("version 1 data: %+v", v1)
	}
	_, err = f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(id), Versions: []string{"9"}})
	wantCode(t, "DescribeLaunchTemplateVersions of a version that does not exist", err, "InvalidLaunchTemplateId.VersionNotFound")

	lts := ok[*ec2.DescribeLaunchTemplatesOutput](t, "DescribeLaunchTemplates")(f.ec2.DescribeLaunchTemplates(f.ctx, &ec2.DescribeLaunchTemplatesInput{
		Filters: []types.Filter{ec2Filter("tag:cluster", "c")}})).LaunchTemplates
	if len(lts) != 1 || aws.ToInt64(lts[0].DefaultVersionNumber) != 2 || aws.ToInt64(lts[0].LatestVersionNumber) != 3 || aws.ToString(lts[0].LaunchTemplateName) != "nodes.c" {
		t.Errorf("DescribeLaunchTemplates: %+v", lts)
	}
	_, err = f.ec2.DescribeLaunchTemplates(f.ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"other.c"}})
	wantCode(t, "DescribeLaunchTemplates of a name that does not exist", err, "InvalidLaunchTemplateName.NotFoundException")
	ok[*ec2.DeleteLaunchTemplateOutput](t, "DeleteLaunchTemplate")(f.ec2.DeleteLaunchTemplate(f.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("nodes.c")}))
	if out := ok[*ec2.DescribeLaunchTemplatesOutput](t, "DescribeLaunchTemplates")(f.ec2.DescribeLaunchTemplates(f.ctx, &ec2.DescribeLaunchTemplatesInput{})); len(out.LaunchTemplates) != 0 {
		t.Errorf("after DeleteLaunchTemplate: %+v", out.LaunchTemplates)
	}
}

func TestLaunchTemplateVersionsOfEveryTemplate(t *testing.T) {
	f := newEC2Fake(t)
	a, b := f.template(t, "a.c", "a"), f.template(t, "b.c", "b")
	ok[*ec2.CreateLaunchTemplateVersionOutput](t, "CreateLaunchTemplateVersion")(f.ec2.CreateLaunchTemplateVersion(f.ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId: aws.String(b), SourceVersion: aws.String("$Latest"), LaunchTemplateData: &types.RequestLaunchTemplateData{InstanceType: types.InstanceTypeM5Large}}))
	ok[*ec2.ModifyLaunchTemplateOutput](t, "ModifyLaunchTemplate")(f.ec2.ModifyLaunchTemplate(f.ctx, &ec2.ModifyLaunchTemplateInput{
		LaunchTemplateId: aws.String(b), DefaultVersion: aws.String("2")}))
	var got []string
	p := ec2.NewDescribeLaunchTemplateVersionsPaginator(f.ec2, &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{"$Default"}, MaxResults: aws.Int32(1)})
	for p.HasMorePages() {
		out := ok[*ec2.DescribeLaunchTemplateVersionsOutput](t, "DescribeLaunchTemplateVersions page")(p.NextPage(f.ctx))
		for _, v := range out.LaunchTemplateVersions {
			got = append(got, aws.ToString(v.LaunchTemplateId)+"/"+string(v.LaunchTemplateData.InstanceType))
		}
	}
	if want := []string{a + "/t3.medium", b + "/m5.large"}; !slices.Equal(got, want) {
		t.Errorf("default versions of every template: %v, want %v", got, want)
	}
	_, err := f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{"1"}})
	wantCode(t, "DescribeLaunchTemplateVersions 1 of every template", err, "InvalidParameterCombination")
}

// GroupInvisibleCalls: a new security group is unknown to that many DescribeSecurityGroups and
// AuthorizeSecurityGroupIngress calls.
func TestGroupInvisibleCalls(t *testing.T) {
	f := newEC2Fake(t)
	vpc, _ := f.network(t)
	if err := f.s.SetFaults(Faults{GroupInvisibleCalls: 2}); err != nil {
		t.Fatal(err)
	}
	sg := ok[*ec2.CreateSecurityGroupOutput](t, "CreateSecurityGroup")(f.ec2.CreateSecurityGroup(f.ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("nodes.c"), Description: aws.String("x"), VpcId: aws.String(vpc)}))
	list := ok[*ec2.DescribeSecurityGroupsOutput](t, "DescribeSecurityGroups")(f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{}))
	for _, g := range list.SecurityGroups {
		if aws.ToString(g.GroupId) == aws.ToString(sg.GroupId) {
			t.Errorf("the new group is listed at once")
		}
	}
	in := &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"),
		FromPort: aws.Int32(22), ToPort: aws.Int32(22), IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}}}}
	_, err := f.ec2.AuthorizeSecurityGroupIngress(f.ctx, in)
	wantCode(t, "AuthorizeSecurityGroupIngress right after CreateSecurityGroup", err, "InvalidGroup.NotFound")
	ok[*ec2.AuthorizeSecurityGroupIngressOutput](t, "AuthorizeSecurityGroupIngress at the third call")(f.ec2.AuthorizeSecurityGroupIngress(f.ctx, in))
	out := ok[*ec2.DescribeSecurityGroupsOutput](t, "DescribeSecurityGroups")(f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{
		GroupIds: []string{aws.ToString(sg.GroupId)}}))
	if len(out.SecurityGroups) != 1 || len(out.SecurityGroups[0].IpPermissions) != 1 {
		t.Errorf("groups %+v, want the group with its rule", out.SecurityGroups)
	}
	if err := f.s.SetFaults(Faults{GroupInvisibleCalls: -1}); err == nil {
		t.Error("a negative GroupInvisibleCalls is taken")
	}
}
