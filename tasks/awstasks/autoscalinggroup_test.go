package awstasks

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

func TestAutoScalingGroupSubnetOrderIsNoChange(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	mustRun(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	s := defaultSpec()
	s.subnets = []int{2, 0, 1}
	if p := mustRun(t, c, engine.DryRun, clusterGraph(n, s)); !p.Empty() {
		t.Errorf("subnets in another order plan changes: %v", fieldsOf(p))
	}
}

func TestAutoScalingGroupResizeAndMove(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	mustRun(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	s := defaultSpec()
	s.minSize, s.maxSize, s.subnets = 2, 5, []int{0, 1}
	build := clusterGraph(n, s)
	plan := mustRun(t, c, engine.DryRun, build)
	want := map[string][]string{
		"AutoScalingGroup/control-plane." + testCluster: {"MinSize", "MaxSize", "Subnets"},
		"AutoScalingGroup/nodes." + testCluster:         {"MinSize", "MaxSize", "Subnets"},
	}
	if diff := cmp.Diff(want, fieldsOf(plan)); diff != "" {
		t.Errorf("planned changes (-want +got):\n%s", diff)
	}
	srv.ResetCalls()
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	if diff := cmp.Diff(map[string]int{"UpdateAutoScalingGroup": 2}, mutatingCalls(srv.Calls())); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	out, err := c.AutoScaling.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: []string{"nodes." + testCluster},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := out.AutoScalingGroups[0]
	if aws.ToInt32(g.MinSize) != 2 || aws.ToInt32(g.MaxSize) != 5 {
		t.Errorf("sizes %d..%d, want 2..5", aws.ToInt32(g.MinSize), aws.ToInt32(g.MaxSize))
	}
	for _, tag := range g.Tags {
		if !aws.ToBool(tag.PropagateAtLaunch) {
			t.Errorf("tag %s is not propagated at launch", aws.ToString(tag.Key))
		}
	}
}

func TestAutoScalingGroupRefusesMinAboveMax(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	s := defaultSpec()
	s.minSize, s.maxSize = 4, 2
	if _, err := runOnce(t, c, engine.DryRun, clusterGraph(n, s)); err == nil {
		t.Error("MinSize above MaxSize: no error")
	}
}

// A group that an interrupted run made, not yet listed when this run looked: AlreadyExists makes the task try
// again (not ready), and the next attempt updates it.
func TestAutoScalingGroupAlreadyExistsIsRetried(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	build := clusterGraph(n, defaultSpec())
	mustRun(t, c, engine.Apply, build)
	g := build()
	task, _ := g.Lookup(engine.Key{Type: "AutoScalingGroup", Name: "nodes." + testCluster})
	asg := task.(*AutoScalingGroup)
	mustRun(t, c, engine.DryRun, func() *engine.Graph[*Cloud] { return g }) // outputs of the template
	err := asg.Render(context.Background(), c, nil, asg, asg)
	if engine.ClassOf(err) != engine.ClassNotReady {
		t.Fatalf("err = %v (%s), want not ready", err, engine.ClassOf(err))
	}
}
