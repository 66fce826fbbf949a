package nodetasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// TestAbsentService, without a systemd: a unit kubeup installed and enabled loses its wants/ link, its unit file
// and its inputs record; a unit of a package in /usr/lib/systemd/system, a drop-in and another unit stay; a dry
// run after the apply has nothing to do.
func TestAbsentService(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const def = "[Service]\nExecStart=/usr/local/bin/protokube\n[Install]\nWantedBy=multi-user.target\n"
	files := map[string]string{
		"etc/systemd/system/protokube.service":                 def,
		"etc/systemd/system/protokube.service.d/10-local.conf": "[Service]\n",
		"var/lib/kubeup/systemd/protokube.service.inputs":      "unit protokube.service sha256:0\n",
		"usr/lib/systemd/system/protokube.service":             def,
		"etc/systemd/system/other.service":                     def,
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"protokube.service", "other.service"} {
		if err := os.Symlink("/etc/systemd/system/"+u, filepath.Join(wants, u)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := NewNode(ctx, root, NodeOptions{Systemd: SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	plan := enginetest.ApplyThenNoChanges(t, ctx, n, func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &AbsentService{Name: "protokube.service"})
		return g
	})
	if len(plan.Changes) != 1 || len(plan.Changes[0].Fields) != 2 {
		t.Errorf("the plan: %+v, want AbsentService/protokube.service with Enabled and Installed true -> false", plan.Changes)
	}
	for _, gone := range []string{"etc/systemd/system/protokube.service", "var/lib/kubeup/systemd/protokube.service.inputs",
		"etc/systemd/system/multi-user.target.wants/protokube.service"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", gone, err)
		}
	}
	for _, kept := range []string{"etc/systemd/system/protokube.service.d/10-local.conf", "usr/lib/systemd/system/protokube.service",
		"etc/systemd/system/other.service", "etc/systemd/system/multi-user.target.wants/other.service"} {
		if _, err := os.Lstat(filepath.Join(root, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	enginetest.CheckDeps(t, &AbsentService{Name: "x.service", After: []engine.Task{&File{Path: "/y"}}})
}
