package cloudup

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestRollingUpdateGCEListing: after the machine type of the control-plane groups changes and update --yes makes
// their new instance templates, rolling-update (without --yes) lists the control plane's three instances as
// NeedsUpdate, made from the old template, and the nodes as up to date; it changes nothing. (Replacing them,
// recreateInstances, is not served by internal/fakegce yet.)
func TestRollingUpdateGCEListing(t *testing.T) {
	ctx := context.Background()
	srv := fakeGCE(t)
	cs := gsClusters(t)
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudGCE, Project: "kubeup-demo",
		Zones: []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}, ControlPlaneCount: 3, NodeCount: 2,
		Network: "net", Subnetworks: []string{"sub"}, NodeupURL: "https://example.com/nodeup", NodeupSHA256: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := cs.Update(ctx, demo, UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	out.Reset()
	if err := cs.RollingUpdate(ctx, demo, RollingOptions{Out: &out}); err != nil || !strings.Contains(out.String(), "No machine of cluster "+demo+" needs to be replaced") {
		t.Fatalf("rolling-update of a new cluster: %v\n%s", err, &out)
	}

	stored, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	for _, ig := range stored.InstanceGroups {
		if ig.Spec.Role == model.RoleControlPlane {
			ig.Spec.MachineType = "e2-standard-4"
		}
	}
	if _, err := cs.Replace(ctx, "test", &model.Objects{Cluster: stored.Cluster, InstanceGroups: stored.InstanceGroups}, ReplaceOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Update(ctx, demo, UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	out.Reset()
	srv.ResetCalls()
	if err := cs.RollingUpdate(ctx, demo, RollingOptions{Out: &out}); err != nil {
		t.Fatalf("rolling-update: %v\n%s", err, &out)
	}
	t.Logf("rolling-update:\n%s", &out)
	lines := regexp.MustCompile(`(?m)^\S+\s+control-plane-\S+\s+europe-west1-[bcd]\s+NeedsUpdate\s+true\s+made from instance template (\S+), the group makes (\S+)$`).FindAllStringSubmatch(out.String(), -1)
	if len(lines) != 3 {
		t.Errorf("%d control-plane instances listed as NeedsUpdate, want 3", len(lines))
	}
	for _, l := range lines {
		if l[1] == l[2] {
			t.Errorf("an instance listed as made from the group's own template: %s", l[0])
		}
	}
	if !regexp.MustCompile(`(?m)^nodes\s+Ready\s+0\s+2\s`).MatchString(out.String()) {
		t.Errorf("the nodes are not listed as up to date and ready")
	}
	if m := mutatingCalls(srv); len(m) != 0 {
		t.Errorf("rolling-update without --yes changed the cloud: %v", m)
	}
}
