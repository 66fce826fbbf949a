package cloudup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

func nodeGroup(name string, maxSize int32) *model.InstanceGroup {
	return &model.InstanceGroup{
		APIVersion: model.APIVersion, Kind: model.KindInstanceGroup,
		Metadata: model.ObjectMeta{Name: name},
		Spec:     model.InstanceGroupSpec{Role: model.RoleNode, MaxSize: ptr(maxSize)},
	}
}

// TestHeldMembers: what deleting a control-plane group says it would do to each etcd cluster, by its size.
func TestHeldMembers(t *testing.T) {
	for _, tt := range []struct {
		controlPlanes int
		want          string
	}{
		{1, "member a of etcd cluster main (1 members, quorum 1): its only member, so the cluster's API stops and its data is left on a volume no node runs"},
		{3, "member a of etcd cluster main (3 members, quorum 2): 2 members would be left to keep the quorum of 2, so it would survive 0 more failures instead of 1"},
		{5, "member a-1 of etcd cluster main (5 members, quorum 3): 4 members would be left to keep the quorum of 3, so it would survive 1 more failures instead of 2"},
	} {
		c, igs := newDemo(t, tt.controlPlanes)
		full, _ := model.Complete(c, igs)
		group := igs[0].Metadata.Name
		held := heldMembers(full, group)
		if len(held) != 2 || held[0] != tt.want || !strings.HasPrefix(held[1], strings.Replace(tt.want, "etcd cluster main", "etcd cluster events", 1)[:30]) {
			t.Errorf("%d control planes, group %s: %q, want main's then events': %q", tt.controlPlanes, group, held, tt.want)
		}
		if held := heldMembers(full, "nodes"); len(held) != 0 {
			t.Errorf("the node group holds %q", held)
		}
	}
}

// TestCreateAndDeleteInstanceGroups: a group is added to and removed from the spec; without apply nothing is
// written; a group that runs etcd members is refused with an *EtcdMembersError; an older layout's objects go.
func TestCreateAndDeleteInstanceGroups(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 3)
	c.Spec.ConfigBase = cs.configBase(demo)
	// The older layout: the groups in objects of their own.
	data, err := model.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, model.ConfigPath(demo), data); err != nil {
		t.Fatal(err)
	}
	for _, ig := range igs {
		data, err := model.Encode(ig)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Store.WriteFile(ctx, model.InstanceGroupPath(demo, ig.Metadata.Name), data); err != nil {
			t.Fatal(err)
		}
	}
	spec := func() []byte { b, _ := cs.Store.ReadFile(ctx, model.ConfigPath(demo)); return b }
	before := spec()

	if _, err := cs.CreateInstanceGroups(ctx, "dry", demo, []*model.InstanceGroup{nodeGroup("gpu", 3)}, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, spec()) {
		t.Fatal("CreateInstanceGroups without apply wrote the spec")
	}
	s, err := cs.CreateInstanceGroups(ctx, "create", demo, []*model.InstanceGroup{nodeGroup("gpu", 3)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"control-plane-a", "control-plane-b", "control-plane-c", "gpu", "nodes"}, groupNames(s.InstanceGroups)); diff != "" {
		t.Errorf("groups after the create (-want +got):\n%s", diff)
	}
	if paths, err := cs.Store.List(ctx, demo+"/instancegroup"); err != nil || len(paths) != 0 {
		t.Errorf("after the create, the older layout's objects are left: %v, %v", paths, err)
	}

	before = spec()
	var held *EtcdMembersError
	if _, err := cs.DeleteInstanceGroup(ctx, demo, "control-plane-c", true); !errors.As(err, &held) || held.Group != "control-plane-c" || len(held.Members) != 2 {
		t.Fatalf("delete of a control-plane group: %v, want an *EtcdMembersError naming its 2 members", err)
	}
	if ig, err := cs.DeleteInstanceGroup(ctx, demo, "gpu", false); err != nil || ig.Metadata.Name != "gpu" || !bytes.Equal(before, spec()) {
		t.Fatalf("delete without apply: %v, %v; or it wrote the spec", ig, err)
	}
	if _, err := cs.DeleteInstanceGroup(ctx, demo, "gpu", true); err != nil {
		t.Fatal(err)
	}
	if s, err := cs.Get(ctx, demo); err != nil || findGroup(s.InstanceGroups, "gpu") != nil || len(s.InstanceGroups) != 4 {
		t.Errorf("after the delete: %v; groups %v", err, groupNames(s.InstanceGroups))
	}
}

// TestEditInstanceGroup: edit shows the group alone, labelled with its cluster; a valid edit replaces it and keeps
// the cluster and the other groups; an edit over a concurrent change is refused and kept.
func TestEditInstanceGroup(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var shown string
	sed := func(old, new string) func(string) error {
		return func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			shown = string(b)
			return os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o600)
		}
	}
	changed, kept, err := cs.EditInstanceGroup(ctx, demo, "nodes", sed("maxSize: 1", "maxSize: 7"))
	if err != nil || !changed || kept != "" {
		t.Fatalf("a valid edit: changed %v, kept %q, err %v", changed, kept, err)
	}
	for _, want := range []string{"kind: InstanceGroup\n", "  labels:\n    kubeup.dev/cluster: demo.example.com\n", "  name: nodes\n", "  resourceVersion: "} {
		if !strings.Contains(shown, want) || strings.Contains(shown, "kind: Cluster") {
			t.Errorf("the editor was shown, without %q or with the Cluster:\n%s", want, shown)
		}
	}
	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if ig := findGroup(s.InstanceGroups, "nodes"); ig == nil || *ig.Spec.MaxSize != 7 || ig.Metadata.Labels != nil || len(s.InstanceGroups) != 2 {
		t.Errorf("after the edit: %+v, %d groups", ig, len(s.InstanceGroups))
	}

	// Someone adds a group while the editor is open: that does not concern this group's edit.
	changed, kept, err = cs.EditInstanceGroup(ctx, demo, "nodes", func(path string) error {
		if _, err := cs.CreateInstanceGroups(ctx, "theirs", demo, []*model.InstanceGroup{nodeGroup("theirs", 1)}, true); err != nil {
			return err
		}
		return sed("maxSize: 7", "maxSize: 8")(path)
	})
	if err != nil || !changed || kept != "" {
		t.Fatalf("an edit over a concurrent change of another group: changed %v, kept %q, err %v", changed, kept, err)
	}

	// Someone changes this group while the editor is open: the edit is refused and kept.
	changed, kept, err = cs.EditInstanceGroup(ctx, demo, "nodes", func(path string) error {
		theirs := readForReplace(t, cs)
		nodes := theirs.InstanceGroups[slices.IndexFunc(theirs.InstanceGroups, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == "nodes" })]
		nodes.Spec.MinSize = ptr[int32](2)
		if _, err := cs.Replace(ctx, "theirs.yaml", &model.Objects{InstanceGroups: []*model.InstanceGroup{nodes}}, ReplaceOptions{Cluster: demo}); err != nil {
			return err
		}
		return sed("maxSize: 8", "maxSize: 9")(path)
	})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || changed || kept == "" || len(conflict.Objects) != 1 || conflict.Objects[0].Group != "nodes" ||
		!slices.Equal(conflict.Objects[0].Paths, []string{"spec.maxSize", "spec.minSize"}) {
		t.Fatalf("an edit over a concurrent change of the group: changed %v, kept %q, err %v", changed, kept, err)
	}
	defer os.Remove(kept)
	// The kept file replaces the group once the change is redone over theirs (its resourceVersion is stale).
	objs, err := model.Decode(kept, mustRead(t, kept))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Replace(ctx, kept, objs, ReplaceOptions{}); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("replace of the kept edit: %v, want it refused as read before theirs", err)
	}
	r, err := cs.Replace(ctx, kept, objs, ReplaceOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cluster != demo || findGroup(r.Stored.InstanceGroups, "theirs") == nil || *findGroup(r.Stored.InstanceGroups, "nodes").Spec.MaxSize != 9 {
		t.Errorf("replace --force of the kept edit: %+v", r)
	}
}

// TestReplaceGroupsOfAnUnreadableCluster: groups alone cannot be merged into a spec that cannot be read.
func TestReplaceGroupsOfAnUnreadableCluster(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	if err := cs.Store.WriteFile(ctx, model.ConfigPath(demo), []byte("kind: Cluster\nfrobnicator: 1\n")); err != nil {
		t.Fatal(err)
	}
	objs := &model.Objects{InstanceGroups: []*model.InstanceGroup{nodeGroup("nodes", 2)}}
	_, err := cs.Replace(ctx, "nodes.yaml", objs, ReplaceOptions{Cluster: demo})
	var unreadable *UnreadableError
	if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), "nodes.yaml holds instance groups only") {
		t.Errorf("replace of groups alone in an unreadable cluster: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
