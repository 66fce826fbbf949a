package storetasks_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// listingStore is memStore that lists and deletes, as the state store does.
type listingStore struct {
	*memStore
	deleted []string
}

func (l *listingStore) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for p := range l.Objects {
		if strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (l *listingStore) Delete(_ context.Context, p string) error {
	delete(l.Objects, p)
	l.deleted = append(l.deleted, p)
	return nil
}

type listingWorld struct{ store *listingStore }

func (w *listingWorld) StateStore() storetasks.Store { return w.store }

func TestStaleObjectsDeletesGroupsNoLongerInTheSpec(t *testing.T) {
	w := &listingWorld{store: &listingStore{memStore: &memStore{Objects: map[string]string{
		"c/nodeup/nodes":        "kept",
		"c/nodeup/gone":         "stale",
		"c/nodeup/deeper/thing": "not directly under the prefix",
		"c/config":              "outside",
		"c2/nodeup/gone":        "another cluster's",
		"c/nodeupx":             "a lookalike prefix",
	}}}}
	build := func() *engine.Graph[*listingWorld] {
		g := engine.NewGraph[*listingWorld]()
		conf := engine.Add(g, &storetasks.File[*listingWorld]{Path: "c/nodeup/nodes", Contents: ptr("kept")})
		engine.Add(g, &storetasks.StaleObjects[*listingWorld]{Prefix: "c/nodeup", Objects: []string{"nodes"}, After: []engine.Task{conf}})
		return g
	}
	res, err := engine.Run(context.Background(), build(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	plan := res.Plan
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "StoreStaleObjects/c/nodeup") || !strings.Contains(text.String(), "gone") {
		t.Errorf("the dry run does not show the removal of c/nodeup/gone:\n%s", text.String())
	}
	if len(w.store.deleted) != 0 {
		t.Errorf("the dry run deleted %v", w.store.deleted)
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), w, build)
	if diff := cmp.Diff([]string{"c/nodeup/gone"}, w.store.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	var left []string
	for p := range w.store.Objects {
		left = append(left, p)
	}
	slices.Sort(left)
	want := []string{"c/config", "c/nodeup/deeper/thing", "c/nodeup/nodes", "c/nodeupx", "c2/nodeup/gone"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("objects left (-want +got):\n%s", diff)
	}
}

func TestStaleObjectsWithoutListingChangesNothing(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{"c/nodeup/gone": "x"}}}
	build := func() *engine.Graph[*world] {
		g := engine.NewGraph[*world]()
		engine.Add(g, &storetasks.StaleObjects[*world]{Prefix: "c/nodeup", Objects: []string{"nodes"}})
		return g
	}
	res, err := engine.Run(context.Background(), build(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	plan := res.Plan
	if len(plan.Changes) != 0 || w.store.Objects["c/nodeup/gone"] != "x" {
		t.Errorf("a store that cannot list: %d changes, objects %v", len(plan.Changes), w.store.Objects)
	}
}

func TestStaleObjectsRefusesTheRoot(t *testing.T) {
	s := &storetasks.StaleObjects[*world]{Prefix: "/", Objects: []string{"a"}}
	if err := s.CheckChanges(nil, s, s); err == nil {
		t.Error("CheckChanges accepted the store's root as the prefix")
	}
	conf := &storetasks.File[*world]{Path: "a", Contents: ptr("")}
	enginetest.CheckDeps(t, &storetasks.StaleObjects[*world]{Prefix: "c/nodeup", After: []engine.Task{conf}})
}
