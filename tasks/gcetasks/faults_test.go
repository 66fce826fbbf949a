package gcetasks

import (
	"context"
	"kubeup.dev/kubeup/internal/gcelabels"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
)

// ownedDisks lists the cluster's disks of every zone (one aggregatedList).
func ownedDisks(t testing.TB, c *Cloud) []string {
	t.Helper()
	var names []string
	err := c.Compute.Disks.AggregatedList(c.Project).Pages(context.Background(), func(l *compute.DiskAggregatedList) error {
		for _, s := range l.Items {
			for _, d := range s.Disks {
				if c.owns(d.Labels) {
					names = append(names, d.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// With throttling, server errors, slow operations and disks invisible for a while, the cluster converges with
// exactly one disk of each name, and then has nothing to change.
func TestClusterConvergesUnderFaults(t *testing.T) {
	c, srv := newTestCloud(t)
	if err := srv.SetFaults(fakegce.Faults{RateLimitRate: 0.05, ServerErrorRate: 0.05, SlowOperations: 2, DiskInvisibleCalls: 2, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	build := clusterGraph(defaultSpec())
	converged := false
	for i := 0; i < 5 && !converged; i++ { // a run may end with tasks still not ready: run again, as an operator would
		_, err := runOnce(c, engine.Apply, build)
		converged = err == nil
		if err != nil {
			t.Logf("apply %d: %v", i, err)
		}
	}
	if !converged {
		t.Fatal("no apply converged")
	}
	if err := srv.SetFaults(fakegce.Faults{}); err != nil {
		t.Fatal(err)
	}
	if got := ownedDisks(t, c); len(got) != 3 {
		t.Errorf("disks of the cluster: %v, want 3", got)
	}
	if p := mustRun(t, c, engine.DryRun, build); !p.Empty() {
		t.Errorf("dry run after converging plans changes")
	}
}

// A create repeated after a crash (the first disks.insert made the disk, the process died before it knew, and
// the disk is not listed yet) sends the same requestId: GCE answers with the first operation, and there is one
// disk, made once.
func TestDiskCreateRepeatedAfterACrashMakesNoSecondDisk(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	d := &Disk{Name: "a-etcd-main-gce-example-com", Zone: ptr(zones[0]), SizeGB: ptr[int64](20), Labels: gcelabels.EtcdLabels("main", "a", []string{"a"})}
	if err := srv.SetFaults(fakegce.Faults{DiskInvisibleCalls: 1}); err != nil {
		t.Fatal(err)
	}
	// The run that crashed: its insert, with the requestId the task derives, and no wait.
	if _, err := c.Compute.Disks.Insert(testProject, zones[0], &compute.Disk{Name: d.Name, SizeGb: 20, Labels: c.desiredLabels(nil, d.Labels)}).
		RequestId(requestID(0, "Disk", testCluster, zones[0], d.Name)).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	build := func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		engine.Add(g, &Disk{Name: d.Name, Zone: d.Zone, SizeGB: d.SizeGB, Labels: d.Labels})
		return g
	}
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, build)
	if n := srv.Calls()["compute.disks.insert"]; n != 1 {
		t.Errorf("disks.insert calls: %d, want 1 (answered with the first operation)", n)
	}
	if got := ownedDisks(t, c); len(got) != 1 {
		t.Errorf("disks: %v, want one", got)
	}
	if p := mustRun(t, c, engine.DryRun, build); !p.Empty() {
		t.Errorf("dry run after the repeated create plans changes")
	}
}
