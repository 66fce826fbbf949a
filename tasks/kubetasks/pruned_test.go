package kubetasks_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

// TestPrunedDeletesOnlyStale: of a collection, only the objects that carry kubeup's label and are not kept are
// deleted (a replaced bootstrap token's Secret); one without the label is never touched; a dry run deletes
// nothing, and after the apply a dry run plans nothing.
func TestPrunedDeletesOnlyStale(t *testing.T) {
	f, c := kubetest.New(t)
	w := &world{c}
	const dir = "/api/v1/namespaces/kube-system/secrets"
	secret := func(name string, labels map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name, "labels": labels}}
	}
	mine := map[string]any{"kubeup.dev/bootstrap-token": "c.example.com"}
	f.Objects[dir+"/bootstrap-token-new111"] = secret("bootstrap-token-new111", mine)
	f.Objects[dir+"/bootstrap-token-old222"] = secret("bootstrap-token-old222", mine)
	f.Objects[dir+"/bootstrap-token-kubeadm"] = secret("bootstrap-token-kubeadm", map[string]any{"other": "x"})
	f.Objects[dir+"/bootstrap-token-other"] = secret("bootstrap-token-other", map[string]any{"kubeup.dev/bootstrap-token": "other.example.com"})
	task := func() *kubetasks.Pruned[*world] {
		return &kubetasks.Pruned[*world]{Name: "Secret/kube-system/bootstrap-token", ListPath: dir,
			Selector: "kubeup.dev/bootstrap-token=c.example.com", Keep: []string{"bootstrap-token-new111"}}
	}
	runPruned := func(target engine.Target) *engine.Plan {
		g := engine.NewGraph[*world]()
		engine.Add(g, task())
		res, err := engine.Run(context.Background(), g, w, engine.Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		return res.Plan
	}
	p := runPruned(engine.DryRun)
	var text strings.Builder
	p.WriteText(&text)
	if len(p.Changes) != 1 || !strings.Contains(text.String(), "bootstrap-token-old222") || len(f.Deletes) != 0 {
		t.Fatalf("dry run: want one change naming the stale Secret and nothing deleted; %d deleted\n%s", len(f.Deletes), text.String())
	}
	runPruned(engine.Apply)
	if !slices.Equal(f.Deletes, []string{dir + "/bootstrap-token-old222"}) {
		t.Fatalf("deleted %v, want the stale Secret only", f.Deletes)
	}
	if p := runPruned(engine.DryRun); !p.Empty() {
		t.Fatalf("after the apply, a dry run plans changes")
	}
}
