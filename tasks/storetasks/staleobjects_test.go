package storetasks_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
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

// The dry run's plan names each stale node configuration as a deletion of its StoreFile (not a modification of a
// task's list); Delete deletes those and nothing else; then nothing is stale.
func TestStaleObjectsDeletesGroupsNoLongerInTheSpec(t *testing.T) {
	ctx := context.Background()
	w := &listingWorld{store: &listingStore{memStore: &memStore{Objects: map[string]string{
		"c/nodeup/nodes":        "kept",
		"c/nodeup/gone":         "stale",
		"c/nodeup/also-gone":    "stale",
		"c/nodeup/deeper/thing": "not directly under the prefix",
		"c/config":              "outside",
		"c2/nodeup/gone":        "another cluster's",
		"c/nodeupx":             "a lookalike prefix",
	}}}}
	s := &storetasks.StaleObjects[*listingWorld]{Prefix: "c/nodeup", Keep: []string{"nodes"}}
	planned, err := s.Deletions(ctx, w, false)
	if err != nil {
		t.Fatal(err)
	}
	plan := &engine.Plan{}
	plan.Add(planned...)
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "Will delete resources:\n" +
		"  StoreFile/c/nodeup/also-gone (instance group also-gone is no longer in the spec)\n" +
		"  StoreFile/c/nodeup/gone (instance group gone is no longer in the spec)\n" +
		"Must specify --yes to apply changes\n"
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("the dry run's plan (-want +got):\n%s", diff)
	}
	if len(w.store.deleted) != 0 {
		t.Errorf("the dry run deleted %v", w.store.deleted)
	}
	// Nothing the dry run did not list is deleted.
	if done, err := s.Delete(ctx, w, planned[1:]); err != nil || len(done) != 1 {
		t.Errorf("Delete of one planned: deleted %v, %v", done, err)
	}
	if diff := cmp.Diff([]string{"c/nodeup/gone"}, w.store.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if done, err := s.Delete(ctx, w, planned); err != nil || !cmp.Equal(done, planned[:1]) {
		t.Errorf("Delete of the rest: deleted %v, %v", done, err)
	}
	if again, err := s.Deletions(ctx, w, false); err != nil || len(again) > 0 {
		t.Errorf("after Delete, still stale: %v (%v)", again, err)
	}
	var left []string
	for p := range w.store.Objects {
		left = append(left, p)
	}
	slices.Sort(left)
	wantLeft := []string{"c/config", "c/nodeup/deeper/thing", "c/nodeup/nodes", "c/nodeupx", "c2/nodeup/gone"}
	if diff := cmp.Diff(wantLeft, left); diff != "" {
		t.Errorf("objects left (-want +got):\n%s", diff)
	}
}

func TestStaleObjectsWithoutListingChangesNothing(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{"c/nodeup/gone": "x"}}}
	s := &storetasks.StaleObjects[*world]{Prefix: "c/nodeup", Keep: []string{"nodes"}}
	planned, err := s.Deletions(context.Background(), w, false)
	if err != nil || len(planned) != 0 || w.store.Objects["c/nodeup/gone"] != "x" {
		t.Errorf("a store that cannot list: deletions %v (%v), objects %v", planned, err, w.store.Objects)
	}
}

func TestStaleObjectsRefusesTheRootAndPaths(t *testing.T) {
	w := &listingWorld{store: &listingStore{memStore: &memStore{Objects: map[string]string{"a": "x"}}}}
	for _, s := range []*storetasks.StaleObjects[*listingWorld]{{Prefix: "/", Keep: []string{"a"}}, {Prefix: "c/nodeup", Keep: []string{"a/b"}}} {
		if d, err := s.Deletions(context.Background(), w, false); err == nil {
			t.Errorf("Deletions of %+v: %v, no error", s, d)
		}
	}
}
