package gcetasks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// Records written together go in one changes.create; a replaced record is a deletion and an addition in one
// change; the zone is listed once per run.
func TestCloudDNSBatchesChanges(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	build := func(ip string) func() *engine.Graph[*Cloud] {
		return func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			for _, n := range []string{"a", "b", "c"} {
				engine.Add(g, &dnstasks.Record[*Cloud]{Name: n + ".etcd-main.internal.gce.example.com", Type: "A", Values: []string{ip}})
			}
			engine.Add(g, &dnstasks.Record[*Cloud]{Name: "txt.gce.example.com", Type: "TXT", Values: []string{`say "hi"`}})
			return g
		}
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, build("10.0.0.1")))
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, build("10.0.0.2"))
	got := srv.Calls()
	if got["dns.changes.create"] != 1 || got["dns.resourceRecordSets.list"] != 1 {
		t.Errorf("calls of a change of three records: %v, want one changes.create and one listing", got)
	}
	c.NewRun()
	all, err := c.DNSProvider().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rs := range all {
		if rs.Type == "A" || rs.Type == "TXT" {
			names = append(names, rs.Name+" "+rs.Type+" "+rs.Values[0])
		}
	}
	want := []string{
		"a.etcd-main.internal.gce.example.com A 10.0.0.2", "b.etcd-main.internal.gce.example.com A 10.0.0.2",
		"c.etcd-main.internal.gce.example.com A 10.0.0.2", `txt.gce.example.com TXT say "hi"`,
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}
