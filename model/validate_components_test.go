package model

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestValidateComponents(t *testing.T) {
	runValidateCases(t, []validateCase{
		{
			name: "component values",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Kubelet = &KubeletConfig{LogLevel: ptr[int32](11), ClusterDNS: "dns", MaxPods: ptr[int32](0)}
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{LogLevel: ptr[int32](-1), SecurePort: ptr[int32](0), EtcdServers: []string{"127.0.0.1:4001"}}
				c.Spec.KubeProxy = &KubeProxyConfig{ProxyMode: "userspace"}
				return igs
			},
			want: []wantProblem{
				{"spec.kubelet.logLevel", "11 is not a log level: want 0-10"},
				{"spec.kubelet.clusterDNS", `"dns" is not an IP address`},
				{"spec.kubelet.maxPods", "0: must be at least 1"},
				{"spec.kubeAPIServer.logLevel", "-1 is not a log level"},
				{"spec.kubeAPIServer.securePort", "0 is not a port: want 1-65535"},
				{"spec.kubeAPIServer.etcdServers[0]", `"127.0.0.1:4001" is not a URL`},
				{"spec.kubeProxy.proxyMode", `"userspace" is not one of iptables, ipvs, nftables`},
			},
		},
		{
			name: "kubelet node labels it refuses to start with",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Kubelet = &KubeletConfig{NodeLabels: map[string]string{
					"node-role.kubernetes.io/control-plane": "", "k8s.io/x": "1", // refused
					"node.kubernetes.io/pool": "a", "topology.kubernetes.io/zone": "a", "example.com/team": "b", "plain": "c", // allowed
				}}
				return igs
			},
			want: []wantProblem{
				{`spec.kubelet.nodeLabels["k8s.io/x"]`, "kubelet refuses to start with a label in the kubernetes.io or k8s.io namespaces"},
				{`spec.kubelet.nodeLabels["node-role.kubernetes.io/control-plane"]`, "label the Node once it has registered"},
			},
		},
		{
			name: "component images",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer.Image = ""
				c.Spec.KubeControllerManager.Image = ""
				c.Spec.KubeScheduler.Image = ""
				c.Spec.KubeProxy.Image = ""
			},
			want: []wantProblem{
				{"spec.kubeAPIServer.image", "required: a container image"},
				{"spec.kubeControllerManager.image", "required: a container image"},
				{"spec.kubeScheduler.image", "required: a container image"},
				{"spec.kubeProxy.image", "required: a container image"},
			},
		},

		{
			name: "kubelet labels, taints and feature gates by Kubernetes' rules",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Kubelet = &KubeletConfig{
					NodeLabels: map[string]string{
						"a\"b": "x", "Example.com/team": "x", "example.com/": "x", "/team": "x", "a/b/c": "x",
						strings.Repeat("n", 64): "x", "team": strings.Repeat("v", 64), "ok": "-x", "empty": "",
						strings.Repeat("p", 63) + "." + strings.Repeat("p", 63) + "." + strings.Repeat("p", 63) + "." + strings.Repeat("p", 63) + "/n":                          "x",
						strings.Repeat("p", 63) + "." + strings.Repeat("p", 63) + "." + strings.Repeat("p", 63) + "." + strings.Repeat("p", 61) + "/" + strings.Repeat("n", 63): strings.Repeat("v", 63),
					},
					RegisterWithTaints: []string{"dedicated=etcd:NoSchedule", "gpu:NoExecute", "a=b", "a=b:Sometimes", "a b=c:NoSchedule", "a=b c:NoSchedule"},
					FeatureGates:       map[string]string{"Foo --v=10 --bad": "true", "InPlacePodVerticalScaling": "yes", "AllAlpha": "false"},
				}
				return igs
			},
			want: []wantProblem{
				{`spec.kubelet.nodeLabels["/team"]`, `"/team" is not a label key: its prefix "" is not a DNS subdomain`},
				{`spec.kubelet.nodeLabels["Example.com/team"]`, `its prefix "Example.com" is not a DNS subdomain`},
				{`spec.kubelet.nodeLabels["a\"b"]`, `"a\"b" is not a label key: want an optional DNS subdomain prefix (at most 253 lowercase characters) and "/", then a name of 1-63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit (for example example.com/team)$`},
				{`spec.kubelet.nodeLabels["a/b/c"]`, `"a/b/c" is not a label key`},
				{`spec.kubelet.nodeLabels["example.com/"]`, `"example.com/" is not a label key`},
				{`spec.kubelet.nodeLabels["nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"]`, `is not a label key`},
				{`spec.kubelet.nodeLabels["ok"]`, `"-x" is not a label value: want at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or nothing$`},
				{mapPath("spec.kubelet.nodeLabels", strings.Repeat("p", 63)+"."+strings.Repeat("p", 63)+"."+strings.Repeat("p", 63)+"."+strings.Repeat("p", 63)+"/n"), "is not a DNS subdomain"},
				{`spec.kubelet.nodeLabels["team"]`, `"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" is not a label value`},
				{"spec.kubelet.registerWithTaints[2]", `"a=b" is not a taint: want key=value:Effect or key:Effect, for example dedicated=etcd:NoSchedule$`},
				{"spec.kubelet.registerWithTaints[3]", `"a=b:Sometimes" is not a taint: its effect "Sometimes" is not NoSchedule, PreferNoSchedule or NoExecute$`},
				{"spec.kubelet.registerWithTaints[4]", `the key of taint "a b=c:NoSchedule": "a b" is not a label key`},
				{"spec.kubelet.registerWithTaints[5]", `the value of taint "a=b c:NoSchedule": "b c" is not a label value`},
				{`spec.kubelet.featureGates["Foo --v=10 --bad"]`, `"Foo --v=10 --bad" is not a feature gate's name: want letters and digits, starting with a letter (for example InPlacePodVerticalScaling)$`},
				{`spec.kubelet.featureGates["InPlacePodVerticalScaling"]`, `"yes" is not true or false$`},
			},
		},
		{
			name: "component paths, addresses and names",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Kubelet.PodManifestPath = "/etc/kubernetes/manifests/"
				c.Spec.Kubelet.Kubeconfig = "var/lib/kubelet/kubeconfig"
				c.Spec.Kubelet.ClientCAFile = "/srv/../ca.crt"
				c.Spec.Kubelet.ContainerRuntimeEndpoint = "/run/containerd/containerd.sock"
				c.Spec.Kubelet.CgroupDriver = "systemd "
				c.Spec.KubeAPIServer.TLSCertFile = "/"
				c.Spec.KubeAPIServer.AuthorizationMode = "Node,RBAC,Node,Magic"
				c.Spec.KubeAPIServer.EtcdServersOverrides = []string{"events#http://127.0.0.1:4002"}
				c.Spec.KubeAPIServer.ServiceAccountIssuer = "http://api.internal.demo.example.com"
				c.Spec.KubeAPIServer.KubeletPreferredAddressTypes = []string{"InternalIP", "InternalIP", "MAC"}
				c.Spec.KubeScheduler.Kubeconfig = "/kubeconfig"
				c.Spec.KubeProxy.MetricsBindAddress = "localhost:10249"
				c.Spec.KubeProxy.ConntrackMaxPerCore = ptr[int32](-1)
				c.Spec.KubeControllerManager.Image = "registry.k8s.io/Kube-Controller-Manager:v1.34.2"
				c.Spec.Local.ZoneFile = "/tmp/" + strings.Repeat("z", 201)
				c.Spec.KubeAPIServer.EtcdKeyFile = "/srv/../etc/x"
				c.Spec.KubeAPIServer.ProxyClientCertFile = "/srv/kubernetes/ca.crt" // the Kubernetes CA's certificate already
				c.Spec.KubeAPIServer.RequestheaderGroupHeaders = []string{"X Group"}
			},
			want: []wantProblem{
				{"spec.local.zoneFile", `its element "zzzz`},
				{"spec.kubelet.kubeconfig", `"var/lib/kubelet/kubeconfig" must be an absolute path$`},
				{"spec.kubelet.podManifestPath", `"/etc/kubernetes/manifests/" is not a clean path: use "/etc/kubernetes/manifests"$`},
				{"spec.kubelet.containerRuntimeEndpoint", `"/run/containerd/containerd.sock" is not a unix:// socket`},
				{"spec.kubelet.cgroupDriver", `"systemd " is not one of systemd, cgroupfs$`},
				{"spec.kubeAPIServer.serviceAccountIssuer", `"http://api.internal.demo.example.com" is not an issuer URL`},
				{"spec.kubeAPIServer.etcdServersOverrides[0]", `"events#http://127.0.0.1:4002" is not an etcd servers override: want group/resource#URL;URL..., for example /events#http://127.0.0.1:4002$`},
				{"spec.kubeAPIServer.authorizationMode", `"Node,RBAC,Node,Magic" lists Node twice$`},
				{"spec.kubeAPIServer.authorizationMode", `"Magic" is not an authorization mode: want a comma-separated list of AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node$`},
				{"spec.kubeAPIServer.requestheaderGroupHeaders[0]", `"X Group": want letters, digits`},
				{"spec.kubeAPIServer.kubeletPreferredAddressTypes[1]", `"InternalIP" is listed twice$`},
				{"spec.kubeAPIServer.kubeletPreferredAddressTypes[2]", `"MAC" is not one of Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS$`},
				{"spec.kubeControllerManager.image", `"registry.k8s.io/Kube-Controller-Manager:v1.34.2" is not a container image reference: want [registry/]repository[:tag][@digest], for example registry.k8s.io/kube-apiserver:v1.34.2$`},
				{"spec.kubeScheduler.kubeconfig", `"/kubeconfig" is not in a directory kubeup owns on a node: give a path in /etc/kubernetes/, /etc/kubeup/, /srv/kubernetes/, /var/lib/kubelet/, /var/lib/kube-proxy/, /var/lib/kube-controller-manager/, /var/lib/kube-scheduler/ or /run/kubeup/ (nodeup writes nothing else)$`},
				{"spec.kubeProxy.metricsBindAddress", `"localhost:10249" is not an address to listen on: want IP:PORT, for example 127.0.0.1:10249$`},
				{"spec.kubeProxy.conntrackMaxPerCore", "-1: must not be negative"},
				{"spec.kubelet.clientCAFile", `"/srv/../ca.crt" is not a clean path: use "/ca.crt"$`},
				{"spec.kubeAPIServer.tlsCertFile", `"/" is the root directory: name a file or directory under it$`},
				{"spec.kubeAPIServer.etcdKeyFile", `"/srv/../etc/x" is not a clean path`},
				{"spec.kubeControllerManager.rootCAFile", `"/srv/kubernetes/ca.crt" is also spec.kubeAPIServer.proxyClientCertFile, which holds the certificate of front-proxy-client; this field's file holds the certificate of kubernetes-ca: give it a path of its own$`},
			},
		},
		{
			name: "valid component values of every kind",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				k := c.Spec.Kubelet
				k.NodeLabels = map[string]string{"example.com/team": "a.b_c-d", "plain": "", "node.kubernetes.io/pool": "A1"}
				k.RegisterWithTaints = []string{"dedicated=etcd:NoSchedule", "example.com/gpu:NoExecute", "x=:PreferNoSchedule"}
				k.FeatureGates = map[string]string{"AllAlpha": "false", "InPlacePodVerticalScaling": "true", "Foo": "1"}
				k.ClusterDNS = "fd00::a"
				c.Spec.Addons.CoreDNS.Enabled = Ptr(false) // no Service of the IPv4 range can take an IPv6 address
				k.CgroupDriver, k.AuthorizationMode = "cgroupfs", "AlwaysAllow"
				a := c.Spec.KubeAPIServer
				a.Image = "localhost:5000/kube-apiserver@sha256:" + strings.Repeat("ab", 32)
				a.BindAddress = "::"
				a.EtcdServers = []string{"https://etcd-a.internal.demo.example.com:4001", "http://[fd00::1]:4001"}
				a.EtcdServersOverrides = []string{"coordination.k8s.io/leases#http://127.0.0.1:4002;http://127.0.0.1:4003"}
				a.AuthorizationMode = "Node,RBAC,Webhook"
				a.ServiceAccountIssuer = "https://oidc.example.com:8443/clusters/demo"
				a.APIAudiences = []string{"https://kubernetes.default.svc.cluster.local", "sts.amazonaws.com"}
				a.EnableAdmissionPlugins = []string{"NodeRestriction", "PodSecurity"}
				c.Spec.KubeProxy.MetricsBindAddress = "[::1]:10249"
				c.Spec.KubeProxy.ProxyMode = "nftables"
				c.Spec.KubeScheduler.Image = "registry.k8s.io/kube-scheduler"
				c.Spec.KubeControllerManager.ClusterName = "demo"
				c.Spec.Local.PoolDir = "/var/lib/kubeup/pool-1+a@b"
			},
		},
	})
}

// TestValidateRefusesHostileValues feeds the hostile values into every string field that reaches a component's
// flags, a node's files, a unit or a manifest: validation refuses each with that field's path, and with nothing
// else.
func TestValidateRefusesHostileValues(t *testing.T) {
	type field struct {
		name string
		path func(v string) string
		set  func(c *Cluster, v string)
	}
	// accepts are the hostile values that are harmless in a field.
	accepts := map[string][]string{
		// A state store's URL is not passed to any component: it only has to be a URL kubeup can read.
		"configBase": {"--v=10", "a,b=c", "a;b", "é"},
	}
	fields := []field{
		{"kubeAPIServer image", fixed("spec.kubeAPIServer.image"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.Image = "registry.k8s.io/" + v }},
		{"kubeAPIServer bindAddress", fixed("spec.kubeAPIServer.bindAddress"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.BindAddress = v }},
		{"kubeAPIServer etcdServers", fixed("spec.kubeAPIServer.etcdServers[0]"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.EtcdServers = []string{"http://127.0.0.1:4001/" + v} }},
		{"kubeAPIServer etcdServersOverrides", fixed("spec.kubeAPIServer.etcdServersOverrides[0]"), func(c *Cluster, v string) {
			c.Spec.KubeAPIServer.EtcdServersOverrides = []string{"/events#http://127.0.0.1:4002" + v}
		}},
		{"kubeAPIServer storageBackend", fixed("spec.kubeAPIServer.storageBackend"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.StorageBackend = v }},
		{"kubeAPIServer serviceClusterIPRange", fixed("spec.kubeAPIServer.serviceClusterIPRange"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.ServiceClusterIPRange = v }},
		{"kubeAPIServer authorizationMode", fixed("spec.kubeAPIServer.authorizationMode"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.AuthorizationMode = "Node,RBAC" + v }},
		{"kubeAPIServer enableAdmissionPlugins", fixed("spec.kubeAPIServer.enableAdmissionPlugins[0]"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.EnableAdmissionPlugins = []string{v} }},
		{"kubeAPIServer clientCAFile", fixed("spec.kubeAPIServer.clientCAFile"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.ClientCAFile = "/srv/" + v }},
		{"kubeAPIServer tlsCertFile", fixed("spec.kubeAPIServer.tlsCertFile"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.TLSCertFile = "/srv/" + v }},
		{"kubeAPIServer tlsPrivateKeyFile", fixed("spec.kubeAPIServer.tlsPrivateKeyFile"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.TLSPrivateKeyFile = "/srv/" + v }},
		{"kubeAPIServer serviceAccountIssuer", fixed("spec.kubeAPIServer.serviceAccountIssuer"), func(c *Cluster, v string) {
			c.Spec.KubeAPIServer.ServiceAccountIssuer = "https://api.internal.demo.example.com/" + v
		}},
		{"kubeAPIServer serviceAccountKeyFile", fixed("spec.kubeAPIServer.serviceAccountKeyFile"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.ServiceAccountKeyFile = "/srv/" + v }},
		{"kubeAPIServer serviceAccountSigningKeyFile", fixed("spec.kubeAPIServer.serviceAccountSigningKeyFile"), func(c *Cluster, v string) {
			c.Spec.KubeAPIServer.ServiceAccountSigningKeyFile = "/srv/" + v
		}},
		{"kubeAPIServer apiAudiences", fixed("spec.kubeAPIServer.apiAudiences[0]"), func(c *Cluster, v string) { c.Spec.KubeAPIServer.APIAudiences = []string{v} }},
		{"kubeAPIServer kubeletPreferredAddressTypes", fixed("spec.kubeAPIServer.kubeletPreferredAddressTypes[0]"), func(c *Cluster, v string) {
			c.Spec.KubeAPIServer.KubeletPreferredAddressTypes = []string{v}
		}},
		{"kubeAPIServer featureGates", func(v string) string { return "spec.kubeAPIServer.featureGates[" + strconv.Quote(v) + "]" }, func(c *Cluster, v string) {
			c.Spec.KubeAPIServer.FeatureGates = map[string]string{v: "true"}
		}},
		{"kubeControllerManager image", fixed("spec.kubeControllerManager.image"), func(c *Cluster, v string) { c.Spec.KubeControllerManager.Image = v }},
		{"kubeControllerManager kubeconfig", fixed("spec.kubeControllerManager.kubeconfig"), func(c *Cluster, v string) { c.Spec.KubeControllerManager.Kubeconfig = "/var/lib/" + v }},
		{"kubeControllerManager clusterName", fixed("spec.kubeControllerManager.clusterName"), func(c *Cluster, v string) { c.Spec.KubeControllerManager.ClusterName = v }},
		{"kubeControllerManager clusterCIDR", fixed("spec.kubeControllerManager.clusterCIDR"), func(c *Cluster, v string) { c.Spec.KubeControllerManager.ClusterCIDR = v }},
		{"kubeControllerManager serviceClusterIPRange", fixed("spec.kubeControllerManager.serviceClusterIPRange"), func(c *Cluster, v string) {
			c.Spec.KubeControllerManager.ServiceClusterIPRange = v
		}},
		{"kubeControllerManager serviceAccountPrivateKeyFile", fixed("spec.kubeControllerManager.serviceAccountPrivateKeyFile"), func(c *Cluster, v string) {
			c.Spec.KubeControllerManager.ServiceAccountPrivateKeyFile = "/srv/" + v
		}},
		{"kubeControllerManager rootCAFile", fixed("spec.kubeControllerManager.rootCAFile"), func(c *Cluster, v string) { c.Spec.KubeControllerManager.RootCAFile = "/srv/" + v }},
		{"kubeControllerManager featureGates value", fixed(`spec.kubeControllerManager.featureGates["Foo"]`), func(c *Cluster, v string) {
			c.Spec.KubeControllerManager.FeatureGates = map[string]string{"Foo": v}
		}},
		{"kubeScheduler image", fixed("spec.kubeScheduler.image"), func(c *Cluster, v string) { c.Spec.KubeScheduler.Image = v + ":v1.34.2" }},
		{"kubeScheduler kubeconfig", fixed("spec.kubeScheduler.kubeconfig"), func(c *Cluster, v string) { c.Spec.KubeScheduler.Kubeconfig = "/" + v + "/kubeconfig" }},
		{"kubeScheduler bindAddress", fixed("spec.kubeScheduler.bindAddress"), func(c *Cluster, v string) { c.Spec.KubeScheduler.BindAddress = "127.0.0.1" + v }},
		{"kubeScheduler featureGates", func(v string) string { return "spec.kubeScheduler.featureGates[" + strconv.Quote(v) + "]" }, func(c *Cluster, v string) {
			c.Spec.KubeScheduler.FeatureGates = map[string]string{v: "false"}
		}},
		{"kubeProxy image", fixed("spec.kubeProxy.image"), func(c *Cluster, v string) { c.Spec.KubeProxy.Image = "registry.k8s.io/kube-proxy:" + v }},
		{"kubeProxy kubeconfig", fixed("spec.kubeProxy.kubeconfig"), func(c *Cluster, v string) { c.Spec.KubeProxy.Kubeconfig = "/var/lib/kube-proxy/" + v }},
		{"kubeProxy clusterCIDR", fixed("spec.kubeProxy.clusterCIDR"), func(c *Cluster, v string) { c.Spec.KubeProxy.ClusterCIDR = "100.96.0.0/11" + v }},
		{"kubeProxy metricsBindAddress", fixed("spec.kubeProxy.metricsBindAddress"), func(c *Cluster, v string) { c.Spec.KubeProxy.MetricsBindAddress = "127.0.0.1:" + v }},
		{"kubeProxy featureGates value", fixed(`spec.kubeProxy.featureGates["Foo"]`), func(c *Cluster, v string) { c.Spec.KubeProxy.FeatureGates = map[string]string{"Foo": v} }},
		{"etcd image", fixed("spec.etcdClusters[1].image"), func(c *Cluster, v string) { c.Spec.EtcdClusters[1].Image = "registry.k8s.io/etcd:" + v }},
		{"local poolDir", fixed("spec.local.poolDir"), func(c *Cluster, v string) { c.Spec.Local.PoolDir = "/var/lib/" + v }},
		{"local zoneFile", fixed("spec.local.zoneFile"), func(c *Cluster, v string) { c.Spec.Local.ZoneFile = "/var/lib/" + v + ".zone" }},
		{"configBase", fixed("spec.configBase"), func(c *Cluster, v string) { c.Spec.ConfigBase = "file:///tmp/s/" + v }},
	}
	for _, f := range kubeletFields {
		fields = append(fields, field{"kubelet " + f.Name, f.Path, f.Set})
	}
	for _, f := range fields {
		for _, v := range hostileValues {
			t.Run(f.name+"/"+strconv.Quote(v), func(t *testing.T) {
				c, igs := completeSpec(t, CloudLocal, 3)
				f.set(c, v)
				ps := problemsOf(t, Validate("cluster.yaml", c, igs))
				want := f.path(v)
				if slices.Contains(accepts[f.name], v) {
					if len(ps) != 0 {
						t.Errorf("Validate refused %q: %v", v, ps)
					}
					return
				}
				if len(ps) == 0 {
					t.Fatalf("Validate accepted %q; want a problem at %s", v, want)
				}
				for _, p := range ps {
					if p.Path != want {
						t.Errorf("problem %q, want only problems at %s", p, want)
					}
				}
			})
		}
	}
}
