package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/version"
)

func TestValidateAWS(t *testing.T) {
	aws := func(f func(a *AWSSpec)) func(*Cluster, []*InstanceGroup) []*InstanceGroup {
		return func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup { f(c.Spec.AWS); return igs }
	}
	runValidateCases(t, []validateCase{
		{
			name:  "no spec.aws",
			cloud: CloudAWS,
			user:  func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup { c.Spec.AWS = nil; return igs },
			want: []wantProblem{
				{"spec.aws.vpcID", "required: the id of the VPC the cluster runs in (vpc-...; kubeup create cluster --vpc)$"},
				{"spec.aws.subnets", "required: one subnet per zone of spec.zones [us-east-1a us-east-1b us-east-1c]"},
			},
		},
		{
			name:  "the cluster named like its hosted zone",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.DNSZone = c.Metadata.Name
				return igs
			},
			want: []wantProblem{
				{"spec.dnsZone", `use the parent zone "example.com", or name the cluster under "demo.example.com" (for example demo.demo.example.com)$`},
			},
		},
		{
			name:  "ids that are not AWS's",
			cloud: CloudAWS,
			user: aws(func(a *AWSSpec) {
				a.VPCID = "vpc-123"
				a.Subnets[1].ID = "sn-0123456789abcdef0"
				a.Subnets[2].ID = ""
			}),
			want: []wantProblem{
				{"spec.aws.vpcID", `"vpc-123" is not a VPC id: want vpc- and 8 or 17 hex digits`},
				{"spec.aws.subnets[1].id", `"sn-0123456789abcdef0" is not a subnet id`},
				{"spec.aws.subnets[2].id", "required: the subnet's id (subnet-...)"},
			},
		},
		{
			name:  "a zone without a subnet, a subnet of another zone, a zone twice, a subnet twice",
			cloud: CloudAWS,
			user: aws(func(a *AWSSpec) {
				a.Subnets = []AWSSubnetSpec{
					{"us-east-1a", testSubnet("a")}, {"us-east-1d", testSubnet("b")}, {"us-east-1a", testSubnet("c")},
					{"", testSubnet("c")},
				}
			}),
			want: []wantProblem{
				{"spec.aws.subnets[1].zone", `"us-east-1d" is not one of spec.zones [us-east-1a us-east-1b us-east-1c]`},
				{"spec.aws.subnets[2].zone", `"us-east-1a" has another subnet already: one subnet per zone`},
				{"spec.aws.subnets[3].zone", "required: one of spec.zones"},
				{"spec.aws.subnets[3].id", `"subnet-0000000000000000c" is the subnet of another zone already`},
				{"spec.aws.subnets", `zone "us-east-1b" has no subnet`},
				{"spec.aws.subnets", `zone "us-east-1c" has no subnet`},
			},
		},
		{
			name:  "instance profiles",
			cloud: CloudAWS,
			user:  aws(func(a *AWSSpec) { a.InstanceProfile = "nodes profile" }),
			complete: func(c *Cluster, _ []*InstanceGroup) {
				if c.Spec.AWS.ControlPlaneInstanceProfile != "nodes profile" {
					t.Errorf("controlPlaneInstanceProfile = %q, want instanceProfile's", c.Spec.AWS.ControlPlaneInstanceProfile)
				}
				c.Spec.AWS.ControlPlaneInstanceProfile = ""
			},
			want: []wantProblem{
				{"spec.aws.instanceProfile", `"nodes profile" is not an instance profile name`},
				{"spec.aws.controlPlaneInstanceProfile", "required: the name of an existing IAM instance profile"},
			},
		},
		{
			name:  "access CIDRs",
			cloud: CloudAWS,
			user: aws(func(a *AWSSpec) {
				a.APIAccess = []string{"203.0.113.0/24", "203.0.113.7/24", "2001:db8::/32", "203.0.113.0/24"}
				a.SSHAccess = []string{"10.0.0.1", "192.0.2.1/32"}
			}),
			want: []wantProblem{
				{"spec.aws.apiAccess[1]", `"203.0.113.7/24" has host bits set: use 203.0.113.0/24`},
				{"spec.aws.apiAccess[2]", `"2001:db8::/32" is an IPv6 CIDR: kubeup's security groups take IPv4 CIDRs only`},
				{"spec.aws.apiAccess[3]", `"203.0.113.0/24" is listed twice`},
				{"spec.aws.sshAccess[0]", `"10.0.0.1" is not a CIDR: want an IPv4 CIDR such as 203.0.113.0/24 (a single address is /32)`},
			},
		},
		{
			name:  "an aws cluster's state store is on S3",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.ConfigBase = "file:///tmp/s/demo.example.com"
				return igs
			},
			want: []wantProblem{{"spec.configBase", `"file:///tmp/s/demo.example.com": nodes read their configuration from the state store: an aws cluster's store must be s3://`}},
		},
		{
			name: "spec.aws on another cloud",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.AWS = &AWSSpec{VPCID: testVPC}
				return igs
			},
			want: []wantProblem{{"spec.aws", "is for cloudProvider aws only, and cloudProvider is local: remove it"}},
		},
		{
			name:  "instance types and images",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				group(igs, "control-plane-a").Spec.MachineType = "T3.Medium"
				group(igs, "control-plane-b").Spec.Image = "ami-12345"
				group(igs, "control-plane-c").Spec.Image = "ami-0123456789abcdef0"
				group(igs, "nodes").Spec.Image = "debian-12-amd64-*"
				group(igs, "nodes").Spec.MachineType = "m7gd.2xlarge"
				igs = append(igs, newInstanceGroup("extra", RoleNode, []string{"us-east-1a"}, 1))
				igs[len(igs)-1].Spec.Image = "debian{12}"
				igs[len(igs)-1].Spec.MachineType = "local"
				return igs
			},
			want: []wantProblem{
				{"instancegroup/control-plane-a: spec.machineType", `"T3.Medium" is not an EC2 instance type: want FAMILY.SIZE in lower case, for example t3.medium`},
				{"instancegroup/control-plane-b: spec.image", `"ami-12345" is not an AMI id`},
				{"instancegroup/extra: spec.machineType", `"local" is not an EC2 instance type`},
				{"instancegroup/extra: spec.image", `"debian{12}" is neither an AMI id (ami-...) nor an AMI name`},
			},
		},
		{
			name:  "a group name too long for its launch template",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				return append(igs, newInstanceGroup(strings.Repeat("n", 63), RoleNode, []string{"us-east-1a"}, 1))
			},
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Metadata.Name = strings.Repeat("d", 63) + ".example.com"
				c.Spec.API.PublicName, c.Spec.API.InternalName = "api."+c.Metadata.Name, "api.internal."+c.Metadata.Name
			},
			want: []wantProblem{{"instancegroup/" + strings.Repeat("n", 63) + ": metadata.name",
				"would be 139 characters, more than the 128 EC2 takes: use a group name of at most 52 characters"}},
		},

		// spec.nodeup
		{
			name:  "no nodeup in a development build",
			cloud: CloudGCE,
			user:  func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup { c.Spec.Nodeup = nil; return igs },
			want:  []wantProblem{{"spec.nodeup", "required: this kubeup is a development build, which carries no nodeup URL or sha256 for the machines to fetch: set spec.nodeup.url and spec.nodeup.sha256 (kubeup create cluster --nodeup-url URL --nodeup-sha256 HEX)"}},
		},
		{
			name:  "a nodeup url without its sha256",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup.SHA256 = ""
				return igs
			},
			want: []wantProblem{{"spec.nodeup.sha256", "required: the sha256 of the binary spec.nodeup.url names, 64 hex digits (sha256sum nodeup); the machines refuse to run a nodeup without it (kubeup create cluster --nodeup-sha256 HEX)$"}},
		},
		{
			name:  "a nodeup sha256 without its url, and not a sha256",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup = &NodeupSpec{SHA256: "abc"}
				return igs
			},
			want: []wantProblem{
				{"spec.nodeup.url", "required: where the machines download the linux/amd64 nodeup binary (https://...)"},
				{"spec.nodeup.sha256", `"abc" is not a sha256: want 64 hex digits, as sha256sum prints them`},
			},
		},
		{
			name:  "nodeup urls",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup.URL = "ftp://example.com/nodeup"
				return igs
			},
			want: []wantProblem{{"spec.nodeup.url", `"ftp://example.com/nodeup" is not a download URL: want https://HOST/PATH (or http://)`}},
		},
		{
			name:  "a nodeup url a shell would read differently",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup.URL = "https://example.com/nodeup'; rm -rf /'"
				return igs
			},
			want: []wantProblem{{"spec.nodeup.url", "is not a download URL"}},
		},
		{
			name:  "an http nodeup url is valid (the sha256 protects it)",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup.URL = "http://mirror.internal:8080/nodeup?version=1"
				return igs
			},
		},
		{
			name: "nodeup on local",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Nodeup = &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}
				return igs
			},
			want: []wantProblem{{"spec.nodeup", "is for the clouds whose machines fetch nodeup at boot (aws, gce); the local provider does not: remove it"}},
		},
	})
}

// stampNodeup sets the nodeup this kubeup build carries, as `make build` does, for the test.
func stampNodeup(t *testing.T, url, sha string) {
	t.Helper()
	old := version.Nodeup
	version.Nodeup = CloudAWS + "=" + url + "@" + sha + "," + CloudGCE + "=" + url + "@" + sha
	t.Cleanup(func() { version.Nodeup = old })
}

func TestCompleteAWSAndNodeup(t *testing.T) {
	const stampedURL = "https://github.com/kubeup-dev/kubeup/releases/download/v1.2.3/nodeup-linux-amd64"
	stampedSHA := strings.Repeat("5a", 32)
	tests := []struct {
		name       string
		cloud      string
		nodeup     *NodeupSpec
		wantNodeup *NodeupSpec
	}{
		{"the build's nodeup", CloudAWS, nil, &NodeupSpec{URL: stampedURL, SHA256: stampedSHA}},
		{"the build's nodeup on gce", CloudGCE, nil, &NodeupSpec{URL: stampedURL, SHA256: stampedSHA}},
		{"the spec's nodeup", CloudAWS, &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}, &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}},
		// A url set by hand never gets the build's sha256, which is another binary's.
		{"a url without a sha256", CloudAWS, &NodeupSpec{URL: testNodeupURL}, &NodeupSpec{URL: testNodeupURL}},
		{"a sha256 without a url", CloudAWS, &NodeupSpec{SHA256: testNodeupSHA256}, &NodeupSpec{SHA256: testNodeupSHA256}},
		{"local fetches no nodeup", CloudLocal, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stampNodeup(t, stampedURL, stampedSHA)
			c, igs := userSpec(t, tt.cloud, 1)
			c.Spec.Nodeup = tt.nodeup
			full, _ := Complete(c, igs)
			if diff := cmp.Diff(tt.wantNodeup, full.Spec.Nodeup); diff != "" {
				t.Errorf("spec.nodeup (-want +got):\n%s", diff)
			}
			again, _ := Complete(full, igs)
			if diff := cmp.Diff(full, again); diff != "" {
				t.Errorf("completing the complete spec changed it (-first +second):\n%s", diff)
			}
		})
	}

	c, igs := userSpec(t, CloudAWS, 1)
	c.Spec.AWS.SSHAccess = []string{"192.0.2.0/24"}
	full, _ := Complete(c, igs)
	want := &AWSSpec{VPCID: testVPC, Subnets: c.Spec.AWS.Subnets, InstanceProfile: "kubeup", ControlPlaneInstanceProfile: "kubeup",
		APIAccess: []string{"0.0.0.0/0"}, SSHAccess: []string{"192.0.2.0/24"}}
	if diff := cmp.Diff(want, full.Spec.AWS); diff != "" {
		t.Errorf("spec.aws (-want +got):\n%s", diff)
	}
	c.Spec.AWS.ControlPlaneInstanceProfile = "control-plane"
	if full, _ := Complete(c, igs); full.Spec.AWS.ControlPlaneInstanceProfile != "control-plane" || full.Spec.AWS.InstanceProfile != "kubeup" {
		t.Errorf("instance profiles %q and %q, want kubeup and control-plane", full.Spec.AWS.InstanceProfile, full.Spec.AWS.ControlPlaneInstanceProfile)
	}
}

// TestValidateAWSEtcdTagValue: each etcd volume's tag value names every member of its cluster, and AWS takes 256
// characters.
func TestValidateAWSEtcdTagValue(t *testing.T) {
	c, igs := userSpec(t, CloudAWS, 5)
	c, igs = Complete(c, igs)
	for i := range c.Spec.EtcdClusters[0].Members {
		c.Spec.EtcdClusters[0].Members[i].Name = strings.Repeat(string(rune('a'+i)), 63)
	}
	var want []wantProblem
	for i := range 5 {
		want = append(want, wantProblem{fmt.Sprintf("spec.etcdClusters[0].members[%d].name", i),
			"would be 383 characters, more than the 256 AWS takes: use shorter member names$"})
	}
	matchProblems(t, want, problemsOf(t, Validate("test", c, igs)))
}

// TestAWSRegionAndZones: a zone that is no AWS availability zone (its region and a letter) is said at
// spec.zones[N], with the --zones flag; a zone of another region too; and spec.region, taken from the first zone
// when not set, is not blamed for a first zone that is no zone (--zones foo said "spec.region: required").
func TestAWSRegionAndZones(t *testing.T) {
	const fix = ": an availability zone is its region and one letter, for example us-east-1a (kubeup create cluster --zones)"
	for _, tt := range []struct {
		name   string
		region string
		zones  []string
		want   []Problem
	}{
		{"zones of the region", "us-east-1", []string{"us-east-1a", "us-east-1f"}, nil},
		{"other partitions' regions", "us-gov-west-1", []string{"us-gov-west-1a"}, nil},
		{"no zone: the region not blamed", "", []string{"foo"}, []Problem{{"spec.zones[0]", `"foo" is not an AWS availability zone` + fix}}},
		{"a region, not a zone", "us-east-1", []string{"us-east-1a", "us-east-1"}, []Problem{{"spec.zones[1]", `"us-east-1" is not an AWS availability zone` + fix}}},
		{"two letters", "us-east-1", []string{"us-east-1ab"}, []Problem{{"spec.zones[0]", `"us-east-1ab" is not an AWS availability zone` + fix}}},
		{"another region that shares a prefix", "us-east-1", []string{"us-east-10a"}, []Problem{{"spec.zones[0]", `"us-east-10a" is not a zone of spec.region "us-east-1"` + fix}}},
		{"no region, well-formed zones", "", []string{"us-east-1a"}, []Problem{{"spec.region", "required for cloudProvider aws (for example us-east-1)"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ps problems
			validateAWSRegionAndZones(&ps, &ClusterSpec{Region: tt.region, Zones: tt.zones})
			if diff := cmp.Diff(tt.want, ps.list); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
