package gcetasks

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

const testGroupLabel = "kubeup-instance-group"

// groupsGraph is a cluster's (cluster's) instance groups: per group of groups, a template labelled with the
// group and a managed instance group in the first zone; and the UnusedGroups task that keeps them.
func groupsGraph(cluster string, groups ...string) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		nw := engine.Add(g, &Network{Name: "net"}, validate)
		sub := engine.Add(g, &Subnetwork{Name: "sub", Region: testRegion, Network: nw}, validate)
		var keep []*InstanceGroupManager
		for _, ig := range groups {
			base := ResourceName(ig+"-"+cluster, 54)
			tmpl := engine.Add(g, &InstanceTemplate{Name: base, MachineType: "e2-standard-2",
				Image: "projects/debian-cloud/global/images/family/debian-12", Network: nw, Subnetwork: sub,
				Labels: map[string]string{testGroupLabel: ig}, StartupScript: ptr("#!/bin/sh\n")})
			keep = append(keep, engine.Add(g, &InstanceGroupManager{Name: ResourceName(ig+"-"+zones[0]+"-"+cluster, 63),
				Zone: ptr(zones[0]), TargetSize: ptr[int64](1), Template: tmpl}))
		}
		engine.Add(g, &UnusedGroups{Cluster: cluster, GroupLabel: testGroupLabel, Groups: groups, Keep: keep})
		return g
	}
}

func TestUnusedGroupsDeletesWhatRemovedGroupsLeave(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, groupsGraph(testCluster, "nodes", "gpu")))
	// Another cluster's group of the same name, and a template by hand labelled with it.
	other := NewCloudOf(c.Compute, nil, testProject, "other.example.com", "", nil)
	other.Region = testRegion
	enginetest.ApplyThenNoChanges(t, ctx, other, freshRuns(other, groupsGraph("other.example.com", "gpu")))
	op, err := c.Compute.InstanceTemplates.Insert(testProject, &compute.InstanceTemplate{Name: "gpu-by-hand",
		Properties: &compute.InstanceProperties{MachineType: "e2-small", Labels: map[string]string{testGroupLabel: "gpu"}}}).Do()
	if err == nil {
		err = c.waitOperation(ctx, "making a template by hand", op)
	}
	if err != nil {
		t.Fatal(err)
	}

	nodesOnly := groupsGraph(testCluster, "nodes")
	srv.ResetCalls()
	plan := mustRun(t, c, engine.DryRun, nodesOnly)
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"UnusedGroups/" + testCluster, "InstanceGroupManager/us-central1-a/gpu-us-central1-a-gce-example-com",
		"InstanceTemplate/gpu-gce-example-com-"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the dry run does not show %q:\n%s", want, text.String())
		}
	}
	for _, kept := range []string{"other-example-com", "gpu-by-hand", "nodes-"} {
		if strings.Contains(text.String(), kept) {
			t.Errorf("the dry run mentions %s, not a removed group of the cluster:\n%s", kept, text.String())
		}
	}
	if got := mutatingCalls(srv.Calls()); len(got) > 0 {
		t.Errorf("dry run: mutating calls %v", got)
	}

	srv.ResetCalls()
	mustRun(t, c, engine.Apply, nodesOnly)
	if got := mutatingCalls(srv.Calls()); got["compute.instanceGroupManagers.delete"] != 1 || got["compute.instanceTemplates.delete"] != 1 || len(got) != 2 {
		t.Errorf("mutating calls %v, want one instanceGroupManagers.delete and one instanceTemplates.delete", got)
	}
	if plan := mustRun(t, c, engine.DryRun, nodesOnly); len(plan.Changes) != 0 {
		var text strings.Builder
		_ = plan.WriteText(&text)
		t.Errorf("the second dry run is not empty:\n%s", text.String())
	}

	var templates, groups []string
	if err := c.Compute.InstanceTemplates.List(testProject).Pages(ctx, func(l *compute.InstanceTemplateList) error {
		for _, it := range l.Items {
			templates = append(templates, it.Name[:strings.LastIndex(it.Name, "-")])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Compute.InstanceGroupManagers.List(testProject, zones[0]).Pages(ctx, func(l *compute.InstanceGroupManagerList) error {
		for _, g := range l.Items {
			groups = append(groups, g.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(templates)
	slices.Sort(groups)
	if diff := cmp.Diff([]string{"gpu-by", "gpu-other-example-com", "nodes-gce-example-com"}, templates); diff != "" {
		t.Errorf("templates left (base names) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu-us-central1-a-other-example-com", "nodes-us-central1-a-gce-example-com"}, groups); diff != "" {
		t.Errorf("managed instance groups left (-want +got):\n%s", diff)
	}
}

func TestUnusedGroupsDeps(t *testing.T) {
	g := &InstanceGroupManager{Name: "a", Zone: ptr(zones[0])}
	enginetest.CheckDeps(t, &UnusedGroups{Cluster: testCluster, GroupLabel: testGroupLabel, Keep: []*InstanceGroupManager{g}})
	u := &UnusedGroups{Cluster: testCluster}
	if err := u.CheckChanges(nil, u, u); err == nil {
		t.Error("CheckChanges accepted a task without a group label")
	}
}
