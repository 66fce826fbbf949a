package model_test

import (
	"context"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

var testSHA = strings.Repeat("ab", 32)

func TestCompleteAssets(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudLocal, 1)
	a := c.Spec.Assets
	if got, want := a.Kubelet.URL, "https://dl.k8s.io/release/v1.34.2/bin/linux/amd64/kubelet"; got != want {
		t.Errorf("kubelet url %q, want %q", got, want)
	}
	if a.Images[model.ImagePause].URL != "" || a.Images[model.ImagePause].Image != model.PauseImage {
		t.Errorf("pause without fileRepository: %+v; want no URL (upstream publishes no archive) and image %s", a.Images[model.ImagePause], model.PauseImage)
	}
	if a.Kubelet.SHA256 != "" {
		t.Errorf("a default sha256 %q: kubeup cannot know one", a.Kubelet.SHA256)
	}

	user, igs := model.UserSpec(t, model.CloudLocal, 1)
	user.Spec.Assets = &model.AssetsSpec{FileRepository: "s3://mirror/kubeup/", Runc: &model.AssetSpec{URL: "https://elsewhere/runc", SHA256: testSHA}}
	c, _ = model.Complete(user, igs)
	a = c.Spec.Assets
	for got, want := range map[string]string{
		a.Kubelet.URL:                  "s3://mirror/kubeup/kubernetes/v1.34.2/bin/linux/amd64/kubelet",
		a.Containerd.URL:               "s3://mirror/kubeup/containerd/v2.4.2/containerd-2.4.2-linux-amd64.tar.gz",
		a.Images["kube-apiserver"].URL: "s3://mirror/kubeup/images/kube-apiserver/v1.34.2/kube-apiserver.tar",
		a.Images[model.ImageEtcd].URL:  "s3://mirror/kubeup/images/etcd/3.5.21-0/etcd.tar",
		a.Runc.URL:                     "https://elsewhere/runc",
	} {
		if got != want {
			t.Errorf("url %q, want %q", got, want)
		}
	}
	if again, _ := model.Complete(c, igs); !cmp.Equal(again, c) {
		t.Errorf("completing again changes the spec: %s", cmp.Diff(c, again))
	}
}

func TestValidateAssets(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	a := c.Spec.Assets
	a.FileRepository = "ftp://mirror/x"
	a.Kubelet.SHA256 = "ABC"
	a.Crictl.URL = ""
	a.Crictl.SHA256 = testSHA
	a.Images["hello"] = &model.ImageAssetSpec{Image: "x"}
	a.Images["kube-proxy"].SHA256 = testSHA
	a.Images["kube-proxy"].URL = "file:///srv/mirror/kube-proxy.tar"
	a.Images["kube-proxy"].Image = "registry.k8s.io/kube-proxy:v1.33.0"
	var paths []string
	for _, p := range model.ProblemsOf(t, model.Validate("test", c, igs)) {
		paths = append(paths, p.Path)
	}
	want := []string{"spec.assets.crictl.url", "spec.assets.fileRepository", "spec.assets.images.hello", "spec.assets.kubelet.sha256"}
	slices.Sort(paths)
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestAssetWarnings(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.ConfigBase = "file:///var/lib/kubeup/state/" + c.Metadata.Name
	c.Spec.Assets.Kubelet.SHA256 = testSHA
	c.Spec.Assets.Kubelet.URL = c.Spec.ConfigBase + "/assets/kubernetes/v1.33.0/bin/linux/amd64/kubelet" // mirrored for another version
	c.Spec.Assets.Images["kube-proxy"] = &model.ImageAssetSpec{Image: "registry.k8s.io/kube-proxy:v1.33.0", URL: "file:///m/kube-proxy.tar", SHA256: testSHA}
	ps := model.AssetWarnings(c)
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
		if !strings.Contains(p.Message, "kubeup assets mirror "+c.Metadata.Name+" --yes") && !strings.Contains(p.Message, "the manifests name") {
			t.Errorf("%s: the message does not name the fix: %s", p.Path, p.Message)
		}
	}
	want := []string{"spec.assets.kubelet.url", "spec.assets.containerd.sha256", "spec.assets.runc.sha256", "spec.assets.cniPlugins.sha256", "spec.assets.crictl.sha256",
		"spec.assets.protokube.sha256", "spec.assets.images.coredns.sha256", "spec.assets.images.etcd.sha256", "spec.assets.images.kube-apiserver.sha256",
		"spec.assets.images.kube-controller-manager.sha256", "spec.assets.images.kube-proxy.image", "spec.assets.images.kube-scheduler.sha256",
		"spec.assets.images.pause.sha256"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("assets without a sha256 (-want +got):\n%s", diff)
	}
}

// TestNodeConfigAssets: a node configuration carries the assets with a sha256 only, and those of its role; none
// at all when nothing has one (the configurations written before spec.assets existed).
func TestNodeConfigAssets(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	var cp, node *model.InstanceGroup
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleControlPlane {
			cp = ig
		} else {
			node = ig
		}
	}
	if got := model.NewNodeConfig(c, node).Cluster.Spec.Assets; got != nil {
		t.Errorf("nothing mirrored: the node configuration carries assets %+v", got)
	}
	a := c.Spec.Assets
	a.Kubelet.SHA256, a.Protokube.SHA256 = testSHA, testSHA
	a.Images[model.ImagePause].URL, a.Images[model.ImagePause].SHA256 = "file:///m/pause.tar", testSHA
	a.Images[model.ImageEtcd].URL, a.Images[model.ImageEtcd].SHA256 = "file:///m/etcd.tar", testSHA

	worker := model.NewNodeConfig(c, node)
	// A local cluster's worker runs protokube (its pod routes: model.NodeRunsProtokube), not the control plane's images.
	want := &model.AssetsSpec{Kubelet: &model.AssetSpec{URL: a.Kubelet.URL, SHA256: testSHA}, Protokube: &model.AssetSpec{URL: a.Protokube.URL, SHA256: testSHA},
		Images: map[string]*model.ImageAssetSpec{model.ImagePause: {Image: model.PauseImage, URL: "file:///m/pause.tar", SHA256: testSHA}}}
	if diff := cmp.Diff(want, worker.Cluster.Spec.Assets); diff != "" {
		t.Errorf("worker's assets (-want +got):\n%s", diff)
	}
	// On aws the cloud routes the pod ranges: a worker runs no protokube, and gets none.
	for _, cloud := range []string{model.CloudAWS, model.CloudGCE} {
		ac, aigs := model.CompleteSpec(t, cloud, 1)
		ac.Spec.Assets.Kubelet.SHA256, ac.Spec.Assets.Protokube.SHA256 = testSHA, testSHA
		for _, ig := range aigs {
			if got := model.NewNodeConfig(ac, ig).Cluster.Spec.Assets; (got.Protokube != nil) != (ig.Spec.Role == model.RoleControlPlane) {
				t.Errorf("%s, %s: protokube asset %+v, want it on the control plane only", cloud, ig.Metadata.Name, got.Protokube)
			}
		}
	}
	if diff := cmp.Diff([]model.PreloadImage{{Name: model.PauseImage, Archive: "/var/lib/kubeup/images/pause.tar"}}, model.PreloadImages(worker)); diff != "" {
		t.Errorf("worker's preloaded images (-want +got):\n%s", diff)
	}
	// An archive mirrored for another image than the manifests name is not carried: no pod runs its image.
	stale := *c
	stale.Spec.KubernetesVersion = "1.34.3"
	stale.Spec.KubeProxy = new(*c.Spec.KubeProxy)
	stale.Spec.KubeProxy.Image = "registry.k8s.io/kube-proxy:v1.34.3"
	a.Images["kube-proxy"].URL, a.Images["kube-proxy"].SHA256 = "file:///m/kube-proxy.tar", testSHA
	if got := model.NewNodeConfig(&stale, node).Cluster.Spec.Assets.Images["kube-proxy"]; got != nil {
		t.Errorf("kube-proxy's archive of %s is carried for manifests that name %s", got.Image, stale.Spec.KubeProxy.Image)
	}
	a.Images["kube-proxy"].URL, a.Images["kube-proxy"].SHA256 = "", ""
	control := model.NewNodeConfig(c, cp)
	if control.Cluster.Spec.Assets.Protokube == nil || control.Cluster.Spec.Assets.Images[model.ImageEtcd] == nil {
		t.Errorf("control plane's assets lack protokube or etcd: %+v", control.Cluster.Spec.Assets)
	}
	if err := model.ValidateInstanceGroup("test", control.Cluster, control.InstanceGroup); err != nil {
		t.Errorf("the control plane's configuration is not valid: %v", err)
	}

	// kubelet.service restarts when kubelet's binary changes; protokube.service with protokube's.
	g, err := nodegraph.BuildNodeGraph(control)
	if err != nil {
		t.Fatal(err)
	}
	for unit, asset := range map[string]engine.Key{
		"kubelet.service":   {Type: "Asset", Name: model.KubeletBinary},
		"protokube.service": {Type: "Asset", Name: model.ProtokubeBinary},
	} {
		svc, ok := g.Lookup(engine.Key{Type: "SystemdService", Name: unit})
		if !ok {
			t.Fatalf("no %s", unit)
		}
		if !slices.ContainsFunc(svc.(*nodetasks.SystemdService).DependsOn, func(d engine.Task) bool { return d.Key() == asset }) {
			t.Errorf("%s does not depend on %s", unit, asset)
		}
	}
}

// TestLeaveAssets: protokube's rounds (LeaveAssets) neither check nor install the assets, yet its services depend
// on them as nodeup's do; nodeup's graph installs them.
func TestLeaveAssets(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.Assets.Kubelet.URL, c.Spec.Assets.Kubelet.SHA256 = "http://unreachable.invalid/kubelet", testSHA
	c.Spec.Assets.Containerd.URL, c.Spec.Assets.Containerd.SHA256 = "http://unreachable.invalid/c.tar.gz", testSHA
	var cp *model.InstanceGroup
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleControlPlane {
			cp = ig
		}
	}
	nc := model.NewNodeConfig(c, cp)
	for _, leave := range []bool{false, true} {
		n, err := nodetasks.NewNode(context.Background(), t.TempDir(), nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		g := engine.NewGraph[*nodetasks.Node]()
		if _, err := nodegraph.AddNodeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, nc, nodegraph.NodeTasksOptions{LeaveAssets: leave, LeaveNodeConf: true}); err != nil {
			t.Fatal(err)
		}
		res, err := engine.Run(context.Background(), g, n, engine.Options{Target: engine.DryRun})
		if err != nil {
			t.Fatal(err)
		}
		var assets []string
		for _, ch := range res.Plan.Changes {
			if ch.Key.Type == "Asset" || ch.Key.Type == "Archive" {
				assets = append(assets, ch.Key.String())
			}
		}
		want := []string{"Archive/containerd", "Asset//usr/local/bin/kubelet"}
		if leave {
			want = nil
		}
		slices.Sort(assets)
		if diff := cmp.Diff(want, assets); diff != "" {
			t.Errorf("LeaveAssets %v: the assets in the plan (-want +got):\n%s", leave, diff)
		}
	}
}

// TestMirroredAssetsReachTheRuntime: a node's graph imports each image it preloads once the Asset task of its
// archive has installed it, and containerd.service restarts when the archive of containerd's binaries or runc
// changes (found when h/assets and h/runtime met: AddNodeTasks passed the runtime no assets).
func TestMirroredAssetsReachTheRuntime(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	a := c.Spec.Assets
	a.Containerd.SHA256, a.Runc.SHA256 = testSHA, testSHA
	a.Images[model.ImagePause].URL, a.Images[model.ImagePause].SHA256 = "file:///m/pause.tar", testSHA
	var node *model.InstanceGroup
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleNode {
			node = ig
		}
	}
	g := engine.NewGraph[*nodetasks.Node]()
	if _, err := nodegraph.AddNodeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, model.NewNodeConfig(c, node), nodegraph.NodeTasksOptions{}); err != nil {
		t.Fatal(err)
	}
	deps := func(k engine.Key) map[engine.Key]bool {
		task, ok := g.Lookup(k)
		if !ok {
			t.Fatalf("no task %s", k)
		}
		out := map[engine.Key]bool{}
		for _, d := range task.Deps() {
			out[d.Key()] = true
		}
		if s, ok := task.(*nodetasks.SystemdService); ok {
			for _, d := range s.DependsOn {
				out[d.Key()] = true
			}
		}
		return out
	}
	imp := deps(engine.Key{Type: "ImageImport", Name: model.PauseImage})
	if !imp[engine.Key{Type: "Asset", Name: "/var/lib/kubeup/images/pause.tar"}] {
		t.Errorf("the pause image's import does not come after its archive's Asset: %v", imp)
	}
	svc := deps(engine.Key{Type: "SystemdService", Name: model.ContainerdUnit})
	for _, k := range []engine.Key{nodegraph.ContainerdArchiveKey, nodegraph.RuncAssetKey} {
		if !svc[k] {
			t.Errorf("containerd.service does not depend on %s: %v", k, svc)
		}
	}
}
