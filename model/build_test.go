package model_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

func TestBuildLocalCloudGraph(t *testing.T) {
	for _, controlPlanes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d control planes", controlPlanes), func(t *testing.T) {
			c, igs := model.CompleteSpec(t, model.CloudLocal, controlPlanes)
			if err := model.Validate("test", c, igs); err != nil {
				t.Fatal(err)
			}
			g, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(engine.Apply); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, fmt.Sprintf("testdata/build-cloud-local-%d.golden", controlPlanes), enginetest.TaskList(t, g.Tasks()))

			volumes := 0
			for _, task := range g.Tasks() {
				if task.Key().Type == "LocalVolume" {
					volumes++
				}
			}
			if want := 2 * controlPlanes; volumes != want {
				t.Errorf("%d volumes, want %d (main and events, one per member)", volumes, want)
			}
		})
	}
}

func TestBuildLocalCloudGraphRefusesOtherClouds(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudAWS, 1)
	if _, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{}); err == nil {
		t.Error("BuildLocalCloudGraph accepted an aws cluster")
	}
}

func TestEtcdVolumeTags(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudLocal, 3)
	e := c.Spec.EtcdClusters[1]
	got := model.EtcdVolumeTags(c.Metadata.Name, e, e.Members[1])
	want := map[string]string{
		"k8s.io/etcd/events":                     "b/a,b,c",
		"k8s.io/role/control-plane":              "1",
		"kubernetes.io/cluster/demo.example.com": "owned",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EtcdVolumeTags = %v, want %v", got, want)
	}
	if got := model.EtcdVolumeName(c.Metadata.Name, e, e.Members[1]); got != "b.etcd-events.demo.example.com" {
		t.Errorf("EtcdVolumeName = %q", got)
	}
}

func nodeGraph(t *testing.T, controlPlanes int, group string) (*model.NodeConfig, *engine.Graph[*nodetasks.Node]) {
	t.Helper()
	return cloudNodeGraph(t, model.CloudLocal, controlPlanes, group)
}

// cloudNodeGraph is nodeGraph of a cluster on cloud.
func cloudNodeGraph(t *testing.T, cloud string, controlPlanes int, group string) (*model.NodeConfig, *engine.Graph[*nodetasks.Node]) {
	t.Helper()
	c, igs := model.CompleteSpec(t, cloud, controlPlanes)
	ig := model.FindInstanceGroup(igs, group)
	if ig == nil {
		t.Fatalf("no instance group %s", group)
	}
	nc := model.NewNodeConfig(c, ig)
	g, err := nodegraph.BuildNodeGraph(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(engine.Apply); err != nil {
		t.Fatal(err)
	}
	return nc, g
}

func TestBuildNodeGraph(t *testing.T) {
	for _, tt := range []struct {
		controlPlanes int
		group         string
		manifests     int
		protokube     bool
	}{
		{1, "control-plane-a", 4, true},
		{1, "nodes", 1, true}, // a local cluster's worker keeps its routes to the pod ranges (model.NodeRunsProtokube)
		{3, "control-plane-b", 4, true},
		{3, "nodes", 1, true},
	} {
		t.Run(fmt.Sprintf("%d control planes %s", tt.controlPlanes, tt.group), func(t *testing.T) {
			_, g := nodeGraph(t, tt.controlPlanes, tt.group)
			golden.Assert(t, fmt.Sprintf("testdata/build-node-%d-%s.golden", tt.controlPlanes, tt.group), enginetest.TaskList(t, g.Tasks()))
			manifests := 0
			for _, task := range g.Tasks() {
				if task.Key().Type == "ManifestFile" {
					manifests++
				}
			}
			if manifests != tt.manifests {
				t.Errorf("%d manifests, want %d", manifests, tt.manifests)
			}
			if _, ok := g.Lookup(engine.Key{Type: "SystemdService", Name: "kubelet.service"}); !ok {
				t.Error("no kubelet.service")
			}
			if _, ok := g.Lookup(engine.Key{Type: "SystemdService", Name: "protokube.service"}); ok != tt.protokube {
				t.Errorf("protokube.service in the graph: %v, want %v", ok, tt.protokube)
			}
		})
	}
}

// TestNodeFiles pins what the node graph writes: the kube-apiserver manifest, kubelet's flags and unit, and the
// container runtime's configuration and unit on a control-plane node of the 3-control-plane cluster.
func TestNodeFiles(t *testing.T) {
	_, g := nodeGraph(t, 3, "control-plane-b")
	for _, tt := range []struct {
		key    engine.Key
		golden string
	}{
		{engine.Key{Type: "ManifestFile", Name: "/etc/kubernetes/manifests/kube-apiserver.manifest"}, "testdata/build-node-kube-apiserver.manifest.golden"},
		{engine.Key{Type: "ManifestFile", Name: "/etc/kubernetes/manifests/kube-proxy.manifest"}, "testdata/build-node-kube-proxy.manifest.golden"},
		{engine.Key{Type: "File", Name: model.KubeletEnvFile}, "testdata/build-node-kubelet.env.golden"},
		{engine.Key{Type: "SystemdService", Name: "kubelet.service"}, "testdata/build-node-kubelet.service.golden"},
		{engine.Key{Type: "File", Name: model.ContainerdConfigFile}, "testdata/build-node-containerd-config.toml.golden"},
		{engine.Key{Type: "File", Name: model.CNIConfigTemplate}, "testdata/build-node-cni-conf.template.golden"},
		{engine.Key{Type: "File", Name: model.CrictlConfig}, "testdata/build-node-crictl.yaml.golden"},
		{engine.Key{Type: "SystemdService", Name: model.ContainerdUnit}, "testdata/build-node-containerd.service.golden"},
	} {
		t.Run(tt.key.String(), func(t *testing.T) {
			task, ok := g.Lookup(tt.key)
			if !ok {
				t.Fatalf("no task %s", tt.key)
			}
			var got string
			switch task := task.(type) {
			case *nodetasks.ManifestFile:
				y, err := task.Pod.YAML()
				if err != nil {
					t.Fatal(err)
				}
				got = y
			case *nodetasks.File:
				got = *task.Contents
			case *nodetasks.SystemdService:
				got = *task.Definition
			}
			golden.Assert(t, tt.golden, []byte(got))
		})
	}
}

// TestNodeConfFile checks that the node configuration protokube reads is the one nodeup converged to, as
// Encode writes it, readable only by root, and that protokube's unit runs protokube with it.
func TestNodeConfFile(t *testing.T) {
	nc, g := nodeGraph(t, 3, "control-plane-b")
	task, ok := g.Lookup(engine.Key{Type: "File", Name: model.NodeConfFile})
	if !ok {
		t.Fatalf("no %s", model.NodeConfFile)
	}
	f := task.(*nodetasks.File)
	want, err := nc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if f.Contents != nil || f.SecretContents.Reveal() != string(want) || *f.Mode != 0o600 {
		t.Errorf("%s: mode %v, want mode 0600 and the encoded node configuration, as a secret (it carries keys)", model.NodeConfFile, *f.Mode)
	}
	back, err := model.DecodeNodeConfigObject(model.NodeConfFile, []byte(f.SecretContents.Reveal()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nc, back); diff != "" {
		t.Errorf("what protokube reads back (-nodeup's +protokube's):\n%s", diff)
	}
	svc, _ := g.Lookup(engine.Key{Type: "SystemdService", Name: "protokube.service"})
	if deps := svc.Deps(); len(deps) != 1 || deps[0] != task {
		t.Errorf("protokube.service depends on %v, want %s: it restarts when its configuration changes", deps, model.NodeConfFile)
	}
	if _, ok := g.Lookup(engine.Key{Type: "File", Name: "/etc/kubeup/protokube.yaml"}); ok {
		t.Error("the graph still writes protokube.yaml, which nothing reads")
	}
}

// running is the Running field of a graph's service, "nil" when the service is left as it runs.
func running(t *testing.T, tasks interface {
	Lookup(engine.Key) (engine.Task, bool)
}, unit string) string {
	t.Helper()
	task, ok := tasks.Lookup(engine.Key{Type: "SystemdService", Name: unit})
	if !ok {
		return "absent"
	}
	if r := task.(*nodetasks.SystemdService).Running; r != nil {
		return fmt.Sprint(*r)
	}
	return "nil"
}

// TestNodeGraphServices checks who starts which service: nodeup starts kubelet on a Node and protokube on the
// control plane and on a local cluster's Node (its pod routes: model.NodeRunsProtokube), not on an aws or gce
// cluster's Node (the cloud routes the pod ranges), and leaves kubelet on the control plane to protokube; every
// unit is enabled all the same.
func TestNodeGraphServices(t *testing.T) {
	for _, tt := range []struct {
		cloud, group       string
		kubelet, protokube string
	}{
		{model.CloudLocal, "control-plane-a", "nil", "true"},
		{model.CloudLocal, "nodes", "true", "true"},
		{model.CloudAWS, "nodes", "true", "absent"},
		{model.CloudGCE, "nodes", "true", "absent"},
	} {
		t.Run(tt.cloud+" "+tt.group, func(t *testing.T) {
			_, g := cloudNodeGraph(t, tt.cloud, 3, tt.group)
			if got := running(t, g, "kubelet.service"); got != tt.kubelet {
				t.Errorf("kubelet.service Running = %s, want %s", got, tt.kubelet)
			}
			if got := running(t, g, "protokube.service"); got != tt.protokube {
				t.Errorf("protokube.service Running = %s, want %s", got, tt.protokube)
			}
			for _, task := range g.Tasks() {
				if s, ok := task.(*nodetasks.SystemdService); ok && (s.Enabled == nil || !*s.Enabled) {
					t.Errorf("%s is not enabled", s.Name)
				}
			}
		})
	}
}

// world is a world made of parts, as a protokube round's: the node is one of them.
type world struct {
	node *nodetasks.Node
	// volumes, DNS, ... in protokube
}

func (w *world) Node() *nodetasks.Node { return w.node }

// TestAddNodeTasksInAWorldOfParts checks that a graph of a world made of parts (protokube's round) holds the
// same node tasks as nodeup's graph, with the services started as asked, and that one run of it converges the
// node in that world: the files are written, and a second run has nothing to do.
func TestAddNodeTasksInAWorldOfParts(t *testing.T) {
	nc, nodeupGraph := nodeGraph(t, 3, "control-plane-c")
	g := engine.NewGraph[*world]()
	if _, err := nodegraph.AddNodeTasks(g, (*world).Node, nc, nodegraph.NodeTasksOptions{StartKubelet: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(engine.Apply); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(enginetest.TaskList(t, nodeupGraph.Tasks())), string(enginetest.TaskList(t, g.Tasks()))); diff != "" {
		t.Errorf("the tasks differ from nodeup's (-nodeup +round):\n%s", diff)
	}
	if got := running(t, g, "kubelet.service"); got != "true" {
		t.Errorf("StartKubelet: kubelet.service Running = %s, want true", got)
	}
	if got := running(t, g, "protokube.service"); got != "nil" {
		t.Errorf("not StartProtokube: protokube.service Running = %s, want nil (protokube never restarts itself)", got)
	}

	ctx := context.Background()
	root := t.TempDir()
	node, err := nodetasks.NewNode(ctx, root, nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{node: node}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := engine.Run(ctx, g, w, engine.Options{Target: engine.Apply, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{model.KubeletEnvFile, model.NodeConfFile, "/etc/systemd/system/kubelet.service", model.EtcdManifestPath(nc, "main")} {
		_, err := os.Stat(filepath.Join(root, f))
		switch {
		case f == model.EtcdManifestPath(nc, "main") && err == nil:
			t.Errorf("%s: the node tasks wrote etcd's manifest: that is protokube's, once it holds a volume", f)
		case f != model.EtcdManifestPath(nc, "main") && err != nil:
			t.Errorf("the round did not write %s: %v", f, err)
		}
	}
	res, err := engine.Run(ctx, g, w, engine.Options{Target: engine.DryRun, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("a second round would change %+v", res.Plan.Changes)
	}
}

func TestKubeletFlagsUserWins(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.Kubelet.RegisterWithTaints = []string{"dedicated=etcd:NoSchedule"}
	c.Spec.Kubelet.NodeLabels = map[string]string{"kubeup.dev/instancegroup": "mine"}
	flags := strings.Join(model.KubeletFlags(c.Spec.Kubelet, model.FindInstanceGroup(igs, "control-plane-a")), " ")
	for _, want := range []string{"--register-with-taints=dedicated=etcd:NoSchedule", "kubeup.dev/instancegroup=mine"} {
		if !strings.Contains(flags, want) {
			t.Errorf("kubelet flags lack %q: %s", want, flags)
		}
	}
	if strings.Contains(flags, ":NoSchedule,") || strings.Contains(flags, "control-plane=:NoSchedule") {
		t.Errorf("the default taint was added over the user's: %s", flags)
	}
}

// TestKubeAPIServerProbeIsAnonymous checks that kube-apiserver's liveness probe, which kubelet sends without
// credentials, is there only when kube-apiserver answers anonymous requests: otherwise every probe gets 401 and
// kubelet restarts kube-apiserver forever.
func TestKubeAPIServerProbeIsAnonymous(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudLocal, 1)
	if a := c.Spec.KubeAPIServer; a.AnonymousAuth == nil || !*a.AnonymousAuth || nodegraph.KubeAPIServerPod(a).Spec.Containers[0].LivenessProbe == nil {
		t.Errorf("by default, kube-apiserver should allow anonymous requests and have a liveness probe: anonymousAuth %v", a.AnonymousAuth)
	}
	c.Spec.KubeAPIServer.AnonymousAuth = model.Ptr(false)
	if p := nodegraph.KubeAPIServerPod(c.Spec.KubeAPIServer).Spec.Containers[0].LivenessProbe; p != nil {
		t.Errorf("anonymousAuth false: the anonymous liveness probe %+v would always get 401", p.HTTPGet)
	}
}

// TestKubeletLabelsAllowed checks that kubelet's --node-labels hold only labels kubelet accepts: it refuses to
// start with node-role.kubernetes.io/control-plane and other kubernetes.io labels outside its allowed set.
func TestKubeletLabelsAllowed(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	for _, ig := range igs {
		for _, f := range model.KubeletFlags(c.Spec.Kubelet, ig) {
			labels, ok := strings.CutPrefix(f, "--node-labels=")
			if !ok {
				continue
			}
			for _, l := range strings.Split(labels, ",") {
				if key, _, _ := strings.Cut(l, "="); !model.KubeletLabelAllowed(key) {
					t.Errorf("%s: kubelet would refuse to start with --node-labels %s", ig.Metadata.Name, key)
				}
			}
		}
	}
}

func TestNodeConfigRoundTrip(t *testing.T) {
	nc, _ := nodeGraph(t, 3, "control-plane-a")
	data, sum, err := nc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data2, sum2, _ := nc.Marshal()
	if string(data) != string(data2) || sum != sum2 {
		t.Error("Marshal is not byte-stable")
	}
	got, err := model.DecodeNodeConfig("conf", data, sum+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if back, _, _ := got.Marshal(); string(back) != string(data) {
		t.Error("decode then marshal changed the configuration")
	}
	if got.Protokube == nil || len(got.Protokube.EtcdClusters) != 2 || len(got.Protokube.EtcdClusters[0].Members) != 3 {
		t.Errorf("protokube's configuration: %+v", got.Protokube)
	}

	changed := []byte(strings.Replace(string(data), "logLevel: 2", "logLevel: 3", 1))
	if _, err := model.DecodeNodeConfig("conf", changed, sum); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a changed byte: %v, want a sha256 error", err)
	}
	unknown := []byte(strings.Replace(string(data), "kind: NodeConfig", "kind: NodeConfig\ncolour: red", 1))
	if _, err := model.DecodeNodeConfig("conf", unknown, sha(unknown)); err == nil || !strings.Contains(err.Error(), "colour: unknown field") {
		t.Errorf("an unknown field: %v", err)
	}
	if _, err := model.DecodeNodeConfig("conf", []byte("a: [\n"), sha([]byte("a: [\n"))); err == nil || !strings.Contains(err.Error(), "malformed YAML") {
		t.Errorf("malformed YAML: %v", err)
	}
}

func sha(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// TestLeaveNodeConf: protokube's round leaves /etc/kubeup/node.conf to nodeup (LeaveNodeConf), whose graph
// writes it; every other task is the same.
func TestLeaveNodeConf(t *testing.T) {
	nc, nodeupGraph := nodeGraph(t, 3, "control-plane-a")
	g := engine.NewGraph[*world]()
	if _, err := nodegraph.AddNodeTasks(g, (*world).Node, nc, nodegraph.NodeTasksOptions{StartKubelet: true, LeaveNodeConf: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(engine.Apply); err != nil {
		t.Fatal(err)
	}
	confKey := engine.Key{Type: "File", Name: model.NodeConfFile}
	var want, got []engine.Key
	for _, task := range nodeupGraph.Tasks() {
		if task.Key() != confKey {
			want = append(want, task.Key())
		}
	}
	for _, task := range g.Tasks() {
		got = append(got, task.Key())
	}
	if len(want) != len(nodeupGraph.Tasks())-1 {
		t.Fatalf("nodeup's graph has no task %s", confKey)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the round's tasks, against nodeup's without %s (-want +got):\n%s", confKey, diff)
	}
}
