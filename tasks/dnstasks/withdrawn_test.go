package dnstasks

import (
	"context"
	"slices"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestWithdrawn: a value is removed from its set and the others kept; the set goes with its last value; a set
// without the value is no change; an invalid task stops the run before anything.
func TestWithdrawn(t *testing.T) {
	ctx := context.Background()
	w := newMemWorld()
	const a, b = "a.etcd-main.internal.demo.example.com", "b.etcd-main.internal.demo.example.com"
	for _, rs := range []RecordSet{
		{Name: a, Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}},
		{Name: b, Type: "A", TTL: 60, Values: []string{"10.0.0.1"}},
	} {
		if err := w.dns.Upsert(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	build := func(names ...string) *engine.Graph[*memWorld] {
		g := engine.NewGraph[*memWorld]()
		for _, n := range names {
			engine.Add(g, &Withdrawn[*memWorld]{Name: n, Type: "A", Value: "10.0.0.1"})
		}
		return g
	}
	res, err := engine.Run(ctx, build(a, b, "c.etcd-main.internal.demo.example.com"), w, engine.Options{Target: engine.DryRun})
	if err != nil || len(res.Plan.Changes) != 2 {
		t.Fatalf("dry run: %v, %v; want the 2 sets that hold the value", res.Plan.Changes, err)
	}
	if _, err := engine.Run(ctx, build(a, b), w, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	if rs, _ := w.dns.Get(ctx, a, "A"); rs == nil || !slices.Equal(rs.Values, []string{"10.0.0.2"}) || rs.TTL != 60 {
		t.Errorf("%s after the withdrawal: %+v, want 10.0.0.2 alone with its TTL", a, rs)
	}
	if rs, _ := w.dns.Get(ctx, b, "A"); rs != nil {
		t.Errorf("%s after its last value was withdrawn: %+v, want it gone", b, rs)
	}
	if res, err := engine.Run(ctx, build(a, b), w, engine.Options{Target: engine.DryRun}); err != nil || !res.Plan.Empty() {
		t.Errorf("a dry run after the apply: %v, %v", res.Plan.Changes, err)
	}
	g := engine.NewGraph[*memWorld]()
	engine.Add(g, &Withdrawn[*memWorld]{Name: a, Type: "A", Value: "10.0.0.01"})
	if _, err := engine.Run(ctx, g, w, engine.Options{Target: engine.DryRun}); err == nil {
		t.Error("a value not in canonical form was accepted")
	}
}
