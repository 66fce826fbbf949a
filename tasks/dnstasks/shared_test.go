package dnstasks

import (
	"context"
	"slices"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestShared: each writer adds its own value while present and removes it otherwise, never touching the others'
// kept values; values no writer may hold (a node that lost its claim, the placeholder once a real value is there)
// go; a set left with nothing holds the fallback rather than vanish; a set that does not exist is not made to
// hold it; a converged set is no change; what is not valid stops the run before anything.
func TestShared(t *testing.T) {
	ctx := context.Background()
	const api, placeholder = "api.internal.demo.example.com", "203.0.113.123"
	ttl := 60
	task := func(value string, present bool, keep ...string) *Shared[*memWorld] {
		return &Shared[*memWorld]{Name: api, Type: "A", Value: value, Present: present, TTL: &ttl, Keep: keep, Fallback: placeholder}
	}
	tests := []struct {
		name  string
		was   []string // nil: no set
		task  *Shared[*memWorld]
		want  []string // nil: no set
		stale []string
	}{
		{name: "the first ready writer replaces the placeholder",
			was: []string{placeholder}, task: task("10.0.0.1", true, "10.0.0.1", "10.0.0.2"), want: []string{"10.0.0.1"}, stale: []string{placeholder}},
		{name: "a second ready writer joins, the first's value kept",
			was: []string{"10.0.0.1"}, task: task("10.0.0.2", true, "10.0.0.1", "10.0.0.2"), want: []string{"10.0.0.1", "10.0.0.2"}},
		{name: "a writer whose server is not ready withdraws, the others' values kept",
			was: []string{"10.0.0.1", "10.0.0.2"}, task: task("10.0.0.2", false, "10.0.0.1", "10.0.0.2"), want: []string{"10.0.0.1"}},
		{name: "a writer not ready leaves a set without it as it is",
			was: []string{"10.0.0.1"}, task: task("10.0.0.2", false, "10.0.0.1", "10.0.0.2"), want: []string{"10.0.0.1"}},
		{name: "a value no writer may hold any more goes (its node lost its claim)",
			was: []string{"10.0.0.1", "10.0.0.3"}, task: task("10.0.0.1", true, "10.0.0.1", "10.0.0.2"), want: []string{"10.0.0.1"}, stale: []string{"10.0.0.3"}},
		{name: "the last writer withdraws: the placeholder, not an empty name",
			was: []string{"10.0.0.2"}, task: task("10.0.0.2", false, "10.0.0.1", "10.0.0.2"), want: []string{placeholder}},
		{name: "nothing ready and only a dead node's value: the placeholder",
			was: []string{"10.0.0.3"}, task: task("10.0.0.1", false, "10.0.0.1"), want: []string{placeholder}, stale: []string{"10.0.0.3"}},
		{name: "nothing ready, the placeholder alone: no change",
			was: []string{placeholder}, task: task("10.0.0.1", false, "10.0.0.1"), want: []string{placeholder}},
		{name: "no set and not ready: none made",
			task: task("10.0.0.1", false, "10.0.0.1")},
		{name: "no set and ready: made",
			task: task("10.0.0.1", true), want: []string{"10.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newMemWorld()
			if tt.was != nil {
				if err := w.dns.Upsert(ctx, RecordSet{Name: api, Type: "A", TTL: 300, Values: tt.was}); err != nil {
					t.Fatal(err)
				}
			}
			graph := func() *engine.Graph[*memWorld] {
				g := engine.NewGraph[*memWorld]()
				c := *tt.task
				engine.Add(g, &c)
				return g
			}
			found, err := tt.task.Find(ctx, w)
			if err != nil || !slices.Equal(found.Stale, tt.stale) {
				t.Errorf("Find: stale %v, %v; want %v", found.Stale, err, tt.stale)
			}
			res, err := engine.Run(ctx, graph(), w, engine.Options{Target: engine.DryRun})
			if err != nil {
				t.Fatal(err)
			}
			if changed := !slices.Equal(tt.was, tt.want); changed == res.Plan.Empty() {
				t.Errorf("dry run: changes %v; the set goes from %v to %v", res.Plan.Changes, tt.was, tt.want)
			}
			if _, err := engine.Run(ctx, graph(), w, engine.Options{Target: engine.Apply}); err != nil {
				t.Fatal(err)
			}
			rs, _ := w.dns.Get(ctx, api, "A")
			switch {
			case tt.want == nil && rs != nil:
				t.Errorf("after the apply: %+v, want no set", rs)
			case tt.want != nil && (rs == nil || !slices.Equal(rs.Values, tt.want)):
				t.Errorf("after the apply: %+v, want %v", rs, tt.want)
			}
			if res, err := engine.Run(ctx, graph(), w, engine.Options{Target: engine.DryRun}); err != nil || !res.Plan.Empty() {
				t.Errorf("a dry run after the apply: %v, %v", res.Plan.Changes, err)
			}
		})
	}

	for _, bad := range []*Shared[*memWorld]{
		{Name: api, Type: "A", Value: "10.0.0.01"},
		{Name: api, Type: "A", Value: "10.0.0.1", Keep: []string{"fd00::1"}},
		{Name: api, Type: "A", Value: "10.0.0.1", Fallback: "x"},
		{Name: "API.example.com", Type: "A", Value: "10.0.0.1"},
	} {
		g := engine.NewGraph[*memWorld]()
		engine.Add(g, bad)
		w := newMemWorld()
		if _, err := engine.Run(ctx, g, w, engine.Options{Target: engine.Apply}); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
		if sets, _ := w.dns.List(ctx); len(sets) != 0 {
			t.Errorf("%+v: wrote %v", bad, sets)
		}
	}
}
