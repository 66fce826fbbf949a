package removedgroups

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
)

type record struct {
	Object
	id string
}

// A group's deletion says its machines go with it; groups sort before templates; an apply may delete only what
// the plan lists as deleted.
func TestDeletionsAndPlanned(t *testing.T) {
	found := []record{
		{Object{Key: engine.Key{Type: "AutoScalingGroup", Name: "gpu.c"}, Group: "gpu", Machines: true}, "a"},
		{Object{Key: engine.Key{Type: "LaunchTemplate", Name: "gpu.c"}, Group: "gpu"}, "lt-1"},
		{Object{Key: engine.Key{Type: "LaunchTemplate", Name: "new.c"}, Group: "new"}, "lt-2"},
	}
	want := []engine.Change{
		{Key: found[0].Key, Action: engine.Delete, Note: "instance group gpu is no longer in the spec; its machines go with it"},
		{Key: found[1].Key, Action: engine.Delete, Note: "instance group gpu is no longer in the spec"},
		{Key: found[2].Key, Action: engine.Delete, Note: "instance group new is no longer in the spec"},
	}
	if diff := cmp.Diff(want, Deletions(found)); diff != "" {
		t.Errorf("Deletions (-want +got):\n%s", diff)
	}
	// The plan listed the group's two objects, and the third as modified: only the two may be deleted.
	planned := []engine.Change{want[0], want[1], {Key: found[2].Key, Action: engine.Modify}}
	got := Planned(found, planned)
	if len(got) != 2 || got[0].id != "a" || got[1].id != "lt-1" {
		t.Errorf("Planned: %+v, want the first two found", got)
	}
	if got := Sorted([]record{found[0]}, []record{found[2], found[1]}); len(got) != 3 || got[0].id != "a" || got[1].id != "lt-1" || got[2].id != "lt-2" {
		t.Errorf("Sorted: %+v, want the group, then the templates by name", got)
	}
	if got := Planned(found, nil); len(got) != 0 {
		t.Errorf("Planned of no plan: %+v", got)
	}
}
