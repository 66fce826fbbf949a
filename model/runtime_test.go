package model

import (
	"encoding/json"
	"strings"
	"testing"
	"text/template"
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
	crictl, err := CrictlConfigText(s.Kubelet.ContainerRuntimeEndpoint)
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
// their routes) and checks that the result is the bridge network of those ranges, with the pod network's MTU:
// none under kubenet (the link's), flannel's VXLAN-sized one under flannel.
func TestCNITemplate(t *testing.T) {
	for _, network := range []string{PodNetworkKubenet, PodNetworkFlannel} {
		mtu := PodMTU(&ClusterSpec{Networking: &NetworkingSpec{PodNetwork: network}})
		if want := map[string]int{PodNetworkKubenet: 0, PodNetworkFlannel: 1450}[network]; mtu != want {
			t.Errorf("%s: PodMTU %d, want %d", network, mtu, want)
		}
		t.Run(network, func(t *testing.T) { testCNITemplate(t, mtu) })
	}
}

func testCNITemplate(t *testing.T, mtu int) {
	tmpl, err := template.New("cni").Parse(CNITemplateText(mtu))
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
				MTU  *int   `json:"mtu"`
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
		if got := conf.Plugins[0].MTU; (mtu == 0) != (got == nil) || (got != nil && *got != mtu) {
			t.Errorf("ranges %v: the bridge's mtu %v, want %d (0: none)\n%s", ranges, got, mtu, b.String())
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
