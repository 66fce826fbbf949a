package awstasks

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/fakeaws"
)

const testGroupTag = "kubeup.dev/instance-group"

// groupsGraph is cluster's instance groups: per group of groups, a launch template and an Auto Scaling group
// <group>.<cluster> tagged with the group.
func groupsGraph(n network, cluster string, groups ...string) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		vpc := engine.Add(g, &VPC{ID: n.vpc}, validate)
		sn := engine.Add(g, &Subnet{ID: n.subnets[0], VPC: vpc, Zone: aws.String(zones[0])}, validate)
		profile := engine.Add(g, &InstanceProfile{Name: n.profile}, validate)
		sg := engine.Add(g, &SecurityGroup{Name: "nodes." + cluster, VPC: vpc, Tags: map[string]string{ClusterTag(cluster): "owned"}})
		for _, ig := range groups {
			tags := map[string]string{ClusterTag(cluster): "owned", testGroupTag: ig}
			lt := engine.Add(g, &LaunchTemplate{Name: ig + "." + cluster, Image: aws.String("debian-12-amd64"),
				InstanceType: aws.String("m6i.large"), InstanceProfile: profile, SecurityGroups: []*SecurityGroup{sg},
				Tags: tags, MakeUserData: func() (string, error) { return "#!/bin/sh\n", nil }})
			engine.Add(g, &AutoScalingGroup{Name: ig + "." + cluster, MinSize: aws.Int32(1), MaxSize: aws.Int32(1),
				Subnets: []*Subnet{sn}, LaunchTemplate: lt, Tags: tags})
		}
		return g
	}
}

// unusedGroups is what the groups of cluster not among groups leave (as cloudgraph.AWSUnusedGroups makes it).
func unusedGroups(cluster string, groups ...string) *UnusedGroups {
	u := &UnusedGroups{Cluster: cluster, GroupTag: testGroupTag, Groups: groups}
	for _, g := range groups {
		u.Keep = append(u.Keep, g+"."+cluster)
	}
	return u
}

// The dry run's plan names each Auto Scaling group and launch template a removed group leaves as a deletion (not
// a modification of some task of its own); the apply deletes those and nothing else; then nothing is left to
// delete.
func TestUnusedGroupsDeletesWhatRemovedGroupsLeave(t *testing.T) {
	srv := fakeaws.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := NewCloud(testConfig(hs.URL), testCluster, "", nil)
	other := NewCloud(testConfig(hs.URL), "other.example.com", "", nil)
	ctx := context.Background()
	n := makeNetwork(t, c)
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, groupsGraph(n, testCluster, "nodes", "gpu")))
	// Another cluster's group of the same name, and a launch template by hand tagged with it.
	enginetest.ApplyThenNoChanges(t, ctx, other, freshRuns(other, groupsGraph(n, "other.example.com", "gpu")))
	if _, err := c.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("gpu.by-hand"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{InstanceType: ec2types.InstanceTypeM6iLarge},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String(testGroupTag), Value: aws.String("gpu")}}}}}); err != nil {
		t.Fatal(err)
	}

	nodesOnly := groupsGraph(n, testCluster, "nodes")
	unused := unusedGroups(testCluster, "nodes")
	c.NewRun()
	srv.ResetCalls()
	plan := mustRun(t, c, engine.DryRun, nodesOnly)
	planned, err := unused.Deletions(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	plan.Add(planned...)
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "Will delete resources:\n" +
		"  AutoScalingGroup/gpu." + testCluster + " (instance group gpu is no longer in the spec; its machines go with it)\n" +
		"  LaunchTemplate/gpu." + testCluster + " (instance group gpu is no longer in the spec)\n" +
		"Must specify --yes to apply changes\n"
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("the dry run's plan (-want +got):\n%s", diff)
	}
	if got := mutatingCalls(srv.Calls()); len(got) > 0 {
		t.Errorf("dry run: mutating calls %v", got)
	}

	// Nothing the dry run did not list is deleted.
	if done, err := unused.Delete(ctx, c, nil); err != nil || len(done) > 0 {
		t.Errorf("Delete of nothing planned: deleted %v, %v", done, err)
	}
	srv.ResetCalls()
	c.NewRun()
	mustRun(t, c, engine.Apply, nodesOnly)
	done, err := unused.Delete(ctx, c, planned)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(planned, done); diff != "" {
		t.Errorf("deletions done (-planned +done):\n%s", diff)
	}
	if got := mutatingCalls(srv.Calls()); len(got) != 2 {
		t.Errorf("mutating calls %v, want one Auto Scaling group and one launch template deleted", got)
	}
	c.NewRun()
	if plan := mustRun(t, c, engine.DryRun, nodesOnly); !plan.Empty() {
		var text strings.Builder
		_ = plan.WriteText(&text)
		t.Errorf("the second dry run is not empty:\n%s", text.String())
	}
	if again, err := unused.Deletions(ctx, c, false); err != nil || len(again) > 0 {
		t.Errorf("the second dry run would delete %v (%v)", again, err)
	}

	var templates, asgs []string
	lts, err := c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		templates = append(templates, aws.ToString(lt.LaunchTemplateName))
	}
	groups, err := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.AutoScalingGroups {
		asgs = append(asgs, aws.ToString(g.AutoScalingGroupName))
	}
	slices.Sort(templates)
	slices.Sort(asgs)
	if diff := cmp.Diff([]string{"gpu.by-hand", "gpu.other.example.com", "nodes." + testCluster}, templates); diff != "" {
		t.Errorf("launch templates left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu.other.example.com", "nodes." + testCluster}, asgs); diff != "" {
		t.Errorf("Auto Scaling groups left (-want +got):\n%s", diff)
	}
}

func TestUnusedGroupsRefusesAnotherClusterOrNoTag(t *testing.T) {
	c, _ := newTestCloud(t)
	for _, u := range []*UnusedGroups{{Cluster: "other.example.com", GroupTag: testGroupTag}, {Cluster: testCluster}} {
		if _, err := u.Deletions(context.Background(), c, false); err == nil {
			t.Errorf("Deletions of %+v in the cloud of %s: no error", u, testCluster)
		}
	}
}
