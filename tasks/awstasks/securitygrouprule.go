package awstasks

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// SecurityGroupRule is one ingress rule of a security group the cluster owns: a protocol and port range, open to
// an IPv4 or IPv6 block (CIDR) or to the members of another group (SourceGroup). The rule is found by what it
// allows, so a rule whose fields change is another rule: the new one is added, and the group's
// SecurityGroupIngress revokes the old one. Its key is "SecurityGroupRule/<Name>"; the name is the rule's
// description in EC2, and begins with the group's name and "/": that marks the permission as kubeup's.
type SecurityGroupRule struct {
	// Name names the rule: "control-plane.demo.example.com/https".
	Name string
	// Group is the group the rule belongs to.
	Group *SecurityGroup
	// Protocol is "tcp", "udp", "icmp" or "-1" (every protocol, every port).
	Protocol string
	// FromPort and ToPort are the port range (for icmp: the type and the code, -1 for any); required for tcp
	// and udp, ignored for "-1". Pointers, so that port 0 is a port the plan shows, not a field left unset.
	FromPort, ToPort *int32
	// CIDR is the source block ("0.0.0.0/0", "2001:db8::/32"); exactly one of CIDR and SourceGroup is set.
	CIDR *string
	// SourceGroup is the source group: its members may connect.
	SourceGroup *SecurityGroup
}

var (
	_ engine.Resource[*SecurityGroupRule, *Cloud] = (*SecurityGroupRule)(nil)
	_ engine.Renderer[*SecurityGroupRule, *Cloud] = (*SecurityGroupRule)(nil)
	_ engine.Classed                              = (*SecurityGroupRule)(nil)
)

func (r *SecurityGroupRule) Key() engine.Key {
	return engine.Key{Type: "SecurityGroupRule", Name: r.Name}
}

func (r *SecurityGroupRule) Deps() []engine.Task {
	var deps []engine.Task
	if r.Group != nil {
		deps = append(deps, r.Group)
	}
	if r.SourceGroup != nil {
		deps = append(deps, r.SourceGroup)
	}
	return deps
}

func (r *SecurityGroupRule) APIClass() string { return "ec2" }

// Find looks for the permission among the ingress rules of the group (read with the cluster's security groups,
// one DescribeSecurityGroups per run); nil when the group does not allow it, or does not exist yet.
func (r *SecurityGroupRule) Find(ctx context.Context, c *Cloud) (*SecurityGroupRule, error) {
	if r.Group == nil || r.Group.ID == nil || (r.SourceGroup != nil && r.SourceGroup.ID == nil) {
		return nil, nil // a group that a dry run would create: nothing allowed yet
	}
	all, err := c.securityGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, sg := range all {
		if aws.ToString(sg.GroupId) != *r.Group.ID {
			continue
		}
		for _, p := range sg.IpPermissions {
			if r.matches(p) {
				found := *r
				return &found, nil
			}
		}
	}
	return nil, nil
}

// matches reports whether permission p allows what the rule says.
func (r *SecurityGroupRule) matches(p ec2types.IpPermission) bool {
	if normalProtocol(aws.ToString(p.IpProtocol)) != normalProtocol(r.Protocol) {
		return false
	}
	if normalProtocol(r.Protocol) != "-1" && (aws.ToInt32(p.FromPort) != aws.ToInt32(r.FromPort) || aws.ToInt32(p.ToPort) != aws.ToInt32(r.ToPort)) {
		return false
	}
	switch {
	case r.SourceGroup != nil:
		for _, pair := range p.UserIdGroupPairs {
			if aws.ToString(pair.GroupId) == *r.SourceGroup.ID {
				return true
			}
		}
	case r.CIDR != nil:
		want := normalCIDR(*r.CIDR)
		for _, ip := range p.IpRanges {
			if normalCIDR(aws.ToString(ip.CidrIp)) == want {
				return true
			}
		}
		for _, ip := range p.Ipv6Ranges {
			if normalCIDR(aws.ToString(ip.CidrIpv6)) == want {
				return true
			}
		}
	}
	return false
}

// normalProtocol is a protocol as EC2 answers it: "-1" for all, names for the usual numbers.
func normalProtocol(p string) string {
	switch p = strings.ToLower(p); p {
	case "all", "-1":
		return "-1"
	case "6":
		return "tcp"
	case "17":
		return "udp"
	case "1":
		return "icmp"
	}
	return p
}

func normalCIDR(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}

// CheckChanges requires a group, a known protocol, a valid port range and exactly one source.
func (r *SecurityGroupRule) CheckChanges(actual, expected, changes *SecurityGroupRule) error {
	name := expected.Name
	if expected.Group == nil {
		return fmt.Errorf("field Group of security group rule %s is required", name)
	}
	switch p := normalProtocol(expected.Protocol); p {
	case "-1":
	case "tcp", "udp":
		if expected.FromPort == nil || expected.ToPort == nil {
			return fmt.Errorf("fields FromPort and ToPort of security group rule %s are required for protocol %s", name, p)
		}
		if from, to := *expected.FromPort, *expected.ToPort; from < 0 || to > 65535 || from > to {
			return fmt.Errorf("fields FromPort and ToPort of security group rule %s: %d-%d is not a port range: give 0 <= FromPort <= ToPort <= 65535",
				name, from, to)
		}
	case "icmp", "icmpv6":
	default:
		return fmt.Errorf("field Protocol of security group rule %s: %q is not one of tcp, udp, icmp, -1", name, expected.Protocol)
	}
	if (expected.CIDR == nil) == (expected.SourceGroup == nil) {
		return fmt.Errorf("security group rule %s: set exactly one of CIDR and SourceGroup", name)
	}
	if expected.CIDR != nil {
		if _, err := netip.ParsePrefix(*expected.CIDR); err != nil {
			return fmt.Errorf("field CIDR of security group rule %s: %q is not an address block such as 10.0.0.0/16", name, *expected.CIDR)
		}
	}
	return nil
}

// Render adds the permission to the group (AuthorizeSecurityGroupIngress), with the rule's name as its
// description. A permission that is already there (an earlier run added it, and the group's list did not show it
// yet) is success; a group EC2 does not know yet (just made) is NotReady.
func (r *SecurityGroupRule) Render(ctx context.Context, c *Cloud, actual, expected, changes *SecurityGroupRule) error {
	defer c.reads.groups.Forget()
	if expected.Group.ID == nil || (expected.SourceGroup != nil && expected.SourceGroup.ID == nil) {
		return engine.NotReady(errors.New("the group's id is not known yet"))
	}
	desc := aws.String(ruleDescription(expected.Name))
	p := ec2types.IpPermission{IpProtocol: aws.String(normalProtocol(expected.Protocol))}
	if *p.IpProtocol != "-1" {
		p.FromPort, p.ToPort = aws.Int32(aws.ToInt32(expected.FromPort)), aws.Int32(aws.ToInt32(expected.ToPort))
	}
	switch {
	case expected.SourceGroup != nil:
		p.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: expected.SourceGroup.ID, Description: desc}}
	case strings.Contains(*expected.CIDR, ":"):
		p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: expected.CIDR, Description: desc}}
	default:
		p.IpRanges = []ec2types.IpRange{{CidrIp: expected.CIDR, Description: desc}}
	}
	_, err := c.EC2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId:       expected.Group.ID,
		IpPermissions: []ec2types.IpPermission{p},
	})
	if ErrorCode(err) == "InvalidPermission.Duplicate" {
		return nil
	}
	if err != nil {
		err = Classify(fmt.Sprintf("adding rule %s to security group %s (%s)", expected.Name, expected.Group.Name, *expected.Group.ID), err)
		if ErrorCode(err) == "InvalidGroup.NotFound" {
			// EC2 is eventually consistent: a group just made (this one or the source) may be unknown for a while.
			return engine.NotReady(fmt.Errorf("%w (a new group is not known everywhere yet)", err))
		}
		return err
	}
	engine.Logger(ctx).Info("added security group rule", "group", *expected.Group.ID)
	return nil
}

// ruleDescription is name in the characters EC2 takes in a rule's description, at most 255 of them.
func ruleDescription(name string) string {
	const allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789. _-:/()#,@[]+=&;{}!$*"
	b := []byte(name)
	for i, ch := range b {
		if !strings.ContainsRune(allowed, rune(ch)) {
			b[i] = '_'
		}
	}
	if len(b) > 255 {
		b = b[:255]
	}
	return string(b)
}
