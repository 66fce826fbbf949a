package nodegraph

import (
	"context"
	"kubeup.dev/kubeup/model"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestContainerdRestartsOnConfigChange checks, on a node root without systemd (where the service's inputs are
// recorded all the same), that a change of containerd's configuration is a change of containerd.service's inputs
// (the restart the dry run announces), and that a run without one changes nothing.
func TestContainerdRestartsOnConfigChange(t *testing.T) {
	ctx := context.Background()
	c, _ := completeSpec(t, model.CloudLocal, 1)
	n, err := nodetasks.NewNode(ctx, t.TempDir(), nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	build := func() *engine.Graph[*nodetasks.Node] {
		g := engine.NewGraph[*nodetasks.Node]()
		if _, err := addRuntimeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, &c.Spec, RuntimeAssets{}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	enginetest.ApplyThenNoChanges(t, ctx, n, build)

	c.Spec.Containerd.RestrictOOMScoreAdj = ptr(true)
	res, err := engine.Run(ctx, build(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	changed := map[engine.Key]bool{}
	for _, ch := range res.Plan.Changes {
		changed[ch.Key] = true
	}
	for _, k := range []engine.Key{{Type: "File", Name: model.ContainerdConfigFile}, {Type: "SystemdService", Name: model.ContainerdUnit}} {
		if !changed[k] {
			t.Errorf("after a change of spec.containerd, the dry run does not change %s: %+v", k, res.Plan.Changes)
		}
	}
	if len(changed) != 2 {
		t.Errorf("the dry run changes %v, want the configuration and containerd's restart only", changed)
	}
}

// TestRuntimeBeforeKubelet checks the order on a node: containerd's configuration and binaries, then containerd,
// then the image imports (each after its archive), then kubelet; and that containerd restarts when its
// configuration or a binary changes.
func TestRuntimeBeforeKubelet(t *testing.T) {
	c, _ := completeSpec(t, model.CloudLocal, 1)
	g := engine.NewGraph[*nodetasks.Node]()
	archive := engine.Add(g, &nodetasks.Asset{Path: "/var/lib/kubeup/images/pause.tar", URL: "https://example.com/pause.tar", SHA256: strings.Repeat("a", 64)})
	containerd := engine.Add(g, &nodetasks.Asset{Path: model.ContainerdBinary, URL: "https://example.com/containerd", SHA256: strings.Repeat("b", 64)})
	r, err := addRuntimeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, &c.Spec, RuntimeAssets{
		Binaries: []engine.Task{containerd},
		Images:   []RuntimeImage{{Name: model.DefaultSandboxImage, Archive: "/var/lib/kubeup/images/pause.tar", Source: archive}},
	})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[engine.Key]bool{}
	for _, d := range r.service.DependsOn {
		deps[d.Key()] = true
	}
	for _, k := range []engine.Key{{Type: "File", Name: model.ContainerdConfigFile}, {Type: "File", Name: model.CNIConfigTemplate}, containerd.Key()} {
		if !deps[k] {
			t.Errorf("containerd.service does not depend on %s: it would not restart when it changes", k)
		}
	}
	if len(r.imports) != 1 {
		t.Fatalf("imports = %v", r.imports)
	}
	imp := r.imports[0].(*nodetasks.ImageImport)
	if imp.Address != "/run/containerd/containerd.sock" || imp.Ctr != model.CtrBinary {
		t.Errorf("import: %+v", imp)
	}
	after := map[engine.Key]bool{}
	for _, d := range imp.Deps() {
		after[d.Key()] = true
	}
	if !after[archive.Key()] || !after[r.service.Key()] {
		t.Errorf("the import comes after %v, want the archive and containerd.service", imp.Deps())
	}
	if got := r.after(); len(got) != 2 || got[0] != engine.Task(r.service) || got[1] != r.imports[0] {
		t.Errorf("kubelet comes after %v, want containerd.service and the import", got)
	}
}
