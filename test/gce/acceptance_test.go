package gce

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/fakegce"
)

// TestCreateUpdateNoChangesDelete is the acceptance, in order: create, update --yes (6 disks, the
// templates and groups of the 4 instance groups, the API's records), update again with no change and no
// mutating call, then delete, which leaves nothing labelled for the cluster and keeps the network.
func TestCreateUpdateNoChangesDelete(t *testing.T) {
	t.Parallel()
	a := newAccount(t)
	a.createCluster(cluster)
	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	t.Logf("update --yes:\n%s", out)

	o := a.owned(cluster)
	// The nodes group spans three zones: one managed instance group per zone; the control plane's one each.
	if len(o.Disks) != 6 || len(o.Templates) != 4 || len(o.Groups) != 6 {
		t.Errorf("after update --yes: %+v; want 6 disks, 4 instance templates (one per instance group), 6 managed instance groups", o)
	}
	recs := strings.Join(a.records(), "\n")
	for _, name := range []string{"api." + cluster + ". A", "api.internal." + cluster + ". A"} {
		if !strings.Contains(recs, name) {
			t.Errorf("no record %q in the managed zone:\n%s", name, recs)
		}
	}

	a.fake.ResetCalls()
	out = a.mustKubeup("update", "cluster", cluster)
	if !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("second update:\n%s\nwant \"No changes need to be applied\"", out)
	}
	for op, n := range a.fake.Calls() {
		if fakegce.Mutating(op) {
			t.Errorf("the update that had nothing to do called %s %d times", op, n)
		}
	}
	t.Logf("calls of an update with nothing to do: %v", a.fake.Calls())

	out = a.mustKubeup("delete", "cluster", cluster, "--yes")
	t.Logf("delete --yes:\n%s", out)
	if o := a.owned(cluster); len(o.Disks)+len(o.Templates)+len(o.Groups)+len(o.Firewalls) != 0 {
		t.Errorf("left for %s after delete: %+v", cluster, o)
	}
	if recs := strings.Join(a.records(), "\n"); strings.Contains(recs, cluster) {
		t.Errorf("records of %s left after delete:\n%s", cluster, recs)
	}
	if _, err := a.compute.Networks.Get(project, network).Do(); err != nil {
		t.Errorf("the user's network after delete: %v", err)
	}
	if _, err := a.compute.Subnetworks.Get(project, region, subnet).Do(); err != nil {
		t.Errorf("the user's subnetwork after delete: %v", err)
	}
}

// TestUpdateConvergesThroughFaults: with a share of calls rate-limited or failing, slow operations and new disks
// invisible for a while, update --yes converges with exactly 6 disks.
func TestUpdateConvergesThroughFaults(t *testing.T) {
	t.Parallel()
	a := newAccount(t)
	a.createCluster(cluster)
	faults := fakegce.Faults{RateLimitRate: 0.2, ServerErrorRate: 0.05, SlowOperations: 2, DiskInvisibleCalls: 2, Seed: 7}
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	a.mustKubeup("update", "cluster", cluster, "--yes")
	if err := a.fake.SetFaults(fakegce.Faults{}); err != nil {
		t.Fatal(err)
	}
	a.settle(faults.DiskInvisibleCalls)
	a.checkNoDuplicates("after an update through faults")
	if o := a.owned(cluster); len(o.Disks) != 6 || len(o.Templates) != 4 || len(o.Groups) != 6 {
		t.Errorf("after an update through faults: %+v, want 6 disks, 4 templates, 6 groups", o)
	}
	if out := a.mustKubeup("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the update after:\n%s\nwant no changes", out)
	}
}

// TestKilledUpdatesNeverDuplicate kills `kubeup update cluster --yes` with SIGKILL at random points, 20 times,
// running it again each time: never a second disk, template or group for one name.
func TestKilledUpdatesNeverDuplicate(t *testing.T) {
	t.Parallel()
	faults := fakegce.Faults{LatencyMillis: 5, SlowOperations: 1, DiskInvisibleCalls: 2}
	probe := newAccount(t)
	probe.createCluster(cluster)
	if err := probe.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	probe.mustKubeup("update", "cluster", cluster, "--yes")
	whole := time.Since(start)

	a := newAccount(t)
	a.createCluster(cluster)
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(56, 78))
	for i := range 20 {
		cmd := exec.Command(kubeupBinary, "update", "cluster", cluster, "--yes")
		cmd.Env = a.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(whole)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		t.Logf("run %d: killed after %v (%v)", i, delay.Round(time.Millisecond), err)
		a.settle(faults.DiskInvisibleCalls)
		a.checkNoDuplicates(fmt.Sprintf("after kill %d", i))
	}
	a.mustKubeup("update", "cluster", cluster, "--yes")
	a.settle(faults.DiskInvisibleCalls)
	a.checkNoDuplicates("after the last update")
	if o := a.owned(cluster); len(o.Disks) != 6 || len(o.Templates) != 4 || len(o.Groups) != 6 {
		t.Errorf("after the last update: %+v, want 6 disks, 4 templates, 6 groups", o)
	}
}

// settle lets the fake's eventual consistency end: a new disk is left out of the next n reads (the fake counts
// calls, not time).
func (a *account) settle(n int) {
	a.t.Helper()
	for range n {
		for _, z := range zones {
			if _, err := a.compute.Disks.List(project, z).Do(); err != nil {
				a.t.Fatal(err)
			}
		}
	}
}

// checkNoDuplicates fails the test when the project holds two disks, templates or groups for one name: GCE
// refuses two resources of one name, so a duplicate template would show as a second content-named template of
// one instance group while the first is still in use... counted by owned's totals; here, names twice.
func (a *account) checkNoDuplicates(when string) {
	a.t.Helper()
	o := a.owned(cluster)
	for what, names := range map[string][]string{"disk": o.Disks, "instance template": o.Templates, "instance group": o.Groups} {
		s := slices.Clone(names)
		slices.Sort(s)
		if c := slices.Compact(s); len(c) != len(names) {
			a.t.Errorf("%s: a %s twice: %v", when, what, names)
		}
	}
	if len(o.Disks) > 6 || len(o.Groups) > 6 {
		a.t.Errorf("%s: more disks or groups than the spec has: %+v", when, o)
	}
}
