package cloudup

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// racingStore is a store on which someone else changes the cluster between a command's read and its write:
// before each conditional write of a spec, up to races times, it runs theirs (which writes through the store
// underneath).
type racingStore struct {
	statestore.Store
	mu     sync.Mutex
	races  int
	theirs func()
	writes int // conditional writes of a spec tried
}

func (s *racingStore) WriteIf(ctx context.Context, p string, data []byte, ifGen statestore.Generation) (statestore.Generation, error) {
	s.mu.Lock()
	if p == specPath(demo) {
		s.writes++
		if s.races > 0 {
			s.races--
			s.theirs()
		}
	}
	s.mu.Unlock()
	return s.Store.WriteIf(ctx, p, data, ifGen)
}

// racing returns the demo cluster's Clusters on a store of kind b (created with one control plane and nodes),
// on which theirs runs before the next races conditional writes, with the Clusters theirs writes through.
func racing(t *testing.T, open func(*testing.T) *Clusters, races int, theirs func(ctx context.Context, them *Clusters)) (*Clusters, *racingStore, *Clusters) {
	t.Helper()
	ctx := context.Background()
	them := open(t)
	c, igs := newDemo(t, 1)
	c.Spec.Local = &model.LocalSpec{PoolDir: "/nonexistent/pool", ZoneFile: "/nonexistent/example.com.zone"} // nothing is applied
	if err := them.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	rs := &racingStore{Store: them.Store, races: races}
	rs.theirs = func() { theirs(ctx, them) }
	return &Clusters{Store: rs, raceWait: time.Millisecond}, rs, them
}

// groupOf returns the instance group named name of objs.
func groupOf(t *testing.T, objs *model.Objects, name string) *model.InstanceGroup {
	t.Helper()
	i := slices.IndexFunc(objs.InstanceGroups, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == name })
	if i < 0 {
		t.Fatalf("no instance group %s", name)
	}
	return objs.InstanceGroups[i]
}

// TestAChangeOfAnotherObjectIsTriedAgain: someone writes the cluster's spec between a command's read and its
// write, changing an object the command does not write. The command's conditional write fails; it reads the
// spec again and writes its change over theirs: both are kept. It was refused ("changed by someone else") when
// the whole spec had one version.
func TestAChangeOfAnotherObjectIsTriedAgain(t *testing.T) {
	for _, b := range testStores {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()

			// create instancegroup, while someone creates another group.
			cs, rs, _ := racing(t, b.open, 1, func(ctx context.Context, them *Clusters) {
				if _, err := them.CreateInstanceGroups(ctx, "theirs", demo, []*model.InstanceGroup{nodeGroup("theirs", 1)}, true); err != nil {
					t.Error(err)
				}
			})
			if _, err := cs.CreateInstanceGroups(ctx, "ours", demo, []*model.InstanceGroup{nodeGroup("ours", 2)}, true); err != nil {
				t.Fatalf("create instancegroup raced by another group's create: %v", err)
			}
			s, err := cs.Get(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			if got := groupNames(s.InstanceGroups); !slices.Equal(got, []string{"control-plane-a", "nodes", "ours", "theirs"}) || rs.writes != 2 {
				t.Errorf("after the race: groups %v, %d writes tried; want both new groups, in 2 writes", got, rs.writes)
			}

			// replace of a group read at its version, while someone changes the Cluster.
			cs, rs, _ = racing(t, b.open, 1, func(ctx context.Context, them *Clusters) {
				objs := readForReplace(t, them)
				objs.Cluster.Spec.KubernetesVersion = "1.34.3"
				if _, err := them.Replace(ctx, "theirs.yaml", &model.Objects{Cluster: objs.Cluster}, ReplaceOptions{}); err != nil {
					t.Error(err)
				}
			})
			mine := readForReplace(t, cs)
			nodes := groupOf(t, mine, "nodes")
			nodes.Spec.MaxSize = ptr[int32](4)
			if _, err := cs.Replace(ctx, "nodes.yaml", &model.Objects{InstanceGroups: []*model.InstanceGroup{nodes}}, ReplaceOptions{Cluster: demo}); err != nil {
				t.Fatalf("replace of a group raced by a change of the Cluster: %v", err)
			}
			s, err = cs.Get(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			if v, max := s.Cluster.Spec.KubernetesVersion, *findGroup(s.InstanceGroups, "nodes").Spec.MaxSize; v != "1.34.3" || max != 4 || rs.writes != 2 {
				t.Errorf("after the race: kubernetesVersion %q (theirs: 1.34.3), nodes maxSize %d (ours: 4), %d writes tried (want 2)", v, max, rs.writes)
			}

			// delete instancegroup, while someone creates another group.
			cs, rs, _ = racing(t, b.open, 1, func(ctx context.Context, them *Clusters) {
				if _, err := them.CreateInstanceGroups(ctx, "theirs", demo, []*model.InstanceGroup{nodeGroup("theirs", 1)}, true); err != nil {
					t.Error(err)
				}
			})
			if _, err := cs.DeleteInstanceGroup(ctx, demo, "nodes", true); err != nil {
				t.Fatalf("delete instancegroup raced by another group's create: %v", err)
			}
			if s, err = cs.Get(ctx, demo); err != nil {
				t.Fatal(err)
			}
			if got := groupNames(s.InstanceGroups); !slices.Equal(got, []string{"control-plane-a", "theirs"}) || rs.writes != 2 {
				t.Errorf("after the race: groups %v, %d writes tried; want nodes deleted and theirs created, in 2 writes", got, rs.writes)
			}
		})
	}
}

// TestAChangeOfTheSameObjectIsRefusedAfterARace: someone changes the very group a command writes, between its
// read and its write. The command's write fails, it reads again, finds the group changed since its file was
// read, and refuses with the group and the field paths at which theirs and ours differ; theirs stays.
func TestAChangeOfTheSameObjectIsRefusedAfterARace(t *testing.T) {
	for _, b := range testStores {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cs, rs, them := racing(t, b.open, 1, func(ctx context.Context, them *Clusters) {
				objs := readForReplace(t, them)
				nodes := groupOf(t, objs, "nodes")
				nodes.Spec.MaxSize = ptr[int32](3)
				if _, err := them.Replace(ctx, "theirs.yaml", &model.Objects{InstanceGroups: []*model.InstanceGroup{nodes}}, ReplaceOptions{Cluster: demo}); err != nil {
					t.Error(err)
				}
			})
			mine := readForReplace(t, cs)
			nodes := groupOf(t, mine, "nodes")
			nodes.Spec.MaxSize = ptr[int32](5)
			_, err := cs.Replace(ctx, "nodes.yaml", &model.Objects{InstanceGroups: []*model.InstanceGroup{nodes}}, ReplaceOptions{Cluster: demo})
			var conflict *ConflictError
			if !errors.As(err, &conflict) || !errors.Is(err, statestore.ErrConflict) || len(conflict.Objects) != 1 ||
				conflict.Objects[0].Group != "nodes" || !slices.Equal(conflict.Objects[0].Paths, []string{"spec.maxSize"}) {
				t.Fatalf("replace of a group raced by a change of that group: %v, want a *ConflictError for nodes at spec.maxSize", err)
			}
			for _, want := range []string{
				"instance group nodes of cluster demo.example.com was changed by someone else since nodes.yaml was read",
				"differ at spec.maxSize", "nothing was written", "`kubeup get ig nodes --name demo.example.com -o yaml`", "re-apply your change", "--force",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q:\n%v", want, err)
				}
			}
			s, err := them.Get(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			if max := *findGroup(s.InstanceGroups, "nodes").Spec.MaxSize; max != 3 || rs.writes != 1 {
				t.Errorf("after the refusal: nodes maxSize %d, want theirs (3); %d writes tried, want 1", max, rs.writes)
			}
		})
	}
}

// TestRacedWritesAreBounded: someone writes the spec before every write of a command; it gives up after
// maxWrites tries, with a conflict, and nothing of its change is written.
func TestRacedWritesAreBounded(t *testing.T) {
	ctx := context.Background()
	n := 0
	cs, rs, them := racing(t, func(t *testing.T) *Clusters { return openStore(t, "file://"+t.TempDir()) }, maxWrites+1, func(ctx context.Context, them *Clusters) {
		n++
		if _, err := them.CreateInstanceGroups(ctx, "theirs", demo, []*model.InstanceGroup{nodeGroup("theirs"+string(rune('a'+n)), 1)}, true); err != nil {
			t.Error(err)
		}
	})
	_, err := cs.CreateInstanceGroups(ctx, "ours", demo, []*model.InstanceGroup{nodeGroup("ours", 1)}, true)
	if !errors.Is(err, statestore.ErrConflict) || !strings.Contains(err.Error(), "changed by someone else 16 times while this change was being written") ||
		!strings.Contains(err.Error(), "nothing was written; run the command again") || rs.writes != maxWrites {
		t.Fatalf("a change raced at every write: %v after %d writes, want it to give up after %d", err, rs.writes, maxWrites)
	}
	if s, err := them.Get(ctx, demo); err != nil || findGroup(s.InstanceGroups, "ours") != nil {
		t.Errorf("after giving up: %v, groups %v", err, groupNames(s.InstanceGroups))
	}
}

// TestReplaceComparesTheObjectsItWrites: each object is compared by its own version. Replacing twice with the
// same objects changes nothing the second time (Unchanged), though their resourceVersions are those of before
// the first; a change of an object the file does not hold does not concern it; a change of one it holds is
// refused, and more so when the file holds that object as it was read (the message says to leave it out). A
// file read by an older kubeup, whose objects carry the whole spec's generation, replaces while the spec is
// still at that generation.
func TestReplaceComparesTheObjectsItWrites(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}

	mine := readForReplace(t, cs)
	mine.Cluster.Spec.KubernetesVersion = "1.34.3"
	for i, want := range []bool{false, true} {
		r, err := cs.Replace(ctx, "mine.yaml", &model.Objects{Cluster: mine.Cluster}, ReplaceOptions{})
		if err != nil || r.Unchanged != want || r.Stored.Cluster.Spec.KubernetesVersion != "1.34.3" {
			t.Fatalf("replace %d with the same file: %+v, %v; want Unchanged %v", i+1, r, err, want)
		}
	}

	// Someone changes the nodes group: a file of the Cluster alone, read before, replaces.
	mine = readForReplace(t, cs)
	theirs := readForReplace(t, cs)
	groupOf(t, theirs, "nodes").Spec.MaxSize = ptr[int32](3)
	if _, err := cs.Replace(ctx, "theirs.yaml", theirs, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	mine.Cluster.Spec.KubernetesVersion = "1.34.4"
	if _, err := cs.Replace(ctx, "mine.yaml", &model.Objects{Cluster: mine.Cluster}, ReplaceOptions{}); err != nil {
		t.Fatalf("replace of the Cluster after a change of a group: %v", err)
	}
	// A file of the Cluster and that group, the group as it was read: refused, with the advice to leave it out.
	before, _ := cs.Store.ReadFile(ctx, specPath(demo))
	_, err := cs.Replace(ctx, "mine.yaml", mine, ReplaceOptions{})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Objects) != 1 || conflict.Objects[0].Group != "nodes" || !conflict.Objects[0].Unchanged ||
		!strings.Contains(err.Error(), "mine.yaml holds it as it was read, with no change of yours: leave it out to keep the other change") {
		t.Fatalf("replace of a group changed since, unchanged in the file: %v", err)
	}
	if after, _ := cs.Store.ReadFile(ctx, specPath(demo)); !bytes.Equal(before, after) {
		t.Errorf("the refused replace changed the spec:\n%s", after)
	}

	// As an older kubeup printed it: every object at the spec's generation.
	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	old := readForReplace(t, cs)
	old.Cluster.Metadata.ResourceVersion = string(s.Generation)
	old.Cluster.Spec.KubernetesVersion = "1.34.5"
	if _, err := cs.Replace(ctx, "old.yaml", &model.Objects{Cluster: old.Cluster}, ReplaceOptions{}); err != nil {
		t.Fatalf("replace of a file read at the spec's current generation: %v", err)
	}
	old.Cluster.Spec.KubernetesVersion = "1.34.6"
	if _, err := cs.Replace(ctx, "old.yaml", &model.Objects{Cluster: old.Cluster}, ReplaceOptions{}); !errors.Is(err, statestore.ErrConflict) {
		t.Fatalf("replace of a file read at an older generation of the spec: %v, want a conflict", err)
	}
}
