package cloudup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// spoil makes a stored spec unreadable: corrupt bytes, or a field a newer kubeup would write.
var spoilers = []struct {
	name  string
	spoil func(spec []byte) []byte
	want  string
}{
	{"corrupt", func([]byte) []byte { return []byte("\x00\x01spec: [") }, "malformed YAML"},
	{"newer", func(spec []byte) []byte {
		return bytes.Replace(spec, []byte("\nspec:\n"), []byte("\nspec:\n  frobnicator: {}\n"), 1)
	}, "spec.frobnicator: unknown field (written by a newer kubeup? upgrade kubeup)"},
}

func spoil(t *testing.T, cs *Clusters, name string, f func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	spec, err := cs.Store.ReadFile(ctx, specPath(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, specPath(name), f(spec)); err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableCluster: a cluster whose stored spec does not decode is listed, says why it cannot be read,
// and can be replaced with a valid spec; its neighbour is untouched.
func TestUnreadableCluster(t *testing.T) {
	for _, sp := range spoilers {
		t.Run(sp.name, func(t *testing.T) {
			ctx := context.Background()
			cs := openStore(t, "file://"+t.TempDir())
			c, igs := newDemo(t, 1)
			if err := cs.Create(ctx, "create", c, igs); err != nil {
				t.Fatal(err)
			}
			other, otherIGs, err := model.NewCluster(model.NewClusterOptions{Name: "other.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.Create(ctx, "create", other, otherIGs); err != nil {
				t.Fatal(err)
			}
			good := readForReplace(t, cs)
			// A spec kept by hand: no resourceVersion; the control plane's group only.
			good.Cluster.Metadata.ResourceVersion, good.InstanceGroups = "", good.InstanceGroups[:1]
			good.InstanceGroups[0].Metadata.ResourceVersion = ""
			spoil(t, cs, demo, sp.spoil)

			if names, err := cs.List(ctx); err != nil || strings.Join(names, " ") != "demo.example.com other.example.com" {
				t.Errorf("List: %q, %v", names, err)
			}
			_, err = cs.Get(ctx, demo)
			var unreadable *UnreadableError
			if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), sp.want) || !strings.Contains(err.Error(), "kubeup replace -f FILE") {
				t.Errorf("Get of the spoilt cluster: %v, want an UnreadableError with %q", err, sp.want)
			}
			if _, err := cs.Get(ctx, "other.example.com"); err != nil {
				t.Errorf("Get of its neighbour: %v", err)
			}

			stale := readForReplaceOf(t, cs, "other.example.com")
			stale.Cluster.Metadata.Name = demo
			stale.Cluster.Metadata.ResourceVersion = "stale"
			if _, err := cs.Replace(ctx, "stale.yaml", &model.Objects{Cluster: stale.Cluster}, ReplaceOptions{}); err == nil || !strings.Contains(err.Error(), "changed by someone else") {
				t.Errorf("replace of the spoilt cluster from a stale read: %v, want it refused", err)
			}
			r, err := cs.Replace(ctx, "good.yaml", good, ReplaceOptions{})
			if err != nil {
				t.Fatalf("replace of the spoilt cluster with a valid spec: %v", err)
			}
			if r.Unreadable == nil || !strings.Contains(r.Unreadable.Error(), sp.want) {
				t.Errorf("Replaced.Unreadable = %v, want why the replaced spec was unreadable", r.Unreadable)
			}
			s, err := cs.Get(ctx, demo)
			if err != nil || len(s.InstanceGroups) != 1 {
				t.Fatalf("after the replace: %v, want the replaced spec with its one instance group", err)
			}
		})
	}
}

func readForReplaceOf(t *testing.T, cs *Clusters, name string) *model.Objects {
	t.Helper()
	s, err := cs.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return &model.Objects{Cluster: s.Cluster, InstanceGroups: s.InstanceGroups}
}

// TestDeleteOfAnUnreadableCluster deletes clusters whose spec cannot be read: one an update applied (its cloud
// is found from the complete spec the update wrote, and deleted), one never applied (only its state goes), and
// one whose complete spec is unreadable too (refused: nothing could find its cloud; nothing is deleted).
func TestDeleteOfAnUnreadableCluster(t *testing.T) {
	for _, sp := range spoilers {
		t.Run(sp.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			cs := openStore(t, "file://"+filepath.Join(dir, "state"))
			var out bytes.Buffer
			for _, name := range []string{"applied.example.com", "never.example.com", "lost.example.com"} {
				c, igs, err := model.NewCluster(model.NewClusterOptions{Name: name, CloudProvider: model.CloudLocal, Zones: []string{"a"}, DNSZone: "example.com"})
				if err != nil {
					t.Fatal(err)
				}
				if err := cs.Create(ctx, "create", c, igs); err != nil {
					t.Fatal(err)
				}
				if name != "never.example.com" {
					if _, err := cs.Update(ctx, name, UpdateOptions{Out: &out, Apply: true}); err != nil {
						t.Fatal(err)
					}
				}
				spoil(t, cs, name, sp.spoil)
			}
			if err := cs.Store.WriteFile(ctx, model.CompletedSpecPath("lost.example.com"), []byte("\x00")); err != nil {
				t.Fatal(err)
			}

			out.Reset()
			err := cs.Delete(ctx, "lost.example.com", DeleteOptions{Apply: true, Out: &out})
			if err == nil || !strings.Contains(err.Error(), "cannot find its cloud resources") || !strings.Contains(err.Error(), "kubeup replace -f FILE") {
				t.Errorf("delete of a cluster with no readable spec: %v, want it refused", err)
			}
			if left, _ := cs.Store.List(ctx, "lost.example.com"); len(left) == 0 {
				t.Error("the refused delete deleted the cluster's state")
			}

			out.Reset()
			if err := cs.Delete(ctx, "applied.example.com", DeleteOptions{Out: &out}); err != nil {
				t.Fatalf("delete dry run of an applied unreadable cluster: %v", err)
			}
			for _, want := range []string{"The spec of cluster applied.example.com cannot be read: ", sp.want,
				"found from the complete spec its last update applied", "LocalVolume/a.etcd-main.applied.example.com", "StoreFile/applied.example.com/config"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("delete dry run of an applied unreadable cluster lacks %q:\n%s", want, &out)
				}
			}
			if err := cs.Delete(ctx, "applied.example.com", DeleteOptions{Apply: true, Out: &out}); err != nil {
				t.Fatalf("delete of an applied unreadable cluster: %v", err)
			}
			if left, _ := cs.Store.List(ctx, "applied.example.com"); len(left) != 0 {
				t.Errorf("left of applied.example.com in the store: %v", left)
			}
			if images, _ := filepath.Glob(filepath.Join(dir, "state-local", "volumes", "*applied*")); len(images) != 0 {
				t.Errorf("its volumes are left: %v", images)
			}

			out.Reset()
			if err := cs.Delete(ctx, "never.example.com", DeleteOptions{Apply: true, Out: &out}); err != nil {
				t.Fatalf("delete of an unreadable cluster never applied: %v", err)
			}
			if !strings.Contains(out.String(), "owns nothing in the cloud: only its state is deleted") {
				t.Errorf("delete of an unreadable cluster never applied said:\n%s", &out)
			}
			if left, _ := cs.Store.List(ctx, "never.example.com"); len(left) != 0 {
				t.Errorf("left of never.example.com in the store: %v", left)
			}
			if _, err := os.Stat(filepath.Join(dir, "state", "never.example.com")); !os.IsNotExist(err) {
				t.Errorf("its directory is left: %v", err)
			}
		})
	}
}
