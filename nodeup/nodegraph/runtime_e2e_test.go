//go:build e2e

package nodegraph

import (
	"context"
	"encoding/json"
	"kubeup.dev/kubeup/model"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestNodeRuntimeE2E has the real containerd (2.4, `make runtime-binaries`) read the configuration the node graph
// writes, and the node graph import the pause image (`make images`) into it: a node root with the runtime where
// the assets put it, the runtime's tasks applied there (nodeup without systemd: the unit is a file), containerd
// started from that root as its unit starts it, then the import, a real engine run; crictl lists the image,
// pinned as the sandbox image, and a second run changes nothing.
func TestNodeRuntimeE2E(t *testing.T) {
	bin := e2e.RuntimeBin(t)
	var pause, hello e2e.Image
	for _, img := range e2e.Images(t) {
		switch img.Ref {
		case e2e.PauseImage:
			pause = img
		case e2e.HelloImage:
			hello = img
		}
	}
	if pause.Archive == "" || hello.Archive == "" {
		e2e.CannotRun(t, "(e2e) `make images` wrote no %s or no %s", e2e.PauseImage, e2e.HelloImage)
	}
	e2e.RequireRoot(t)
	ctx := context.Background()

	c, _ := completeSpec(t, model.CloudLocal, 1)
	s := &c.Spec
	if !e2e.SystemdBooted() {
		s.Kubelet.CgroupDriver = "cgroupfs" // the rule of docs/cluster-spec.md: no systemd, no systemd driver
	}
	s.Containerd.RestrictOOMScoreAdj = ptr(true) // this machine's containers cannot lower their oom_score_adj
	if s.Containerd.SandboxImage != e2e.PauseImage {
		t.Fatalf("the default sandbox image %s is not the one `make images` builds (%s)", s.Containerd.SandboxImage, e2e.PauseImage)
	}

	root, err := os.MkdirTemp("", "kubeup-node-") // short: containerd's socket address is below it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) }) // runs after containerd's stop, registered later
	e2e.InstallRuntime(t, bin, root)
	archive, helloArchive := "/var/lib/kubeup/images/pause.tar", "/var/lib/kubeup/images/hello.tar"
	for node, host := range map[string]string{archive: pause.Archive, helloArchive: hello.Archive} {
		b, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		e2e.WriteFile(t, filepath.Join(root, node), string(b))
	}

	n, err := nodetasks.NewNode(ctx, root, nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	build := func(a RuntimeAssets) func() *engine.Graph[*nodetasks.Node] {
		return func() *engine.Graph[*nodetasks.Node] {
			g := engine.NewGraph[*nodetasks.Node]()
			if _, err := addRuntimeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, s, a); err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	enginetest.ApplyThenNoChanges(t, ctx, n, build(RuntimeAssets{}))

	// containerd reads every setting as written: `config dump` prints what it parsed (a misspelt key would show
	// containerd's default instead).
	dump := e2e.MustRun(t, filepath.Join(bin, "containerd"), "--config", filepath.Join(root, model.ContainerdConfigFile), "config", "dump")
	systemdCgroup := "SystemdCgroup = false"
	if s.Kubelet.CgroupDriver == "systemd" {
		systemdCgroup = "SystemdCgroup = true"
	}
	for _, want := range []string{
		systemdCgroup,
		"restrict_oom_score_adj = true",
		"BinaryName = '" + model.RuncBinary + "'",
		"sandbox = '" + e2e.PauseImage + "'",
		"bin_dirs = ['" + model.CNIBinDir + "']",
		"conf_dir = '" + model.CNIConfDir + "'",
		"conf_template = '" + model.CNIConfigTemplate + "'",
		"address = '" + e2e.NodeContainerdSocket + "'",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("containerd config dump lacks %q:\n%s", want, dump)
		}
	}

	p := e2e.StartNodeContainerd(t, bin, root)
	images := RuntimeAssets{Images: []RuntimeImage{{Name: e2e.PauseImage, Archive: archive}, {Name: e2e.HelloImage, Archive: helloArchive}}}
	applied := enginetest.ApplyThenNoChanges(t, ctx, n, build(images))
	var keys []engine.Key
	for _, c := range applied.Changes {
		keys = append(keys, c.Key)
	}
	if want := []engine.Key{{Type: "ImageImport", Name: e2e.HelloImage}, {Type: "ImageImport", Name: e2e.PauseImage}}; !slices.Equal(keys, want) {
		t.Errorf("the run with containerd up changed %v, want the imports of %v alone", keys, want)
	}

	endpoint := "unix://" + filepath.Join(root, e2e.NodeContainerdSocket)
	crictl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		// crictl reads the configuration nodeup wrote (its endpoints are the node's path: the flags give the host's).
		out, err := e2e.Run(ctx, filepath.Join(bin, "crictl"), append([]string{"--config", filepath.Join(root, model.CrictlConfig),
			"--runtime-endpoint", endpoint, "--image-endpoint", endpoint}, args...)...)
		if err != nil {
			t.Fatalf("crictl %v: %v\ncontainerd's log:\n%s", args, err, e2e.Tail(p.Log, 30))
		}
		return out
	}
	ref, tag, _ := strings.Cut(e2e.PauseImage, ":")
	listed := e2e.WaitFor(t, time.Minute, "crictl images to list "+e2e.PauseImage, func() (string, bool) {
		out := crictl("images")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == ref && f[1] == tag {
				return out, true
			}
		}
		return out, false
	})
	t.Logf("crictl images:\n%s", listed)
	// The sandbox image is pinned by containerd; every other preloaded image by nodeup's label.
	for _, img := range []string{e2e.PauseImage, e2e.HelloImage} {
		var inspect struct {
			Status struct {
				Pinned bool `json:"pinned"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(crictl("inspecti", "-o", "json", img)), &inspect); err != nil {
			t.Fatal(err)
		}
		if !inspect.Status.Pinned {
			t.Errorf("%s is not pinned: kubelet's image garbage collection could remove it, and the node may reach no registry", img)
		}
	}
}
