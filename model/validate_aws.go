package model

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

func init() {
	cloudModels[CloudAWS] = cloudModel{
		complete: func(s *ClusterSpec) {
			completeAWSRegion(s)
			completeAWS(s)
		},
		machineType: "t3.medium", image: "debian-12-amd64", volumeType: "gp3",
		validate: func(ps *problems, s *ClusterSpec) {
			validateAWSRegionAndZones(ps, s)
			validateAWS(ps, s)
		},
		validateInstanceGroup: validateAWSInstanceGroup,
		volumeTypes:           []string{"gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"},
		fetchesNodeup:         true,
		nodeBinaries:          CloudAWS,
		hostedZone:            true,
		clusterNames: func(name string) []derived {
			return []derived{{"tag key of the cluster's resources", ClusterTagKey(name), maxAWSTagKey, "AWS takes"}}
		},
		encrypts: true,
		section:  "spec.aws",
		set:      func(s *ClusterSpec) bool { return s.AWS != nil },
		createFlags: func(o NewClusterOptions) []createFlag {
			return []createFlag{{"--vpc", o.VPC != ""}, {"--subnets", len(o.Subnets) > 0}, {"--instance-profile", o.InstanceProfile != ""}}
		},
		create: func(s *ClusterSpec, o NewClusterOptions) error {
			if o.VPC == "" && len(o.Subnets) == 0 && o.InstanceProfile == "" {
				return nil
			}
			subnets, err := parseSubnets(o.Subnets, o.Zones)
			if err != nil {
				return err
			}
			s.AWS = &AWSSpec{VPCID: o.VPC, Subnets: subnets, InstanceProfile: o.InstanceProfile}
			return nil
		},
	}
}

// The syntax of AWS's names and ids that the spec carries.
var (
	// awsID is an EC2 resource id: the resource's prefix, then 8 or 17 lower-case hex digits.
	awsID = func(prefix string) *regexp.Regexp {
		return regexp.MustCompile(`^` + prefix + `-([0-9a-f]{8}|[0-9a-f]{17})$`)
	}
	vpcID    = awsID("vpc")
	subnetID = awsID("subnet")
	amiID    = awsID("ami")
	// amiName is an AMI name, or a pattern of one (* and ? as DescribeImages' name filter takes them).
	amiName = regexp.MustCompile(`^[A-Za-z0-9()\[\] ./'@_*?-]{3,128}$`)
	// ec2InstanceType is FAMILY.SIZE: t3.medium, m7gd.2xlarge, u-6tb1.metal.
	ec2InstanceType = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9]+$`)
	// iamName is an IAM instance profile's name.
	iamName     = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	sha256Hex64 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// maxLaunchTemplateName is the longest launch template name EC2 takes; an instance group's template is named
// <group>.<cluster>.
const maxLaunchTemplateName = 128

// maxAWSTagValue is the longest tag value AWS takes.
const maxAWSTagValue = 256

// LaunchTemplateName is the name of an instance group's launch template and Auto Scaling group on aws:
// <group>.<cluster>.
func LaunchTemplateName(cluster, ig string) string { return ig + "." + cluster }

// awsZone is an AWS availability zone: its region (us-east-1, ap-southeast-2, us-gov-west-1) and one letter.
var awsZone = regexp.MustCompile(`^([a-z]{2}(-[a-z]+)+-[0-9]+)[a-z]$`)

// validateAWSRegionAndZones checks spec.region and that each of spec.zones is an availability zone of it, by
// form (whether AWS has the zone is asked at update, when its subnet is read). A zone that is no AWS zone is
// said at the zone, not as a missing spec.region (the region is taken from the first zone when not set).
func validateAWSRegionAndZones(ps *problems, s *ClusterSpec) {
	const fix = "an availability zone is its region and one letter, for example us-east-1a (kubeup create cluster --zones)"
	malformed := false
	for i, z := range s.Zones {
		m := awsZone.FindStringSubmatch(z)
		switch {
		case z == "": // said with the zones' names
		case m == nil:
			malformed = true
			ps.add(Index("spec.zones", i), "%q is not an AWS availability zone: %s", z, fix)
		case s.Region != "" && m[1] != s.Region:
			ps.add(Index("spec.zones", i), "%q is not a zone of spec.region %q: %s", z, s.Region, fix)
		}
	}
	if s.Region == "" && !malformed {
		ps.add("spec.region", "required for cloudProvider aws (for example us-east-1)")
	}
}

// validateAWS checks spec.aws and what else an aws cluster needs: its state store on S3 (the machines read their
// configuration there at boot).
func validateAWS(ps *problems, s *ClusterSpec) {
	if s.ConfigBase != "" && !strings.HasPrefix(s.ConfigBase, "s3://") {
		ps.add("spec.configBase", "%q: nodes read their configuration from the state store: an aws cluster's store must be s3://BUCKET (set KUBEUP_STATE_STORE or --state to an s3:// URL)", s.ConfigBase)
	}
	const p = "spec.aws"
	a := s.AWS
	if a == nil {
		ps.add(p, "required for cloudProvider aws: vpcID and one subnet per zone")
		return
	}
	switch {
	case a.VPCID == "":
		ps.add(p+".vpcID", "required: the id of the VPC the cluster runs in (vpc-...; kubeup create cluster --vpc)")
	case !vpcID.MatchString(a.VPCID):
		ps.add(p+".vpcID", "%q is not a VPC id: want vpc- and 8 or 17 hex digits (vpc-0123456789abcdef0)", a.VPCID)
	}
	if len(a.Subnets) == 0 {
		ps.add(p+".subnets", "required: one subnet per zone of spec.zones %v, each {zone: ZONE, id: subnet-...} (kubeup create cluster --subnets)", s.Zones)
	}
	zones := map[string]bool{}
	ids := map[string]bool{}
	for i, sn := range a.Subnets {
		sp := Index(p+".subnets", i)
		switch {
		case sn.Zone == "":
			ps.add(sp+".zone", "required: one of spec.zones %v", s.Zones)
		case !slices.Contains(s.Zones, sn.Zone):
			ps.add(sp+".zone", "%q is not one of spec.zones %v", sn.Zone, s.Zones)
		case zones[sn.Zone]:
			ps.add(sp+".zone", "%q has another subnet already: one subnet per zone", sn.Zone)
		}
		zones[sn.Zone] = true
		switch {
		case sn.ID == "":
			ps.add(sp+".id", "required: the subnet's id (subnet-...)")
		case !subnetID.MatchString(sn.ID):
			ps.add(sp+".id", "%q is not a subnet id: want subnet- and 8 or 17 hex digits (subnet-0123456789abcdef0)", sn.ID)
		case ids[sn.ID]:
			ps.add(sp+".id", "%q is the subnet of another zone already: a subnet is in one zone", sn.ID)
		}
		ids[sn.ID] = true
	}
	if len(a.Subnets) > 0 {
		for _, z := range s.Zones {
			if !zones[z] {
				ps.add(p+".subnets", "zone %q has no subnet: add {zone: %s, id: subnet-...}", z, z)
			}
		}
	}
	for _, f := range []struct{ field, v string }{
		{"instanceProfile", a.InstanceProfile}, {"controlPlaneInstanceProfile", a.ControlPlaneInstanceProfile},
	} {
		switch {
		case f.v == "":
			ps.add(p+"."+f.field, "required: the name of an existing IAM instance profile")
		case !iamName.MatchString(f.v):
			ps.add(p+"."+f.field, "%q is not an instance profile name: 1-128 letters, digits and + = , . @ _ -", f.v)
		}
	}
	validateCIDRList(ps, p+".apiAccess", a.APIAccess)
	validateCIDRList(ps, p+".sshAccess", a.SSHAccess)
	// Each etcd volume's tag names every member of its cluster: the value must fit AWS's limit.
	for i, e := range s.EtcdClusters {
		for j, m := range e.Members {
			if v := EtcdVolumeTags("", e, m)[EtcdTagKey(e.Name)]; len(v) > maxAWSTagValue {
				ps.add(Index(Index("spec.etcdClusters", i)+".members", j)+".name", "the member's volume tag %s=%q would be %d characters, more than the %d AWS takes: use shorter member names",
					EtcdTagKey(e.Name), shorten(v), len(v), maxAWSTagValue)
			}
		}
	}
}

// validateCIDRList checks a list of IPv4 CIDRs a security group lets in: each valid, without host bits, once.
func validateCIDRList(ps *problems, p string, cidrs []string) {
	for i, v := range cidrs {
		ip := Index(p, i)
		pfx, err := netip.ParsePrefix(v)
		switch {
		case err != nil:
			ps.add(ip, "%q is not a CIDR: want an IPv4 CIDR such as 203.0.113.0/24 (a single address is /32)", v)
		case !pfx.Addr().Is4():
			ps.add(ip, "%q is an IPv6 CIDR: kubeup's security groups take IPv4 CIDRs only", v)
		case pfx.Masked() != pfx:
			ps.add(ip, "%q has host bits set: use %s", v, pfx.Masked())
		case slices.Index(cidrs, v) < i:
			ps.add(ip, "%q is listed twice", v)
		}
	}
}

// validateNodeup checks spec.nodeup of an aws or gce cluster: where the machines fetch nodeup, and its sha256.
func validateNodeup(ps *problems, s *ClusterSpec) {
	const p = "spec.nodeup"
	const how = "set spec.nodeup.url and spec.nodeup.sha256 (kubeup create cluster --nodeup-url URL --nodeup-sha256 HEX), " +
		"or use a kubeup built by `make build` (a release), which carries its nodeup's"
	n := s.Nodeup
	if n == nil || n.URL == "" && n.SHA256 == "" {
		ps.add(p, "required: this kubeup is a development build, which carries no nodeup URL or sha256 for the machines to fetch: %s", how)
		return
	}
	check(ps, p+".url", nodeupURLProblem(n.URL))
	switch {
	case n.SHA256 == "":
		ps.add(p+".sha256", "required: the sha256 of the binary spec.nodeup.url names, 64 hex digits (sha256sum nodeup); "+
			"the machines refuse to run a nodeup without it (kubeup create cluster --nodeup-sha256 HEX)")
	case !sha256Hex64.MatchString(n.SHA256):
		ps.add(p+".sha256", "%q is not a sha256: want 64 hex digits, as sha256sum prints them", shorten(n.SHA256))
	}
}

// nodeupURLProblem checks where the machines download nodeup from: an https:// (or http://) URL with a host, and
// nothing a shell or the user data's quoting would read differently.
func nodeupURLProblem(v string) string {
	if v == "" {
		return "required: where the machines download the linux/amd64 nodeup binary (https://...)"
	}
	u, err := url.Parse(v)
	bad := err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" ||
		len(v) > 2048 || strings.ContainsAny(v, " \t\r\n\"'`\\$#")
	for _, r := range v {
		bad = bad || r < 0x20 || r == 0x7f
	}
	if bad {
		return fmt.Sprintf("%q is not a download URL: want https://HOST/PATH (or http://), without user, fragment, whitespace, quotes, backslashes or $", shorten(v))
	}
	return ""
}

// validateAWSInstanceGroup checks what an aws instance group adds: an EC2 instance type, an AMI, and names that
// fit AWS's limits.
func validateAWSInstanceGroup(ps *problems, c *Cluster, ig *InstanceGroup) {
	p := igPrefix(ig.Metadata.Name)
	s := &ig.Spec
	if s.MachineType != "" && machineType.MatchString(s.MachineType) && !ec2InstanceType.MatchString(s.MachineType) {
		ps.add(p+"spec.machineType", "%q is not an EC2 instance type: want FAMILY.SIZE in lower case, for example t3.medium", s.MachineType)
	}
	switch img := s.Image; {
	case img == "":
	case strings.HasPrefix(img, "ami-") && !strings.ContainsAny(img, "*?"):
		if !amiID.MatchString(img) {
			ps.add(p+"spec.image", "%q is not an AMI id: want ami- and 8 or 17 hex digits, or an AMI name", img)
		}
	case !amiName.MatchString(img):
		ps.add(p+"spec.image", "%q is neither an AMI id (ami-...) nor an AMI name: 3-128 letters, digits and ( ) [ ] space . / ' @ _ - (* and ? match any characters)", shorten(img))
	}
	// A cluster name too long for the ownership tag is that tag's problem, said once.
	if name := ig.Metadata.Name; name != "" && validDNSName(c.Metadata.Name, 2) == "" && len(ClusterTagKey(c.Metadata.Name)) <= maxAWSTagKey {
		if lt := LaunchTemplateName(c.Metadata.Name, name); len(lt) > maxLaunchTemplateName {
			ps.add(p+"metadata.name", "the group's launch template, %q, would be %d characters, more than the %d EC2 takes: use a group name of at most %d characters",
				shorten(lt), len(lt), maxLaunchTemplateName, maxLaunchTemplateName-len(c.Metadata.Name)-1)
		}
	}
}
