package awstasks

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/fakeaws"
)

// A converged cluster is read with one Describe per resource type, and changes nothing.
func TestClusterConvergesWithOneReadPerType(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	build := clusterGraph(n, defaultSpec())
	for _, k := range build().Tasks() {
		enginetest.CheckDeps(t, k)
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	want := map[string]int{
		"DescribeVpcs": 1, "DescribeSubnets": 1, "GetInstanceProfile": 1, "DescribeSecurityGroups": 1, "DescribeImages": 1,
		"DescribeLaunchTemplates": 1, "DescribeLaunchTemplateVersions": 1, "DescribeAutoScalingGroups": 1, "DescribeVolumes": 1,
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		srv.ResetCalls()
		if p := mustRun(t, c, target, build); !p.Empty() {
			t.Errorf("%s of a converged cluster plans changes", target)
		}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("%s of a converged cluster: calls (-want +got):\n%s", target, diff)
		}
	}
}

// With 30% of the calls throttled and new volumes invisible for a while, the cluster converges, with exactly
// one of everything.
func TestClusterConvergesUnderThrottling(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	if err := srv.SetFaults(fakeaws.Faults{ThrottleRate: 0.3, VolumeInvisibleCalls: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	build := clusterGraph(n, defaultSpec())
	for i := 0; ; i++ {
		p := mustRun(t, c, engine.Apply, build)
		if p.Empty() {
			break
		}
		if i == 5 {
			t.Fatalf("no convergence after %d applies: %v", i+1, p.Changes)
		}
	}
	if err := srv.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	if p := mustRun(t, c, engine.DryRun, build); !p.Empty() {
		t.Errorf("changes left: %v", p.Changes)
	}
	if n := len(allVolumes(t, c)); n != 3 {
		t.Errorf("%d volumes, want exactly 3", n)
	}
	ctx := context.Background()
	lts, err := c.launchTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lts) != 2 {
		t.Errorf("%d launch templates, want 2", len(lts))
	}
	groups, err := c.autoScalingGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Errorf("%d Auto Scaling groups, want 2", len(groups))
	}
}

func TestCloudWithoutDNSZoneSaysSo(t *testing.T) {
	c, _ := newTestCloud(t)
	_, err := c.DNSProvider().Get(context.Background(), "api."+testCluster, "A")
	if err == nil || !strings.Contains(err.Error(), "no DNS zone") {
		t.Errorf("err = %v, want no DNS zone", err)
	}
}

// Right after their creation, a security group is unknown to AuthorizeSecurityGroupIngress and a launch template
// to Auto Scaling (eventual consistency): the apply waits for them and converges.
func TestClusterConvergesThroughNewResourcesNotKnownYet(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	if err := srv.SetFaults(fakeaws.Faults{GroupInvisibleCalls: 3, TemplateInvisibleCalls: 2}); err != nil {
		t.Fatal(err)
	}
	build := clusterGraph(n, defaultSpec())
	mustRun(t, c, engine.Apply, build)
	if p := mustRun(t, c, engine.DryRun, build); !p.Empty() {
		t.Errorf("changes left: %v", p.Changes)
	}
	if n := srv.Calls()["CreateAutoScalingGroup"]; n < 2*3 {
		t.Errorf("%d CreateAutoScalingGroup, want each of the two groups refused twice before it is made", n)
	}
	if n := srv.Calls()["AuthorizeSecurityGroupIngress"]; n <= 4 {
		t.Errorf("%d AuthorizeSecurityGroupIngress for 4 rules: the new groups were never unknown", n)
	}
}
