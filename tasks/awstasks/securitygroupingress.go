package awstasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// SecurityGroupIngress is the set of ingress rules kubeup keeps in one of the cluster's security groups: the
// group's SecurityGroupRule tasks, listed in Rules. A permission that carries a description of kubeup's (the
// group's name and "/", as every rule of the group is named) and that none of Rules allows is revoked: a CIDR
// narrowed or removed from the spec, a rule the model no longer makes. A permission without such a description
// (made by hand or by another tool) is never touched. The task depends on its rules, so a narrowed rule is
// replaced without a gap: the new one is added before the old one is revoked. Its key is
// "SecurityGroupIngress/<group name>".
type SecurityGroupIngress struct {
	// Group is the security group.
	Group *SecurityGroup
	// Rules are all the rule tasks of Group; each is named "<group name>/...".
	Rules []*SecurityGroupRule `kubeup:"-"`
	// Permissions are the rules kubeup keeps in the group, "<rule name>: <protocol> <ports> from <source>"; Resolve
	// makes them from Rules. Found: the same, and the permissions with kubeup's description that none of Rules
	// allows, which Render revokes (a plan shows them as removed).
	Permissions []string `kubeup:"set,nilempty"`

	stale []ec2types.IpPermission // found: the permissions to revoke, one source each
}

var (
	_ engine.Resource[*SecurityGroupIngress, *Cloud] = (*SecurityGroupIngress)(nil)
	_ engine.Renderer[*SecurityGroupIngress, *Cloud] = (*SecurityGroupIngress)(nil)
	_ engine.Resolver                                = (*SecurityGroupIngress)(nil)
	_ engine.Classed                                 = (*SecurityGroupIngress)(nil)
)

func (i *SecurityGroupIngress) Key() engine.Key {
	name := ""
	if i.Group != nil {
		name = i.Group.Name
	}
	return engine.Key{Type: "SecurityGroupIngress", Name: name}
}

func (i *SecurityGroupIngress) Deps() []engine.Task {
	var deps []engine.Task
	if i.Group != nil {
		deps = append(deps, i.Group)
	}
	for _, r := range i.Rules {
		deps = append(deps, r)
	}
	return deps
}

func (i *SecurityGroupIngress) APIClass() string { return "ec2" }

// Resolve states the rules as text.
func (i *SecurityGroupIngress) Resolve() error {
	i.Permissions = make([]string, 0, len(i.Rules))
	for _, r := range i.Rules {
		i.Permissions = append(i.Permissions, r.text())
	}
	return nil
}

// text is the rule for people, as SecurityGroupIngress lists it.
func (r *SecurityGroupRule) text() string {
	source := ""
	switch {
	case r.SourceGroup != nil:
		source = "group " + r.SourceGroup.Name
	case r.CIDR != nil:
		source = normalCIDR(*r.CIDR)
	}
	return permissionText(ruleDescription(r.Name), r.Protocol, aws.ToInt32(r.FromPort), aws.ToInt32(r.ToPort), source)
}

// permissionText is a permission for people: "nodes.c/ssh: tcp 22 from 10.0.0.0/8".
func permissionText(desc, protocol string, from, to int32, source string) string {
	ports := ""
	switch p := normalProtocol(protocol); {
	case p == "-1":
		return fmt.Sprintf("%s: every protocol from %s", desc, source)
	case p == "icmp" || p == "icmpv6":
		ports = fmt.Sprintf(" type %d code %d", from, to)
	case from == to:
		ports = fmt.Sprintf(" %d", from)
	default:
		ports = fmt.Sprintf(" %d-%d", from, to)
	}
	return fmt.Sprintf("%s: %s%s from %s", desc, normalProtocol(protocol), ports, source)
}

// Find reads the group's permissions (with the cluster's security groups, one DescribeSecurityGroups per run).
// What it finds is Rules (each rule task adds its own permission; this task does not report them twice) and the
// permissions with kubeup's description that none of Rules allows; a group that does not exist yet has none.
func (i *SecurityGroupIngress) Find(ctx context.Context, c *Cloud) (*SecurityGroupIngress, error) {
	a := &SecurityGroupIngress{Group: i.Group, Permissions: slices.Clone(i.Permissions)}
	if i.Group == nil || i.Group.ID == nil {
		return a, nil // a group a dry run would create
	}
	all, err := c.securityGroups(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	var sg *ec2types.SecurityGroup
	for k := range all {
		names[aws.ToString(all[k].GroupId)] = aws.ToString(all[k].GroupName)
		if aws.ToString(all[k].GroupId) == *i.Group.ID {
			sg = &all[k]
		}
	}
	if sg == nil {
		return a, nil
	}
	prefix := ruleDescription(i.Group.Name + "/")
	for _, p := range sg.IpPermissions {
		for _, one := range singleSource(p) {
			if !strings.HasPrefix(one.desc, prefix) || slices.ContainsFunc(i.Rules, func(r *SecurityGroupRule) bool {
				return (r.SourceGroup == nil || r.SourceGroup.ID != nil) && r.matches(one.perm)
			}) {
				continue
			}
			source := one.source
			if n, ok := names[source]; ok {
				source = "group " + n
			}
			a.Permissions = append(a.Permissions, permissionText(one.desc, aws.ToString(p.IpProtocol),
				aws.ToInt32(p.FromPort), aws.ToInt32(p.ToPort), source))
			a.stale = append(a.stale, one.perm)
		}
	}
	return a, nil
}

// sourcePermission is a permission with one of its sources, and that source's description.
type sourcePermission struct {
	perm   ec2types.IpPermission
	source string // a CIDR or a group id
	desc   string
}

// singleSource splits a permission into one per source (block or group), as rules are revoked.
func singleSource(p ec2types.IpPermission) []sourcePermission {
	base := ec2types.IpPermission{IpProtocol: p.IpProtocol, FromPort: p.FromPort, ToPort: p.ToPort}
	var out []sourcePermission
	for _, r := range p.IpRanges {
		one := base
		one.IpRanges = []ec2types.IpRange{{CidrIp: r.CidrIp}}
		out = append(out, sourcePermission{one, aws.ToString(r.CidrIp), aws.ToString(r.Description)})
	}
	for _, r := range p.Ipv6Ranges {
		one := base
		one.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: r.CidrIpv6}}
		out = append(out, sourcePermission{one, aws.ToString(r.CidrIpv6), aws.ToString(r.Description)})
	}
	for _, pair := range p.UserIdGroupPairs {
		one := base
		one.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: pair.GroupId}}
		out = append(out, sourcePermission{one, aws.ToString(pair.GroupId), aws.ToString(pair.Description)})
	}
	return out
}

// CheckChanges requires a group, and rules of that group named after it (the description that marks kubeup's
// permissions).
func (i *SecurityGroupIngress) CheckChanges(actual, expected, changes *SecurityGroupIngress) error {
	if expected.Group == nil {
		return errors.New("field Group of a security group's ingress is required")
	}
	prefix := expected.Group.Name + "/"
	for _, r := range expected.Rules {
		if r.Group == nil || r.Group.Name != expected.Group.Name {
			return fmt.Errorf("field Rules of the ingress of security group %s: rule %s is not a rule of the group", expected.Group.Name, r.Name)
		}
		if !strings.HasPrefix(r.Name, prefix) {
			return fmt.Errorf("field Rules of the ingress of security group %s: rule %s is not named %s...: its description "+
				"would not mark it as kubeup's", expected.Group.Name, r.Name, prefix)
		}
	}
	return nil
}

// Render revokes the permissions with kubeup's description that no rule asks for. The rules themselves are
// added by their tasks, which ran before.
func (i *SecurityGroupIngress) Render(ctx context.Context, c *Cloud, actual, expected, changes *SecurityGroupIngress) error {
	if actual == nil || len(actual.stale) == 0 {
		return nil
	}
	defer c.reads.groups.Forget()
	id := aws.ToString(expected.Group.ID)
	_, err := c.EC2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{
		GroupId:       aws.String(id),
		IpPermissions: actual.stale,
	})
	if ErrorCode(err) == "InvalidPermission.NotFound" {
		// Another run revoked one of them already: read the group again.
		return engine.NotReady(fmt.Errorf("revoking rules of security group %s (%s): %w", expected.Group.Name, id, err))
	}
	if err != nil {
		return Classify(fmt.Sprintf("revoking rules of security group %s (%s)", expected.Group.Name, id), err)
	}
	engine.Logger(ctx).Info("revoked security group rules that the spec no longer asks for", "group", id, "rules", len(actual.stale))
	return nil
}
