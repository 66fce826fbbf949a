package model_test

import (
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// kubeletArgv reads what kubelet.service of a node graph would start kubelet with, as systemd does: the unit's
// EnvironmentFile= and ExecStart=, and the environment file. It fails the test when the environment file sets
// anything but DAEMON_ARGS.
func kubeletArgv(t *testing.T, g *engine.Graph[*nodetasks.Node]) []string {
	t.Helper()
	task, ok := g.Lookup(engine.Key{Type: "SystemdService", Name: "kubelet.service"})
	if !ok {
		t.Fatal("no kubelet.service")
	}
	unit := *task.(*nodetasks.SystemdService).Definition
	if got := model.UnitDirective(unit, "EnvironmentFile"); !cmp.Equal(got, []string{model.KubeletEnvFile}) {
		t.Fatalf("kubelet.service's EnvironmentFile= is %q, want %s", got, model.KubeletEnvFile)
	}
	execs := model.UnitDirective(unit, "ExecStart")
	if len(execs) != 1 {
		t.Fatalf("kubelet.service has %d ExecStart= lines", len(execs))
	}
	words, err := model.ParseCommandLine(execs[0])
	if err != nil {
		t.Fatal(err)
	}
	envTask, ok := g.Lookup(engine.Key{Type: "File", Name: model.KubeletEnvFile})
	if !ok {
		t.Fatalf("no %s", model.KubeletEnvFile)
	}
	vars, err := model.ParseEnvFile(*envTask.(*nodetasks.File).Contents)
	if err != nil {
		t.Fatalf("%s: %v", model.KubeletEnvFile, err)
	}
	if len(vars) != 1 || vars[0].Name != "DAEMON_ARGS" {
		t.Fatalf("%s sets %q, want DAEMON_ARGS only:\n%s", model.KubeletEnvFile, vars, *envTask.(*nodetasks.File).Contents)
	}
	return model.ExpandCommandLine(t, words, map[string]string{"DAEMON_ARGS": vars[0].Value})
}

// TestKubeletGetsExactlyItsFlags feeds hostile values into every field that reaches kubelet's command line,
// bypassing validation, straight into the node builder: it either refuses, naming the flag, or kubelet gets
// exactly the flags of the spec, one argument each, and /etc/default/kubelet sets DAEMON_ARGS and nothing else.
func TestKubeletGetsExactlyItsFlags(t *testing.T) {
	for _, f := range model.KubeletFields {
		for _, v := range model.HostileValues {
			t.Run(f.Name+"/"+strconv.Quote(v), func(t *testing.T) {
				c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
				f.Set(c, v)
				ig := model.FindInstanceGroup(igs, "control-plane-a")
				nc := model.NewNodeConfig(c, ig)
				g, err := nodegraph.BuildNodeGraph(nc)
				if err != nil {
					if !strings.Contains(err.Error(), "--"+f.Flag) {
						t.Errorf("BuildNodeGraph refused, but its error does not name --%s: %v", f.Flag, err)
					}
					return
				}
				want := append([]string{model.KubeletBinary}, model.KubeletFlags(nc.Cluster.Spec.Kubelet, nc.InstanceGroup)...)
				if diff := cmp.Diff(want, kubeletArgv(t, g)); diff != "" {
					t.Errorf("kubelet's command line (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestKubeletGetsAnInstanceGroupsNameExactly does the same with the instance group's name, which is a node label.
func TestKubeletGetsAnInstanceGroupsNameExactly(t *testing.T) {
	for _, v := range model.HostileValues {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
			ig := model.FindInstanceGroup(igs, "nodes")
			ig.Metadata.Name = "nodes" + v
			nc := model.NewNodeConfig(c, ig)
			g, err := nodegraph.BuildNodeGraph(nc)
			if err != nil {
				if !strings.Contains(err.Error(), "--node-labels") && !strings.Contains(err.Error(), "metadata.name") {
					t.Errorf("BuildNodeGraph refused, but its error names neither --node-labels nor metadata.name: %v", err)
				}
				return
			}
			want := append([]string{model.KubeletBinary}, model.KubeletFlags(nc.Cluster.Spec.Kubelet, nc.InstanceGroup)...)
			if diff := cmp.Diff(want, kubeletArgv(t, g)); diff != "" {
				t.Errorf("kubelet's command line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeletArgvOfTheDefaults checks the reader on the flags of a normal spec: kubelet gets every flag.
func TestKubeletArgvOfTheDefaults(t *testing.T) {
	nc, g := nodeGraph(t, 3, "control-plane-b")
	want := append([]string{model.KubeletBinary}, model.KubeletFlags(nc.Cluster.Spec.Kubelet, nc.InstanceGroup)...)
	if diff := cmp.Diff(want, kubeletArgv(t, g)); diff != "" {
		t.Errorf("kubelet's command line (-want +got):\n%s", diff)
	}
	if len(want) < 10 {
		t.Errorf("only %d flags: %q", len(want), want)
	}
}

// TestBuildNodeGraphRefusesAnUnknownRole checks that a node configuration of another role than ControlPlane or
// Node is refused: it would be built as a node without the control plane's taint.
func TestBuildNodeGraphRefusesAnUnknownRole(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	ig := model.FindInstanceGroup(igs, "control-plane-a")
	ig.Spec.Role = "Bogus"
	_, err := nodegraph.BuildNodeGraph(model.NewNodeConfig(c, ig))
	if err == nil || !strings.Contains(err.Error(), `spec.role "Bogus" is not a role: want ControlPlane or Node`) {
		t.Errorf("BuildNodeGraph with role Bogus: %v", err)
	}
}

// TestProtokubeUnitReadsBack checks protokube.service's command line as systemd reads it.
func TestProtokubeUnitReadsBack(t *testing.T) {
	_, g := nodeGraph(t, 1, "control-plane-a")
	task, ok := g.Lookup(engine.Key{Type: "SystemdService", Name: "protokube.service"})
	if !ok {
		t.Fatal("no protokube.service")
	}
	execs := model.UnitDirective(*task.(*nodetasks.SystemdService).Definition, "ExecStart")
	if len(execs) != 1 {
		t.Fatalf("%d ExecStart= lines", len(execs))
	}
	words, err := model.ParseCommandLine(execs[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{model.ProtokubeBinary, "--conf=" + model.NodeConfFile}, model.ExpandCommandLine(t, words, nil)); diff != "" {
		t.Errorf("protokube's command line (-want +got):\n%s", diff)
	}
	// protokube refuses another role's configuration with its own status: systemd must not restart it in a loop.
	if got := model.UnitDirective(*task.(*nodetasks.SystemdService).Definition, "RestartPreventExitStatus"); !slices.Equal(got, []string{strconv.Itoa(model.ProtokubeExitNotControlPlane)}) {
		t.Errorf("RestartPreventExitStatus= %q, want [%d]", got, model.ProtokubeExitNotControlPlane)
	}
}

// TestValidKubeletValuesReachKubelet checks that what validation accepts, the node builder passes on: a spec
// with values of every kind kubelet's fields take is valid, and kubelet gets exactly its flags.
func TestValidKubeletValuesReachKubelet(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	k := c.Spec.Kubelet
	k.NodeLabels = map[string]string{"example.com/team": "a.b_c-D9", "plain": "", "node.kubernetes.io/pool": "A1",
		strings.Repeat("a", 63) + ".example.com/" + strings.Repeat("n", 63): strings.Repeat("v", 63)}
	k.RegisterWithTaints = []string{"dedicated=etcd:NoSchedule", "example.com/gpu:NoExecute", "x=:PreferNoSchedule"}
	k.FeatureGates = map[string]string{"AllAlpha": "false", "InPlacePodVerticalScaling": "true", "Foo": "1", "Bar": "F"}
	k.ClusterDNS = "fd00::a"
	c.Spec.Addons.CoreDNS.Enabled = model.Ptr(false) // no Service of the IPv4 range can take an IPv6 address
	k.ClusterDomain = "k8s-1.example.internal"
	k.CgroupDriver, k.AuthorizationMode = "cgroupfs", "AlwaysAllow"
	k.Kubeconfig = "/var/lib/kubelet/kube_config+1@x-2"
	k.PodManifestPath = "/etc/kubernetes/manifests.d"
	k.ContainerRuntimeEndpoint = "unix:///var/run/crio/crio.sock"
	k.FailSwapOn = model.Ptr(false)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	for _, ig := range igs {
		nc := model.NewNodeConfig(c, ig)
		g, err := nodegraph.BuildNodeGraph(nc)
		if err != nil {
			t.Fatalf("%s: %v", ig.Metadata.Name, err)
		}
		want := append([]string{model.KubeletBinary}, model.KubeletFlags(nc.Cluster.Spec.Kubelet, nc.InstanceGroup)...)
		if diff := cmp.Diff(want, kubeletArgv(t, g)); diff != "" {
			t.Errorf("%s: kubelet's command line (-want +got):\n%s", ig.Metadata.Name, diff)
		}
	}
}
