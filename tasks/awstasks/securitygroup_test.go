package awstasks

import (
	"context"
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
		for _, r := range rules {
			engine.Add(g, r(sg))
		}
		return g
	}
}

func TestSecurityGroupAndRules(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	https := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/https", Group: g, Protocol: "tcp", FromPort: 443, ToPort: 443, CIDR: aws.String("0.0.0.0/0")}
	}
	self := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/self", Group: g, Protocol: "-1", SourceGroup: g}
	}
	ssh := func(g *SecurityGroup) *SecurityGroupRule {
		return &SecurityGroupRule{Name: g.Name + "/ssh", Group: g, Protocol: "tcp", FromPort: 22, ToPort: 22, CIDR: aws.String("10.0.0.0/8")}
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
		{Name: "no-source", Group: g, Protocol: "tcp", FromPort: 1, ToPort: 2},
		{Name: "two-sources", Group: g, Protocol: "tcp", FromPort: 1, ToPort: 2, CIDR: aws.String("0.0.0.0/0"), SourceGroup: g},
		{Name: "bad-ports", Group: g, Protocol: "tcp", FromPort: 3, ToPort: 2, CIDR: aws.String("0.0.0.0/0")},
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
