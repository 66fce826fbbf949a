package engine_test

import (
	"context"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestAddBound: a task bound to a world of its own runs in a graph of another world, on its own world, after
// its dependency of the graph's world; a dry run after the apply has nothing to do; the same key added twice
// keeps the first task.
func TestAddBound(t *testing.T) {
	ctx := context.Background()
	graphs, own := newWorld(), newWorld()
	build := func() *engine.Graph[*World] {
		g := engine.NewGraph[*World]()
		first := engine.Add(g, &Item{Name: "first", Size: ptr(1)})
		b := engine.Bind(&Item{Name: "bound", Size: ptr(2), Parent: first}, own)
		if held := engine.AddBound(g, b); held != b.Task() {
			t.Errorf("AddBound holds %v, want the bound task", held)
		}
		if again := engine.AddBound(g, engine.Bind(&Item{Name: "bound", Size: ptr(2), Parent: first}, own)); again != b.Task() {
			t.Errorf("the key added again: the graph holds %p, want the first task %p", again, b.Task())
		}
		return g
	}
	res, err := engine.Run(ctx, build(), graphs, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 2 {
		t.Errorf("apply made %d changes, want 2: %v", len(res.Plan.Changes), res.Plan.Changes)
	}
	if _, ok := own.items["bound"]; !ok || graphs.items["bound"].Name != "" {
		t.Fatalf("the bound task ran on the graph's world: own %v, graph's %v", own.items, graphs.items)
	}
	if b := own.items["bound"]; b.ParentID == nil || graphs.items["first"].ID == nil || *b.ParentID != *graphs.items["first"].ID {
		t.Errorf("the bound task's ParentID %v is not its dependency's ID", b.ParentID)
	}
	res, err = engine.Run(ctx, build(), graphs, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("a dry run after the apply: %v, want no changes", res.Plan.Changes)
	}
}
