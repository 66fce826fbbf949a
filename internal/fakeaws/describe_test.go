package fakeaws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

// describeRaw runs one Describe of service on f's server (us-east-1) and returns the items of its list (as XML),
// its next page's token, and its error's code ("" when none).
func describeRaw(t *testing.T, f *ec2Fake, service, action string, kv ...string) (items []string, next, code string) {
	t.Helper()
	form := url.Values{"Action": {action}}
	for i := 0; i < len(kv); i += 2 {
		form.Add(kv[i], kv[i+1])
	}
	f.s.mu.Lock()
	var res any
	var err error
	if service == svcEC2 {
		res, err = f.s.ec2Action("us-east-1", action, form)
	} else {
		res, err = f.s.asgAction("us-east-1", action, form)
	}
	f.s.mu.Unlock()
	if err != nil {
		return nil, "", err.(*Error).Code
	}
	var b bytes.Buffer
	if err := xml.NewEncoder(&b).EncodeElement(res, xml.StartElement{Name: xml.Name{Local: "answer"}}); err != nil {
		t.Fatalf("%s: encoding the answer: %v", action, err)
	}
	var answer struct {
		Children []struct {
			XMLName xml.Name
			Text    string `xml:",chardata"`
			Items   []struct {
				Inner string `xml:",innerxml"`
			} `xml:",any"`
		} `xml:",any"`
	}
	if err := xml.Unmarshal(b.Bytes(), &answer); err != nil {
		t.Fatalf("%s: decoding %s: %v", action, b.String(), err)
	}
	for _, c := range answer.Children {
		switch c.XMLName.Local {
		case "nextToken", "NextToken":
			next = c.Text
		case "requestId":
		default:
			for _, it := range c.Items {
				items = append(items, it.Inner)
			}
		}
	}
	return items, next, ""
}

// TestDescribePages checks every Describe that lists through describe keeps its API's filter names, its error for
// an unknown filter, the bounds of its page size (the smallest allowed, one less refused, a larger one than the
// largest capped), and pages that, walked with NextToken at the smallest size, list what one answer lists.
func TestDescribePages(t *testing.T) {
	f := newEC2Fake(t)
	vpc, subnets := f.network(t, "us-east-1a", "us-east-1b", "us-east-1c", "us-east-1a", "us-east-1b", "us-east-1c")
	for range 5 {
		ok[*ec2.CreateVpcOutput](t, "CreateVpc")(f.ec2.CreateVpc(f.ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16")}))
	}
	var groups []string
	for i := range 6 {
		g := ok[*ec2.CreateSecurityGroupOutput](t, "CreateSecurityGroup")(f.ec2.CreateSecurityGroup(f.ctx, &ec2.CreateSecurityGroupInput{
			GroupName: aws.String(fmt.Sprintf("g%d", i)), Description: aws.String("d"), VpcId: aws.String(vpc)}))
		groups = append(groups, aws.ToString(g.GroupId))
	}
	var templates []string
	for i := range 3 {
		templates = append(templates, f.template(t, fmt.Sprintf("lt%d.c", i), "#!/bin/sh\n", groups[0]))
	}
	for i := range 6 {
		f.runInstance(t, templates[i%3], subnets[i])
		f.createVolume(t, "us-east-1a", 10, "n", strconv.Itoa(i))
	}
	for i := range 3 {
		var tags []astypes.Tag
		for k := range 20 {
			tags = append(tags, astypes.Tag{Key: aws.String(fmt.Sprintf("k%02d", k)), Value: aws.String("v"), PropagateAtLaunch: aws.Bool(false)})
		}
		ok[*autoscaling.CreateAutoScalingGroupOutput](t, "CreateAutoScalingGroup")(f.asg.CreateAutoScalingGroup(f.ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(fmt.Sprintf("asg%d", i)), MinSize: aws.Int32(1), MaxSize: aws.Int32(1),
			LaunchTemplate:    &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(templates[i]), Version: aws.String("$Latest")},
			VPCZoneIdentifier: aws.String(subnets[0]), Tags: tags}))
	}
	if _, err := f.ec2.AuthorizeSecurityGroupIngress(f.ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(groups[1]),
		IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(1), ToPort: aws.Int32(1), IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}},
			{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(2), ToPort: aws.Int32(2), IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}}}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		service, action string
		args            []string // what the Describe needs beside pages and filters
		filter          string   // a filter it knows
		min, max        int
		badFilter       string // the code of an unknown filter's error
	}{
		{svcEC2, "DescribeVolumes", nil, "attachment.status", 5, 500, "InvalidParameterValue"},
		{svcEC2, "DescribeVpcs", nil, "cidr-block-association.cidr-block", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeSubnets", nil, "availability-zone-id", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeSecurityGroups", nil, "group-name", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeSecurityGroupRules", nil, "security-group-rule-id", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeImages", nil, "root-device-type", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeLaunchTemplates", nil, "create-time", 1, 200, "InvalidParameterValue"},
		{svcEC2, "DescribeLaunchTemplateVersions", []string{"LaunchTemplateVersion.1", "$Latest"}, "iam-instance-profile", 1, 200, "InvalidParameterValue"},
		{svcEC2, "DescribeInstances", nil, "instance.group-id", 5, 1000, "InvalidParameterValue"},
		{svcEC2, "DescribeTags", nil, "resource-type", 5, 1000, "InvalidParameterValue"},
		{svcAutoScaling, "DescribeAutoScalingGroups", nil, "tag-value", 1, 100, "ValidationError"},
		{svcAutoScaling, "DescribeTags", nil, "propagate-at-launch", 1, 100, "ValidationError"},
		{svcAutoScaling, "DescribeAutoScalingInstances", nil, "", 1, 100, ""},
	} {
		t.Run(tc.service+"/"+tc.action, func(t *testing.T) {
			maxParam, filterName, filterValue := "MaxResults", "Filter.1.Name", "Filter.1.Value.1"
			if tc.service == svcAutoScaling {
				maxParam, filterName, filterValue = "MaxRecords", "Filters.member.1.Name", "Filters.member.1.Values.member.1"
			}
			args := func(kv ...string) []string { return append(slices.Clone(tc.args), kv...) }
			// Auto Scaling answers 50 at most when it is not told (EC2 all of them): ask for its largest page.
			all, next, code := describeRaw(t, f, tc.service, tc.action, args(maxParam, strconv.Itoa(tc.max))...)
			if code != "" || next != "" || len(all) <= tc.min && tc.action != "DescribeImages" { // the fake has 4 images
				t.Fatalf("the largest page: %d items, next %q, error %q; want more than %d items and no next page", len(all), next, code, tc.min)
			}
			if tc.service == svcEC2 {
				if whole, _, _ := describeRaw(t, f, tc.service, tc.action, tc.args...); !slices.Equal(whole, all) {
					t.Errorf("without %s: %d items, with %s %d: %d", maxParam, len(whole), maxParam, tc.max, len(all))
				}
			}
			var walked []string
			for i := 0; i == 0 || next != ""; i++ {
				kv := args(maxParam, strconv.Itoa(tc.min))
				if next != "" {
					kv = append(kv, "NextToken", next)
				}
				var page []string
				page, next, code = describeRaw(t, f, tc.service, tc.action, kv...)
				if code != "" || len(page) > tc.min || i > len(all) {
					t.Fatalf("page %d at %s %d: %d items, error %q", i, maxParam, tc.min, len(page), code)
				}
				walked = append(walked, page...)
			}
			if diff := cmp.Diff(all, walked); diff != "" {
				t.Errorf("pages of %d (-one answer +walked):\n%s", tc.min, diff)
			}
			wantBad := "InvalidParameterValue"
			if tc.service == svcAutoScaling {
				wantBad = "ValidationError"
			}
			if _, _, code := describeRaw(t, f, tc.service, tc.action, args(maxParam, strconv.Itoa(tc.min-1))...); code != wantBad {
				t.Errorf("%s %d: error %q, want %s", maxParam, tc.min-1, code, wantBad)
			}
			if got, _, code := describeRaw(t, f, tc.service, tc.action, args(maxParam, strconv.Itoa(tc.max+1))...); code != "" || !slices.Equal(got, all) {
				t.Errorf("%s %d: %d items, error %q; want the largest page", maxParam, tc.max+1, len(got), code)
			}
			if _, _, code := describeRaw(t, f, tc.service, tc.action, args("NextToken", "!")...); code != wantBad {
				t.Errorf("NextToken !: error %q, want %s", code, wantBad)
			}
			if tc.filter == "" {
				return
			}
			if _, _, code := describeRaw(t, f, tc.service, tc.action, args(filterName, tc.filter, filterValue, "*")...); code != "" {
				t.Errorf("filter %s: error %q", tc.filter, code)
			}
			if _, _, code := describeRaw(t, f, tc.service, tc.action, args(filterName, "no-such-filter", filterValue, "*")...); code != tc.badFilter {
				t.Errorf("an unknown filter: error %q, want %s", code, tc.badFilter)
			}
			if tc.service == svcEC2 && !strings.HasPrefix(tc.action, "DescribeLaunchTemplateVersions") {
				if _, _, code := describeRaw(t, f, tc.service, tc.action, args(filterName, "tag-key", filterValue, "*")...); code != "" {
					t.Errorf("filter tag-key: error %q", code)
				}
			}
		})
	}
}
