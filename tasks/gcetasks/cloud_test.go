package gcetasks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// A cluster converges; a converged cluster is read with one list per resource type (per zone for the zonal
// ones) and changes nothing.
func TestClusterConvergesWithOneReadPerType(t *testing.T) {
	c, srv := newTestCloud(t)
	build := clusterGraph(defaultSpec())
	for _, k := range build().Tasks() {
		enginetest.CheckDeps(t, k)
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	want := map[string]int{
		"compute.networks.get": 1, "compute.subnetworks.get": 1, "compute.firewalls.list": 1,
		"compute.disks.list": 3, "compute.instanceTemplates.list": 1, "compute.instanceGroupManagers.list": 3,
		"dns.resourceRecordSets.list": 1, // the managed zone is found once per Cloud
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		srv.ResetCalls()
		if p := mustRun(t, c, target, build); !p.Empty() {
			t.Errorf("%s of a converged cluster plans changes", target)
		}
		got := srv.Calls()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s of a converged cluster: calls (-want +got):\n%s", target, diff)
		}
		if m := mutatingCalls(got); len(m) != 0 {
			t.Errorf("%s of a converged cluster made mutating calls: %v", target, m)
		}
	}
}
