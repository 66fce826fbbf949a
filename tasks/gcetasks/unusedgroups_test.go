package gcetasks

import (
	"context"
	"kubeup.dev/kubeup/internal/gcelabels"
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
// group and a managed instance group in the first zone.
func groupsGraph(cluster string, groups ...string) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		nw := engine.Add(g, &Network{Name: "net"}, validate)
		sub := engine.Add(g, &Subnetwork{Name: "sub", Region: testRegion, Network: nw}, validate)
		for _, ig := range groups {
			base := gcelabels.ResourceName(ig+"-"+cluster, 54)
			tmpl := engine.Add(g, &InstanceTemplate{Name: base, MachineType: "e2-standard-2",
				Image: "projects/debian-cloud/global/images/family/debian-12", Network: nw, Subnetwork: sub,
				Labels: map[string]string{testGroupLabel: ig}, StartupScript: ptr("#!/bin/sh\n")})
			engine.Add(g, &InstanceGroupManager{Name: groupManagerName(cluster, ig), Zone: ptr(zones[0]),
				TargetSize: ptr[int64](1), Template: tmpl})
		}
		return g
	}
}

// groupManagerName is the name of the managed instance group of cluster's group ig in the first zone.
func groupManagerName(cluster, ig string) string {
	return gcelabels.ResourceName(ig+"-"+zones[0]+"-"+cluster, 63)
}

// unusedGroups is what the groups of cluster not among groups leave (as cloudgraph.GCEUnusedGroups makes it).
func unusedGroups(cluster string, groups ...string) *UnusedGroups {
	u := &UnusedGroups{Cluster: cluster, GroupLabel: testGroupLabel, Groups: groups}
	for _, g := range groups {
		u.Keep = append(u.Keep, zones[0]+"/"+groupManagerName(cluster, g))
	}
	return u
}

// The dry run's plan names the managed instance group and the template a removed group leaves as deletions (not a
// modification of some task of its own); the apply deletes those and nothing else; then nothing is left to
// delete.
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

	gpuTemplate := "" // the cluster's template of group gpu
	if err := c.Compute.InstanceTemplates.List(testProject).Pages(ctx, func(l *compute.InstanceTemplateList) error {
		for _, it := range l.Items {
			if strings.HasPrefix(it.Name, "gpu-gce-example-com-") {
				gpuTemplate = it.Name
			}
		}
		return nil
	}); err != nil || gpuTemplate == "" {
		t.Fatalf("the template of group gpu: %q, %v", gpuTemplate, err)
	}

	nodesOnly := groupsGraph(testCluster, "nodes")
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
		"  InstanceGroupManager/" + zones[0] + "/" + groupManagerName(testCluster, "gpu") + " (instance group gpu is no longer in the spec; its machines go with it)\n" +
		"  InstanceTemplate/" + gpuTemplate + " (instance group gpu is no longer in the spec)\n" +
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
	if got := mutatingCalls(srv.Calls()); got["compute.instanceGroupManagers.delete"] != 1 || got["compute.instanceTemplates.delete"] != 1 || len(got) != 2 {
		t.Errorf("mutating calls %v, want one instanceGroupManagers.delete and one instanceTemplates.delete", got)
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

func TestUnusedGroupsRefusesAnotherClusterOrNoLabel(t *testing.T) {
	c, _ := newTestCloud(t)
	for _, u := range []*UnusedGroups{{Cluster: "other.example.com", GroupLabel: testGroupLabel}, {Cluster: testCluster}} {
		if _, err := u.Deletions(context.Background(), c, false); err == nil {
			t.Errorf("Deletions of %+v in the cloud of %s: no error", u, testCluster)
		}
	}
}
