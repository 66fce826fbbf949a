package engine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// dryRun runs a one-task graph against world and returns the names of the fields it would change.
func dryRun(t *testing.T, world *World, expected *Item) (engine.Action, []string) {
	t.Helper()
	g := engine.NewGraph[*World]()
	engine.Add(g, expected)
	res, err := engine.Run(context.Background(), g, world, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Empty() {
		return "", nil
	}
	var names []string
	for _, f := range res.Plan.Changes[0].Fields {
		names = append(names, f.Name)
	}
	return res.Plan.Changes[0].Action, names
}

func TestChangeRules(t *testing.T) {
	stored := Item{
		Name:   "x",
		Size:   ptr(10),
		Labels: map[string]string{"a": "1", "b": "2"},
		Zones:  []string{"a", "b", "c"},
		Order:  []string{"first", "second"},
		ID:     ptr("id-7"),
	}
	tests := []struct {
		name     string
		expected Item
		want     []string // changed fields; nil: no change
	}{
		{"nil pointer is don't care", Item{Name: "x", Labels: stored.Labels, Zones: stored.Zones, Order: stored.Order}, nil},
		{"equal pointer", Item{Name: "x", Size: ptr(10), Labels: stored.Labels, Zones: stored.Zones, Order: stored.Order}, nil},
		{"different pointer", Item{Name: "x", Size: ptr(20), Labels: stored.Labels, Zones: stored.Zones, Order: stored.Order}, []string{"Size"}},
		{"map by value, not identity", Item{Name: "x", Labels: map[string]string{"b": "2", "a": "1"}, Zones: stored.Zones, Order: stored.Order}, nil},
		{"map value differs", Item{Name: "x", Labels: map[string]string{"a": "1", "b": "3"}, Zones: stored.Zones, Order: stored.Order}, []string{"Labels"}},
		{"set ignores order", Item{Name: "x", Labels: stored.Labels, Zones: []string{"c", "a", "b"}, Order: stored.Order}, nil},
		{"set membership differs", Item{Name: "x", Labels: stored.Labels, Zones: []string{"a", "b", "d"}, Order: stored.Order}, []string{"Zones"}},
		{"set multiplicity differs", Item{Name: "x", Labels: stored.Labels, Zones: []string{"a", "a", "b"}, Order: stored.Order}, []string{"Zones"}},
		{"ordinary slice keeps order", Item{Name: "x", Labels: stored.Labels, Zones: stored.Zones, Order: []string{"second", "first"}}, []string{"Order"}},
		{"nilempty: empty equals nil", Item{Name: "x", Labels: stored.Labels, Zones: stored.Zones, Order: stored.Order, Tags: map[string]string{}}, nil},
		{"without nilempty, empty differs from nil", Item{Name: "x", Labels: map[string]string{}, Zones: stored.Zones, Order: stored.Order}, []string{"Labels"}},
		{"nil slice means empty, not don't care", Item{Name: "x", Labels: stored.Labels, Zones: stored.Zones}, []string{"Order"}},
		{"output is never compared", Item{Name: "x", Labels: stored.Labels, Zones: stored.Zones, Order: stored.Order, ID: ptr("id-other")}, nil},
		{"several fields in declaration order", Item{Name: "x", Size: ptr(11), Contents: ptr("c"), Labels: stored.Labels, Zones: []string{"z"}, Order: stored.Order}, []string{"Size", "Contents", "Zones"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expected := tt.expected
			_, got := dryRun(t, newWorld(stored), &expected)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changed fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateListsSetFields(t *testing.T) {
	action, fields := dryRun(t, newWorld(), &Item{Name: "x", Size: ptr(1), Zones: []string{"a"}, Tags: map[string]string{}})
	if action != engine.Create {
		t.Errorf("action = %q, want create", action)
	}
	// Name repeats the key; unset and empty fields say nothing.
	if diff := cmp.Diff([]string{"Size", "Zones"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestFindCopiesOutputsToExpected(t *testing.T) {
	expected := &Item{Name: "x", Order: []string{}}
	dryRun(t, newWorld(Item{Name: "x", ID: ptr("id-7")}), expected)
	if expected.ID == nil || *expected.ID != "id-7" {
		t.Errorf("expected.ID = %v, want id-7 copied from what Find returned", expected.ID)
	}
}

func TestOutputsReachDependents(t *testing.T) {
	world := newWorld()
	build := func() *engine.Graph[*World] {
		g := engine.NewGraph[*World]()
		parent := engine.Add(g, &Item{Name: "parent", Size: ptr(1)})
		engine.Add(g, &Item{Name: "child", Parent: parent})
		return g
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), world, build)
	child := world.items["child"]
	if child.ParentID == nil || *child.ParentID != *world.items["parent"].ID {
		t.Errorf("child.ParentID = %v, want the parent's ID %v", child.ParentID, world.items["parent"].ID)
	}
}

func TestRenderReceivesOnlyChanges(t *testing.T) {
	world := newWorld(Item{Name: "x", Size: ptr(1), Contents: ptr("same"), Order: []string{"a"}})
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x", Size: ptr(2), Contents: ptr("same"), Order: []string{"a"}})
	if _, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	got := world.changes["x"]
	if got.Size == nil || *got.Size != 2 {
		t.Errorf("changes.Size = %v, want 2", got.Size)
	}
	if got.Contents != nil || got.Order != nil {
		t.Errorf("changes holds unchanged fields: Contents=%v Order=%v, want both unset", got.Contents, got.Order)
	}
}

func TestCheckChangesRejectsWithoutRendering(t *testing.T) {
	world := newWorld(Item{Name: "x", Size: ptr(10), Order: []string{}})
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x", Size: ptr(5), Order: []string{}})
	_, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.Apply, Backoff: 1})
	if err == nil || !contains(err.Error(), "Item/x: checking changes: Size: cannot shrink from 10 to 5") {
		t.Fatalf("err = %v, want the CheckChanges error with the task key", err)
	}
	if n := world.count(world.renders, "x"); n != 0 {
		t.Errorf("Render called %d times, want 0", n)
	}
	if n := world.count(world.finds, "x"); n != 1 {
		t.Errorf("Find called %d times, want 1: a CheckChanges error is terminal", n)
	}
}

func TestDuplicateEqualTasksShareOneNode(t *testing.T) {
	g := engine.NewGraph[*World]()
	first := engine.Add(g, &Item{Name: "x", Labels: map[string]string{"a": "1"}})
	second := engine.Add(g, &Item{Name: "x", Labels: map[string]string{"a": "1"}})
	if first != second {
		t.Error("adding an equal task twice should return the task the graph holds")
	}
	if g.Len() != 1 {
		t.Errorf("graph has %d tasks, want 1", g.Len())
	}
	if err := g.Validate(engine.Apply); err != nil {
		t.Errorf("equal duplicates must validate: %v", err)
	}
}

func TestCheckDepsHelper(t *testing.T) {
	parent := &Item{Name: "p"}
	enginetest.CheckDeps(t, &Item{Name: "c", Parent: parent, Needs: []*Item{{Name: "n"}}})

	ft := &fakeTB{TB: t}
	enginetest.CheckDeps(ft, &forgetful{Name: "f", Other: parent})
	if !contains(ft.errors, "field Other holds Item/p, which Deps() does not return") {
		t.Errorf("CheckDeps did not catch an unlisted dependency; reported: %q", ft.errors)
	}
}

// forgetful holds a task it does not list in Deps: the bug CheckDeps exists to catch.
type forgetful struct {
	Name  string
	Other *Item
}

func (f *forgetful) Key() engine.Key     { return engine.Key{Type: "Forgetful", Name: f.Name} }
func (f *forgetful) Deps() []engine.Task { return nil }

type fakeTB struct {
	testing.TB
	errors string
}

func (f *fakeTB) Errorf(format string, args ...any) { f.errors += sprintf(format, args...) + "\n" }
func (f *fakeTB) Helper()                           {}
