package gce

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestDeletedGroupIsPlannedAsDeletions: after `kubeup delete ig batch --yes`, the dry run names what the update
// will delete, "Will delete resources:" with the group's managed instance group, instance template and node
// configuration (not a modification of a task of kubeup's own), in text and in JSON; update --yes deletes them and says so; the next
// dry run has nothing to do.
func TestDeletedGroupIsPlannedAsDeletions(t *testing.T) {
	t.Parallel()
	a := newProject(t, false)
	a.createCluster(cluster)
	a.mustKubeup("create", "ig", "batch", "--name", cluster, "--zones", zones[1])
	a.mustKubeup("update", "cluster", cluster, "--yes")
	o := a.owned(cluster)
	var group, template string
	for _, g := range o.Groups {
		if strings.HasPrefix(g, "batch-") {
			group = g
		}
	}
	for _, tpl := range o.Templates {
		if strings.HasPrefix(tpl, "batch-") {
			template = tpl
		}
	}
	if group == "" || template == "" {
		t.Fatalf("after update --yes: managed instance groups %v, templates %v, want batch's among both", o.Groups, o.Templates)
	}
	a.mustKubeup("delete", "ig", "batch", "--name", cluster, "--yes")

	plan := a.mustKubeup("update", "cluster", cluster)
	want := "Will delete resources:\n" +
		"  InstanceGroupManager/" + zones[1] + "/" + group + " (instance group batch is no longer in the spec; its machines go with it)\n" +
		"  InstanceTemplate/" + template + " (instance group batch is no longer in the spec)\n" +
		"  StoreFile/" + cluster + "/nodeup/batch (instance group batch is no longer in the spec)\n"
	if !strings.Contains(plan, want) {
		t.Errorf("the dry run after delete ig lacks\n%s\nit printed:\n%s", want, plan)
	}
	if strings.Contains(plan, "UnusedGroups") || strings.Contains(plan, "StoreStaleObjects") {
		t.Errorf("the dry run shows a task of kubeup's own instead of what it deletes:\n%s", plan)
	}
	var js struct {
		Summary struct{ Delete int }
		Changes []struct{ Key, Action, Note string }
	}
	if err := json.Unmarshal([]byte(a.mustKubeup("update", "cluster", cluster, "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, c := range js.Changes {
		if c.Action == "delete" {
			deletes = append(deletes, c.Key+" ("+c.Note+")")
		}
	}
	wantJSON := []string{"InstanceGroupManager/" + zones[1] + "/" + group + " (instance group batch is no longer in the spec; its machines go with it)",
		"InstanceTemplate/" + template + " (instance group batch is no longer in the spec)",
		"StoreFile/" + cluster + "/nodeup/batch (instance group batch is no longer in the spec)"}
	if js.Summary.Delete != 3 || !slices.Equal(deletes, wantJSON) {
		t.Errorf("JSON plan: %d deletions %v, want %v", js.Summary.Delete, deletes, wantJSON)
	}

	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	for _, want := range []string{"  delete InstanceGroupManager/" + zones[1] + "/" + group + "\n", "  delete InstanceTemplate/" + template + "\n",
		"  delete StoreFile/" + cluster + "/nodeup/batch\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("update --yes does not report %q:\n%s", want, out)
		}
	}
	if o := a.owned(cluster); slices.Contains(o.Groups, group) || slices.Contains(o.Templates, template) {
		t.Errorf("after update --yes: managed instance groups %v, templates %v still hold %s or %s", o.Groups, o.Templates, group, template)
	}
	if out := a.mustKubeup("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after the deletion:\n%s\nwant no changes", out)
	}
}
