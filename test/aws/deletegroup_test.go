package aws

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestDeletedGroupIsPlannedAsDeletions: after `kubeup delete ig batch --yes`, the dry run names what the update
// will delete, "Will delete resources:" with the group's Auto Scaling group, launch template and node
// configuration (not a modification of a task of kubeup's own), in text and in JSON; update --yes deletes them and says so; the next
// dry run has nothing to do.
func TestDeletedGroupIsPlannedAsDeletions(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	a.createCluster(cluster)
	a.mustKubeup("create", "ig", "batch", "--name", cluster, "--zones", zones[1], "--machine-type", "m5.large")
	a.mustKubeup("update", "cluster", cluster, "--yes")
	batch := "batch." + cluster
	if o := a.ownedSDK(cluster); !slices.Contains(o.Groups, batch) || !slices.Contains(o.Templates, batch) {
		t.Fatalf("after update --yes: Auto Scaling groups %v, launch templates %v, want %s among both", o.Groups, o.Templates, batch)
	}
	a.mustKubeup("delete", "ig", "batch", "--name", cluster, "--yes")

	plan := a.mustKubeup("update", "cluster", cluster)
	for _, want := range []string{"Will delete resources:\n" +
		"  AutoScalingGroup/" + batch + " (instance group batch is no longer in the spec; its machines go with it)\n" +
		"  LaunchTemplate/" + batch + " (instance group batch is no longer in the spec)\n" +
		"  StoreFile/" + cluster + "/nodeup/batch (instance group batch is no longer in the spec)\n"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the dry run after delete ig lacks\n%s\nit printed:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "UnusedGroups") || strings.Contains(plan, "StoreStaleObjects") {
		t.Errorf("the dry run shows a task of kubeup's own instead of what it deletes:\n%s", plan)
	}
	var js struct {
		Summary struct{ Delete int }
		Changes []struct{ Key, Action string }
	}
	if err := json.Unmarshal([]byte(a.mustKubeup("update", "cluster", cluster, "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, c := range js.Changes {
		if c.Action == "delete" {
			deletes = append(deletes, c.Key)
		}
	}
	if want := []string{"AutoScalingGroup/" + batch, "LaunchTemplate/" + batch, "StoreFile/" + cluster + "/nodeup/batch"}; js.Summary.Delete != 3 || !slices.Equal(deletes, want) {
		t.Errorf("JSON plan: %d deletions %v, want %v", js.Summary.Delete, deletes, want)
	}

	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	for _, want := range []string{"  delete AutoScalingGroup/" + batch + "\n", "  delete LaunchTemplate/" + batch + "\n", "  delete StoreFile/" + cluster + "/nodeup/batch\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("update --yes does not report %q:\n%s", want, out)
		}
	}
	if o := a.ownedSDK(cluster); slices.Contains(o.Groups, batch) || slices.Contains(o.Templates, batch) {
		t.Errorf("after update --yes: Auto Scaling groups %v, launch templates %v still hold %s", o.Groups, o.Templates, batch)
	}
	if out := a.mustKubeup("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after the deletion:\n%s\nwant no changes", out)
	}
}

// TestUserResourcesNotFoundNameTheirField: a subnet of the spec that AWS does not have fails the dry run with
// the spec's field that names it, the region and the zone, as the operator sees it; a zone the region does not
// have is refused at create.
func TestUserResourcesNotFoundNameTheirField(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	const gone = "subnet-0ffffffffffffffff"
	k := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}
	create := func(zones, subnets string) (string, error) {
		_, stderr, err := k.Run("create", "cluster", "--name", cluster, "--cloud", "aws", "--zones", zones, "--dns-zone", "example.com",
			"--vpc", a.vpc, "--subnets", subnets, "--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32))
		return stderr, err
	}
	stderr, err := create("us-east-1a,us-east-1x", a.subns[0]+","+a.subns[1])
	if want := `spec.zones[1]: "us-east-1x" is not a zone of region us-east-1 (its zones: us-east-1a,`; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("create with us-east-1x: %v\n%s\nwant %q", err, stderr, want)
	}
	if stderr, err := create(strings.Join(zones, ","), a.subns[0]+","+a.subns[1]+","+gone); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	_, stderr, err = k.Run("update", "cluster", cluster)
	if want := "spec.aws.subnets[2]: subnet " + gone + " does not exist in region us-east-1: kubeup never creates a subnet; create it in VPC " +
		a.vpc + " and zone us-east-1c of region us-east-1"; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("update with a subnet AWS lacks: %v\n%s\nwant %q", err, stderr, want)
	}
}
