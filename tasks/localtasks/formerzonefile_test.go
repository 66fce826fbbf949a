package localtasks

import (
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// TestFormerZoneFile: the task plans the removal of the cluster's records from its former zone file (a dry run
// changes nothing), the apply removes them and leaves the other cluster's, and then there is nothing to do; a
// former file that is gone holds nothing to remove.
func TestFormerZoneFile(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	for _, rs := range []dnstasks.RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.1"}},
		{Name: "api.other.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.2"}},
	} {
		if err := z.Upsert(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	run := func(target engine.Target, path string) *engine.Result {
		t.Helper()
		g := engine.NewGraph[*Cloud]()
		engine.Add(g, &FormerZoneFile{Path: path, Zone: "example.com", Cluster: "demo.example.com", Others: []string{"demo.example.com", "other.example.com"}})
		res, err := engine.Run(ctx, g, (*Cloud)(nil), engine.Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	names := func() string {
		sets, err := z.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, rs := range sets {
			b.WriteString(rs.Name + " ")
		}
		return b.String()
	}

	var text strings.Builder
	if err := run(engine.DryRun, z.Path()).Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Records    [DNSRecord/api.demo.example.com/A] -> []") {
		t.Errorf("dry run plan:\n%s\nwant the cluster's record listed for removal", &text)
	}
	if got := names(); got != "api.demo.example.com api.other.example.com " {
		t.Fatalf("the dry run changed the file: %s", got)
	}
	run(engine.Apply, z.Path())
	if got := names(); got != "api.other.example.com " {
		t.Errorf("after the apply the file holds %s; want the other cluster's record alone", got)
	}
	if res := run(engine.DryRun, z.Path()); !res.Plan.Empty() {
		t.Errorf("after the apply the plan is not empty: %v", res.Plan.Changes)
	}
	if res := run(engine.DryRun, z.Path()+".gone"); !res.Plan.Empty() {
		t.Errorf("a former zone file that is gone: %v, want no change", res.Plan.Changes)
	}
}
