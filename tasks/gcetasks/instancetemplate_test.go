package gcetasks

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

func templateNames(t testing.TB, c *Cloud) []string {
	t.Helper()
	c.reads.templates.Forget()
	all, err := c.instanceTemplates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n := range all {
		out = append(out, n)
	}
	return out
}

// A changed startup script is a new template of another name; the groups are pointed at it, the old template
// stays until DeleteUnusedTemplates, which deletes it and nothing else.
func TestTemplateChangeMakesANewTemplateAndMovesTheGroups(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	mustRun(t, c, engine.Apply, clusterGraph(defaultSpec()))
	old := templateNames(t, c)
	s := defaultSpec()
	s.script = "#!/bin/bash\necho nodes v2\n"
	p := enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, clusterGraph(s)))
	var changed []string
	for _, ch := range p.Changes {
		changed = append(changed, ch.Key.String())
	}
	if len(changed) != 4 {
		t.Errorf("changes: %v, want the template and the three groups", changed)
	}
	now := templateNames(t, c)
	if len(old) != 1 || len(now) != 2 {
		t.Fatalf("templates before %v, after %v: want one, then two", old, now)
	}
	srv.ResetCalls()
	deleted, err := c.DeleteUnusedTemplates(ctx, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0] != "InstanceTemplate/"+old[0] {
		t.Errorf("deleted %v, want the old template %s", deleted, old[0])
	}
	for _, z := range zones {
		g, err := c.Compute.InstanceGroupManagers.Get(testProject, z, "nodes-"+z+"-gce-example-com").Do()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(g.InstanceTemplate, "/"+old[0]) {
			t.Errorf("group of %s still uses the old template", z)
		}
	}
	if p := mustRun(t, c, engine.DryRun, clusterGraph(s)); !p.Empty() {
		t.Error("dry run after the cleanup plans changes")
	}
}

// TestTemplateCanIpForward: turning canIpForward on (kubenet's routes) is a new template, shown by its field in
// the plan, whose instances forward; a second run changes nothing.
func TestTemplateCanIpForward(t *testing.T) {
	c, _ := newTestCloud(t)
	ctx := context.Background()
	mustRun(t, c, engine.Apply, clusterGraph(defaultSpec()))
	s := defaultSpec()
	s.forward = true
	dry := mustRun(t, c, engine.DryRun, clusterGraph(s))
	var fields []string
	for _, ch := range dry.Changes {
		if ch.Key.Type == "InstanceTemplate" {
			for _, f := range ch.Fields {
				fields = append(fields, f.Name)
			}
		}
	}
	if len(fields) != 1 || fields[0] != "CanIpForward" {
		t.Errorf("the template's changed fields: %v, want CanIpForward", fields)
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, clusterGraph(s)))
	all, err := c.instanceTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forwarding := 0
	for _, it := range all {
		if it.Properties.CanIpForward {
			forwarding++
		}
	}
	if forwarding != 1 {
		t.Errorf("%d templates forward, want the new one", forwarding)
	}
}

// DeleteOwned deletes the groups, templates, firewall rules and disks of the cluster, and the records of the
// names given, each once; the user's network and another's disk stay.
func TestDeleteOwnedLeavesNothingLabelled(t *testing.T) {
	c, _ := newTestCloud(t)
	ctx := context.Background()
	mustRun(t, c, engine.Apply, clusterGraph(defaultSpec()))
	op, err := c.Compute.Disks.Insert(testProject, zones[0], &compute.Disk{Name: "users-disk", SizeGb: 10}).Do()
	if err = c.mutate(ctx, "making the user's disk", op, err); err != nil {
		t.Fatal(err)
	}
	// A name given twice (the spec's and the applied spec's) is one record set to delete: Cloud DNS refuses a
	// change that deletes one twice.
	names := []string{"api.gce.example.com", "api.gce.example.com."}
	dry, err := c.DeleteOwned(ctx, names, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DeleteOwned(ctx, names, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(dry, " ") != strings.Join(got, " ") || len(got) != 3+1+2+3+1 {
		t.Errorf("dry run %v, deleted %v: want the same 10 keys", dry, got)
	}
	if d := ownedDisks(t, c); len(d) != 0 {
		t.Errorf("disks left: %v", d)
	}
	if n := templateNames(t, c); len(n) != 0 {
		t.Errorf("templates left: %v", n)
	}
	if _, err := c.Compute.Disks.Get(testProject, zones[0], "users-disk").Do(); err != nil {
		t.Errorf("the user's disk: %v", err)
	}
	if _, err := c.Compute.Networks.Get(testProject, "net").Do(); err != nil {
		t.Errorf("the user's network: %v", err)
	}
	c.NewRun()
	if rs, err := c.DNSProvider().Get(ctx, "api.gce.example.com", "A"); err != nil || rs != nil {
		t.Errorf("api record: %v, %v; want none", rs, err)
	}
}
