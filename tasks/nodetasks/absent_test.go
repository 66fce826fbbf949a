package nodetasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestAbsent: a file that exists is removed by an apply and reported by a dry run; a missing one is no change; a
// symbolic link is removed, not what it points at.
func TestAbsent(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "etc/kubernetes/manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etcd-main.manifest"), []byte("pod"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "etcd-events.manifest")); err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(ctx, root, NodeOptions{Systemd: SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	build := func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		for _, p := range []string{"/etc/kubernetes/manifests/etcd-main.manifest", "/etc/kubernetes/manifests/etcd-events.manifest", "/etc/none/x"} {
			engine.Add(g, &Absent{Path: p})
		}
		return g
	}
	res, err := engine.Run(ctx, build(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 2 {
		t.Errorf("dry run: %d changes, want the 2 files that exist: %v", len(res.Plan.Changes), res.Plan.Changes)
	}
	if _, err := engine.Run(ctx, build(), n, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd-main.manifest", "etcd-events.manifest"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", name, err)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the link's target outside the root: %q, %v", b, err)
	}
	res, err = engine.Run(ctx, build(), n, engine.Options{Target: engine.DryRun})
	if err != nil || !res.Plan.Empty() {
		t.Errorf("a dry run after the apply: %v, %v", res.Plan.Changes, err)
	}
	if _, err := engine.Run(ctx, func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &Absent{Path: "relative"})
		return g
	}(), n, engine.Options{Target: engine.DryRun}); err == nil {
		t.Error("a relative path was accepted")
	}
}
