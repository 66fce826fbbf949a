package awstasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

func groupGraph(n network, description *string, rules ...func(g *SecurityGroup) *SecurityGroupRule) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		vpc := engine.Add(g, &VPC{ID: n.vpc}, engine.WithLifecycle(engine.ExistsAndValidates))
		sg := engine.Add(g, &SecurityGroup{Name: "nodes." + testCluster, VPC: vpc, Description: description,
			Tags: map[string]string{"k8s.io/role/node": "1"}})
		var added []*SecurityGroupRule
		for _, r := range rules {
			added = append(added, engine.Add(g, r(sg)))
		}
		engine.Add(g, &SecurityGroupIngress{Group: sg, Rules: added})
		return g
	}
}

func TestSecurityGroupAndRules(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	https := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/https", Group: g, Protocol: "tcp", FromPort: aws.Int32(443), ToPort: aws.Int32(443), CIDR: aws.String("0.0.0.0/0")}
	}
	self := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/self", Group: g, Protocol: "-1", SourceGroup: g}
	}
	ssh := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/ssh", Group: g, Protocol: "tcp", FromPort: aws.Int32(22), ToPort: aws.Int32(22), CIDR: aws.String("10.0.0.0/8")}
	}
	build := groupGraph(n, nil, https, self, ssh)
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, build)
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("converged run: mutating calls %v", m)
	}
	if n := srv.Calls()["DescribeSecurityGroups"]; n != 1 {
		t.Errorf("%d DescribeSecurityGroups for a group and three rules, want 1", n)
	}

	// The description cannot change.
	_, err := runOnce(t, c, engine.DryRun, groupGraph(n, aws.String("other"), https))
	if err == nil || !strings.Contains(err.Error(), "field Description") {
		t.Errorf("err = %v, want the description refused", err)
	}
}

func TestSecurityGroupOfThatNameNotOwned(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	if _, err := c.EC2.CreateSecurityGroup(context.Background(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("nodes." + testCluster), Description: aws.String("someone's"), VpcId: aws.String(n.vpc),
	}); err != nil {
		t.Fatal(err)
	}
	_, err := runOnce(t, c, engine.Apply, groupGraph(n, nil))
	if err == nil || !strings.Contains(err.Error(), "without the tag "+ClusterTag(testCluster)+"=owned") {
		t.Errorf("err = %v, want the untagged group explained", err)
	}
}

func TestSecurityGroupRuleChecks(t *testing.T) {
	g := &SecurityGroup{Name: "g"}
	for _, r := range []*SecurityGroupRule{
		{Name: "no-source", Group: g, Protocol: "tcp", FromPort: aws.Int32(1), ToPort: aws.Int32(2)},
		{Name: "two-sources", Group: g, Protocol: "tcp", FromPort: aws.Int32(1), ToPort: aws.Int32(2), CIDR: aws.String("0.0.0.0/0"), SourceGroup: g},
		{Name: "bad-ports", Group: g, Protocol: "tcp", FromPort: aws.Int32(3), ToPort: aws.Int32(2), CIDR: aws.String("0.0.0.0/0")},
		{Name: "bad-protocol", Group: g, Protocol: "sctp-ish", CIDR: aws.String("0.0.0.0/0")},
		{Name: "bad-cidr", Group: g, Protocol: "-1", CIDR: aws.String("10.0.0.0")},
	} {
		if err := r.CheckChanges(nil, r, r); err == nil {
			t.Errorf("%s: no error", r.Name)
		}
	}
}

func TestRuleMatchesWhatEC2Answers(t *testing.T) {
	r := &SecurityGroupRule{Protocol: "all", CIDR: aws.String("10.1.2.3/8")}
	p := ec2types.IpPermission{IpProtocol: aws.String("-1"), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}}
	if !r.matches(p) {
		t.Error("protocol all and an unmasked block do not match EC2's -1 and masked block")
	}
}

// Narrowing a CIDR, or changing what a rule of the same name allows, revokes kubeup's old rule: the dry run shows
// it, the apply revokes it after adding the new one, and rules made by hand stay.
func TestSecurityGroupIngressRevokesWhatTheSpecNoLongerAsks(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	https := func(cidr string) func(g *SecurityGroup) *SecurityGroupRule {
		return func(g *SecurityGroup) *SecurityGroupRule {
			return &SecurityGroupRule{Name: g.Name + "/https-from-" + cidr, Group: g, Protocol: "tcp", FromPort: aws.Int32(443), ToPort: aws.Int32(443), CIDR: aws.String(cidr)}
		}
	}
	ssh := func(cidr string) func(g *SecurityGroup) *SecurityGroupRule {
		return func(g *SecurityGroup) *SecurityGroupRule {
			return &SecurityGroupRule{Name: g.Name + "/ssh", Group: g, Protocol: "tcp", FromPort: aws.Int32(22), ToPort: aws.Int32(22), CIDR: aws.String(cidr)}
		}
	}
	self := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/self", Group: g, Protocol: "-1", SourceGroup: g}
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, groupGraph(n, nil, https("0.0.0.0/0"), ssh("10.0.0.0/8"), self)))
	sgID := groupID(t, c, "nodes."+testCluster)
	// Rules made by hand, with a description of someone else's and with none.
	for _, p := range []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(8080), ToPort: aws.Int32(8080),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24"), Description: aws.String("by hand")}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(9090), ToPort: aws.Int32(9090),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24")}}},
	} {
		if _, err := c.EC2.AuthorizeSecurityGroupIngress(context.Background(), &ec2.AuthorizeSecurityGroupIngressInput{
			GroupId: aws.String(sgID), IpPermissions: []ec2types.IpPermission{p}}); err != nil {
			t.Fatal(err)
		}
	}

	narrowed := groupGraph(n, nil, https("203.0.113.0/24"), ssh("10.1.0.0/16"), self)
	plan := mustRun(t, c, engine.DryRun, narrowed)
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SecurityGroupIngress/nodes." + testCluster,
		"nodes." + testCluster + "/https-from-0.0.0.0/0: tcp 443 from 0.0.0.0/0",
		"nodes." + testCluster + "/ssh: tcp 22 from 10.0.0.0/8"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the dry run does not show %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "8080") || strings.Contains(text.String(), "9090") {
		t.Errorf("the dry run mentions the rules made by hand:\n%s", text.String())
	}
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, narrowed)
	if got := mutatingCalls(srv.Calls()); got["RevokeSecurityGroupIngress"] != 1 || got["AuthorizeSecurityGroupIngress"] != 2 {
		t.Errorf("mutating calls %v, want 2 rules added and one revoke", got)
	}
	var got []string
	for _, p := range ingressOf(t, c, sgID) {
		for _, r := range p.IpRanges {
			got = append(got, fmt.Sprintf("%d %s", aws.ToInt32(p.FromPort), aws.ToString(r.CidrIp)))
		}
	}
	slices.Sort(got)
	want := []string{"22 10.1.0.0/16", "443 203.0.113.0/24", "8080 192.0.2.0/24", "9090 192.0.2.0/24"}
	if !slices.Equal(got, want) {
		t.Errorf("rules with a block: %v, want %v", got, want)
	}
	srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, narrowed); !p.Empty() {
		t.Errorf("changes after the revoke: %v", p.Changes)
	}
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("converged run: mutating calls %v", m)
	}
}

func groupID(t *testing.T, c *Cloud, name string) string {
	t.Helper()
	out, err := c.EC2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{name}}}})
	if err != nil || len(out.SecurityGroups) != 1 {
		t.Fatalf("security group %s: %v, %d found", name, err, len(out.SecurityGroups))
	}
	return aws.ToString(out.SecurityGroups[0].GroupId)
}

func ingressOf(t *testing.T, c *Cloud, id string) []ec2types.IpPermission {
	t.Helper()
	out, err := c.EC2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if err != nil || len(out.SecurityGroups) != 1 {
		t.Fatalf("security group %s: %v", id, err)
	}
	return out.SecurityGroups[0].IpPermissions
}

// Rules as the model makes them for the control plane (tcp ranges, udp all, icmp all from a group) read back as
// they were added.
func TestSecurityGroupRulesOfEveryProtocolConverge(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	rule := func(name, protocol string, from, to int32) func(g *SecurityGroup) *SecurityGroupRule {
		return func(g *SecurityGroup) *SecurityGroupRule {
			return &SecurityGroupRule{Name: g.Name + "/" + name, Group: g, Protocol: protocol, FromPort: aws.Int32(from), ToPort: aws.Int32(to), SourceGroup: g}
		}
	}
	build := groupGraph(n, nil, rule("tcp-1-2379", "tcp", 1, 2379), rule("tcp-2382-4000", "tcp", 2382, 4000),
		rule("udp", "udp", 0, 65535), rule("icmp", "icmp", -1, -1))
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
}

// TestRulePlanShowsPortZero: the plan that creates a udp rule from port 0 shows its FromPort (0 was taken for a
// field left unset, and the plan showed no FromPort).
func TestRulePlanShowsPortZero(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	udp := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/udp", Group: g, Protocol: "udp", FromPort: aws.Int32(0), ToPort: aws.Int32(65535), SourceGroup: g}
	}
	plan := mustRun(t, c, engine.DryRun, groupGraph(n, nil, udp))
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Changes {
		if c.Key.Name != "nodes."+testCluster+"/udp" {
			continue
		}
		for _, f := range c.Fields {
			if f.Name == "FromPort" {
				return
			}
		}
		t.Fatalf("the plan creates %s without its FromPort:\n%s", c.Key, text.String())
	}
	t.Fatalf("the plan does not create the udp rule:\n%s", text.String())
}
