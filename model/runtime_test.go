package model

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"text/template"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestContainerdFollowsKubelet checks that containerd's configuration and crictl's take from the spec what
// kubelet's flags do: the cgroup driver and the socket, and spec.containerd's settings.
func TestContainerdFollowsKubelet(t *testing.T) {
	c, _ := completeSpec(t, CloudLocal, 1)
	s := &c.Spec
	s.Kubelet.CgroupDriver = "cgroupfs"
	s.Kubelet.ContainerRuntimeEndpoint = "unix:///run/kubeup/cri.sock"
	s.Containerd = &ContainerdSpec{SandboxImage: "mirror.example.com/pause:3.10.2", RestrictOOMScoreAdj: ptr(true)}
	config, err := ContainerdConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n  SystemdCgroup = false\n",
		"\n  restrict_oom_score_adj = true\n",
		"\n[grpc]\n  address = \"/run/kubeup/cri.sock\"\n",
		"\n  sandbox = \"mirror.example.com/pause:3.10.2\"\n",
	} {
		if !strings.Contains(config, want) {
			t.Errorf("config.toml lacks %q:\n%s", want, config)
		}
	}
	crictl, err := crictlConfigText(s.Kubelet.ContainerRuntimeEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(crictl, "runtime-endpoint: \"unix:///run/kubeup/cri.sock\"\n") {
		t.Errorf("crictl.yaml does not name kubelet's endpoint:\n%s", crictl)
	}

	s.Kubelet.CgroupDriver = "systemd"
	if config, err = ContainerdConfig(s); err != nil || !strings.Contains(config, "\n  SystemdCgroup = true\n") {
		t.Errorf("cgroupDriver systemd: %v\n%s", err, config)
	}
	s.Kubelet.CgroupDriver = "cgroup"
	if _, err := ContainerdConfig(s); err == nil || !strings.Contains(err.Error(), "--cgroup-driver") {
		t.Errorf("cgroupDriver cgroup: error %v, want one naming --cgroup-driver", err)
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{
		"/run/containerd/containerd.sock": `"/run/containerd/containerd.sock"`,
		`a"b\c`:                           `"a\"b\\c"`,
		"a\nb = 1\x7f":                    `"a\u000Ab = 1\u007F"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCNITemplate renders the CNI template as containerd does (text/template, with the node's pod CIDRs and
// their routes) and checks that the result is the bridge network of those ranges.
func TestCNITemplate(t *testing.T) {
	tmpl, err := template.New("cni").Parse(cniTemplateText)
	if err != nil {
		t.Fatal(err)
	}
	for _, ranges := range [][]string{{"100.96.1.0/24"}, {"100.96.1.0/24", "fd00:1::/64"}} {
		var routes []string
		for _, r := range ranges {
			if strings.Contains(r, ":") {
				routes = append(routes, "::/0")
			} else {
				routes = append(routes, "0.0.0.0/0")
			}
		}
		var b strings.Builder
		data := struct {
			PodCIDR       string
			PodCIDRRanges []string
			Routes        []string
		}{ranges[0], ranges, routes}
		if err := tmpl.Execute(&b, data); err != nil {
			t.Fatal(err)
		}
		var conf struct {
			CNIVersion string `json:"cniVersion"`
			Plugins    []struct {
				Type string `json:"type"`
				IPAM struct {
					Type   string                `json:"type"`
					Ranges [][]map[string]string `json:"ranges"`
					Routes []map[string]string   `json:"routes"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(b.String()), &conf); err != nil {
			t.Fatalf("ranges %v: the rendered configuration is not JSON: %v\n%s", ranges, err, b.String())
		}
		if len(conf.Plugins) != 2 || conf.Plugins[0].Type != "bridge" || conf.Plugins[1].Type != "portmap" {
			t.Fatalf("ranges %v: plugins %+v, want bridge then portmap", ranges, conf.Plugins)
		}
		ipam := conf.Plugins[0].IPAM
		if len(ipam.Ranges) != len(ranges) || len(ipam.Routes) != len(routes) {
			t.Fatalf("ranges %v: ipam %+v", ranges, ipam)
		}
		for i, r := range ranges {
			if ipam.Ranges[i][0]["subnet"] != r || ipam.Routes[i]["dst"] != routes[i] {
				t.Errorf("ranges %v: range %d is %v, route %v", ranges, i, ipam.Ranges[i], ipam.Routes[i])
			}
		}
	}
}

// TestRuntimeBeforeKubelet checks the order on a node: containerd's configuration and binaries, then containerd,
// then the image imports (each after its archive), then kubelet; and that containerd restarts when its
// configuration or a binary changes.
func TestRuntimeBeforeKubelet(t *testing.T) {
	c, _ := completeSpec(t, CloudLocal, 1)
	g := engine.NewGraph[*nodetasks.Node]()
	archive := engine.Add(g, &nodetasks.Asset{Path: "/var/lib/kubeup/images/pause.tar", URL: "https://example.com/pause.tar", SHA256: strings.Repeat("a", 64)})
	containerd := engine.Add(g, &nodetasks.Asset{Path: containerdBinary, URL: "https://example.com/containerd", SHA256: strings.Repeat("b", 64)})
	r, err := addRuntimeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, &c.Spec, RuntimeAssets{
		Binaries: []engine.Task{containerd},
		Images:   []RuntimeImage{{Name: DefaultSandboxImage, Archive: "/var/lib/kubeup/images/pause.tar", Source: archive}},
	})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[engine.Key]bool{}
	for _, d := range r.service.DependsOn {
		deps[d.Key()] = true
	}
	for _, k := range []engine.Key{{Type: "File", Name: containerdConfigFile}, {Type: "File", Name: cniConfigTemplate}, containerd.Key()} {
		if !deps[k] {
			t.Errorf("containerd.service does not depend on %s: it would not restart when it changes", k)
		}
	}
	if len(r.imports) != 1 {
		t.Fatalf("imports = %v", r.imports)
	}
	imp := r.imports[0].(*nodetasks.ImageImport)
	if imp.Address != "/run/containerd/containerd.sock" || imp.Ctr != ctrBinary {
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

func TestValidateContainerd(t *testing.T) {
	runValidateCases(t, []validateCase{{
		name: "sandbox image",
		user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
			c.Spec.Containerd = &ContainerdSpec{SandboxImage: "pause 3.10"}
			return igs
		},
		want: []wantProblem{{"spec.containerd.sandboxImage", `"pause 3.10" is not a container image reference`}},
	}})
}

// TestContainerdRestartsOnConfigChange checks, on a node root without systemd (where the service's inputs are
// recorded all the same), that a change of containerd's configuration is a change of containerd.service's inputs
// (the restart the dry run announces), and that a run without one changes nothing.
func TestContainerdRestartsOnConfigChange(t *testing.T) {
	ctx := context.Background()
	c, _ := completeSpec(t, CloudLocal, 1)
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
	for _, k := range []engine.Key{{Type: "File", Name: containerdConfigFile}, {Type: "SystemdService", Name: containerdUnit}} {
		if !changed[k] {
			t.Errorf("after a change of spec.containerd, the dry run does not change %s: %+v", k, res.Plan.Changes)
		}
	}
	if len(changed) != 2 {
		t.Errorf("the dry run changes %v, want the configuration and containerd's restart only", changed)
	}
}
