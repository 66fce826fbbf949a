package engine_test

import (
	"context"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// pair is a world made of two parts, each the world of its own tasks.
type pair struct{ left, right *World }

func (p *pair) leftPart() *World  { return p.left }
func (p *pair) rightPart() *World { return p.right }

// TestAddIn: tasks of two worlds run in one graph, in dependency order across the parts, each on its part; the
// outputs of one reach a dependent of the other; an apply is followed by a dry run with nothing to do.
func TestAddIn(t *testing.T) {
	ctx := context.Background()
	w := &pair{left: newWorld(), right: newWorld()}
	build := func() *engine.Graph[*pair] {
		g := engine.NewGraph[*pair]()
		volume := engine.AddIn(g, (*pair).leftPart, &Item{Name: "volume", Size: ptr(20)})
		engine.AddIn(g, (*pair).rightPart, &Item{Name: "mount", Parent: volume})
		return g
	}
	res, err := engine.Run(ctx, build(), w, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 2 {
		t.Errorf("apply made %d changes, want 2: %v", len(res.Plan.Changes), res.Plan.Changes)
	}
	volume, ok := w.left.items["volume"]
	if !ok || w.right.items["volume"].Name != "" {
		t.Fatalf("the volume is not in the left part alone: left %v, right %v", w.left.items, w.right.items)
	}
	mount, ok := w.right.items["mount"]
	if !ok || w.left.items["mount"].Name != "" {
		t.Fatalf("the mount is not in the right part alone: left %v, right %v", w.left.items, w.right.items)
	}
	if mount.ParentID == nil || volume.ID == nil || *mount.ParentID != *volume.ID {
		t.Errorf("the mount's ParentID %v is not the volume's ID %v: outputs did not flow across the parts", mount.ParentID, volume.ID)
	}
	res, err = engine.Run(ctx, build(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("a dry run after the apply: %v, want no changes", res.Plan.Changes)
	}
}
