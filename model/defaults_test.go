package model

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/golden"
)

// encodeSpec is the spec as `kubeup get cluster --full -o yaml` prints it.
func encodeSpec(t testing.TB, c *Cluster, igs []*InstanceGroup) []byte {
	t.Helper()
	objs := []any{c}
	for _, ig := range igs {
		objs = append(objs, ig)
	}
	data, err := Encode(objs...)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return data
}

var completeCases = []struct {
	name          string
	cloud         string
	controlPlanes int
}{
	{"local-1", CloudLocal, 1},
	{"local-3", CloudLocal, 3},
	{"aws-3", CloudAWS, 3},
	{"gce-3", CloudGCE, 3},
}

func TestCompleteGolden(t *testing.T) {
	for _, tt := range completeCases {
		t.Run(tt.name, func(t *testing.T) {
			c, igs := completeSpec(t, tt.cloud, tt.controlPlanes)
			if err := Validate("complete "+tt.name, c, igs); err != nil {
				t.Errorf("the complete spec is not valid: %v", err)
			}
			golden.Assert(t, "testdata/complete-"+tt.name+".golden", encodeSpec(t, c, igs))
		})
	}
}

func TestCompleteIsIdempotent(t *testing.T) {
	cases := map[string]func(t *testing.T) (*Cluster, []*InstanceGroup){}
	for _, tt := range completeCases {
		cases[tt.name] = func(t *testing.T) (*Cluster, []*InstanceGroup) { return userSpec(t, tt.cloud, tt.controlPlanes) }
	}
	cases["user values and an extra etcd cluster"] = func(t *testing.T) (*Cluster, []*InstanceGroup) {
		c, igs := userSpec(t, CloudAWS, 3)
		c.Spec.Networking = &NetworkingSpec{ServiceClusterIPRange: "100.64.0.0/16"}
		c.Spec.KubeAPIServer = &KubeAPIServerConfig{SecurePort: ptr[int32](6443), FeatureGates: map[string]string{"A": "true"}}
		c.Spec.EtcdClusters = []EtcdClusterSpec{
			{Name: "main", Members: []EtcdMemberSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
			{Name: "cilium", Members: []EtcdMemberSpec{{Name: "a", InstanceGroup: "control-plane-a", VolumeSize: ptr[int32](5)}}},
		}
		return c, igs
	}
	cases["no instance groups"] = func(t *testing.T) (*Cluster, []*InstanceGroup) {
		c, _ := userSpec(t, CloudLocal, 1)
		return c, nil
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			c1, igs1 := Complete(spec(t))
			c2, igs2 := Complete(c1, igs1)
			if diff := cmp.Diff(c1, c2); diff != "" {
				t.Errorf("Complete(Complete(x)) changed the cluster (-once +twice):\n%s", diff)
			}
			if diff := cmp.Diff(igs1, igs2); diff != "" {
				t.Errorf("Complete(Complete(x)) changed the instance groups (-once +twice):\n%s", diff)
			}
		})
	}
}

func TestCompleteKeepsUserValues(t *testing.T) {
	tests := []struct {
		name string
		set  func(c *Cluster, igs []*InstanceGroup)
		get  func(c *Cluster, igs []*InstanceGroup) any
		want any
	}{
		{
			name: "kubeAPIServer.securePort",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{SecurePort: ptr[int32](6443)}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.KubeAPIServer.SecurePort },
			want: int32(6443),
		},
		{
			name: "kubeAPIServer.allowPrivileged false",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{AllowPrivileged: ptr(false)}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.KubeAPIServer.AllowPrivileged },
			want: false,
		},
		{
			name: "kubeAPIServer.etcdServers",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{EtcdServers: []string{"https://127.0.0.1:4001"}}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				return [][]string{c.Spec.KubeAPIServer.EtcdServers, c.Spec.KubeAPIServer.EtcdServersOverrides}
			},
			want: [][]string{{"https://127.0.0.1:4001"}, {"/events#https://127.0.0.1:4002"}},
		},
		{
			name: "networking.podCIDR, and the components that use it",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Networking = &NetworkingSpec{PodCIDR: "100.100.0.0/16"} },
			get: func(c *Cluster, _ []*InstanceGroup) any {
				return []string{c.Spec.Networking.PodCIDR, c.Spec.KubeControllerManager.ClusterCIDR, c.Spec.KubeProxy.ClusterCIDR}
			},
			want: []string{"100.100.0.0/16", "100.100.0.0/16", "100.100.0.0/16"},
		},
		{
			name: "networking.serviceClusterIPRange, and the components that use it",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Networking = &NetworkingSpec{ServiceClusterIPRange: "100.65.0.0/16"}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				s := c.Spec
				return []string{s.Networking.ServiceClusterIPRange, s.KubeAPIServer.ServiceClusterIPRange,
					s.KubeControllerManager.ServiceClusterIPRange, s.Kubelet.ClusterDNS}
			},
			want: []string{"100.65.0.0/16", "100.65.0.0/16", "100.65.0.0/16", "100.65.0.10"},
		},
		{
			name: "networking.clusterDomain, and kubelet's",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Networking = &NetworkingSpec{ClusterDomain: "demo.local"} },
			get:  func(c *Cluster, _ []*InstanceGroup) any { return c.Spec.Kubelet.ClusterDomain },
			want: "demo.local",
		},
		{
			name: "etcd member volumeSize",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters = []EtcdClusterSpec{{Name: "main", Members: []EtcdMemberSpec{{Name: "a", VolumeSize: ptr[int32](50)}}}}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				m := c.Spec.EtcdClusters[0].Members[0]
				return []any{*m.VolumeSize, m.InstanceGroup, m.Zone}
			},
			want: []any{int32(50), "control-plane-a", "a"},
		},
		{
			name: "etcd cluster version, and its image",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters = []EtcdClusterSpec{{Name: "main", Version: "3.6.5", Members: []EtcdMemberSpec{{Name: "a"}}}}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return c.Spec.EtcdClusters[0].Image },
			want: "registry.k8s.io/etcd:3.6.5-0",
		},
		{
			name: "etcd ports",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters = []EtcdClusterSpec{
					{Name: "main", ClientPort: 4100, Members: []EtcdMemberSpec{{Name: "a"}}},
					{Name: "events", ClientPort: 4101, PeerPort: 2481, MetricsPort: 8182, Members: []EtcdMemberSpec{{Name: "a"}}},
				}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				e := c.Spec.EtcdClusters
				a := c.Spec.KubeAPIServer
				return []any{e[0].ClientPort, e[0].PeerPort, e[0].MetricsPort, e[1].ClientPort, e[1].PeerPort, e[1].MetricsPort,
					a.EtcdServers, a.EtcdServersOverrides}
			},
			want: []any{int32(4100), int32(2380), int32(8081), int32(4101), int32(2481), int32(8182),
				[]string{"https://127.0.0.1:4100"}, []string{"/events#https://127.0.0.1:4101"}},
		},
		{
			name: "kubeAPIServer's certificate files and front proxy headers: a value set wins, the others are defaulted",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{
					EtcdCertFile:                 "/etc/kubernetes/pki/etcd-client.crt",
					KubeletClientKey:             "/etc/kubernetes/pki/kubelet-api.key",
					RequestheaderGroupHeaders:    []string{"X-Proxy-Group"},
					RequestheaderUsernameHeaders: []string{"X-Proxy-User"},
				}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				a := c.Spec.KubeAPIServer
				return []any{a.EtcdCAFile, a.EtcdCertFile, a.EtcdKeyFile, a.KubeletClientCertificate, a.KubeletClientKey,
					a.RequestheaderClientCAFile, a.RequestheaderAllowedNames, a.RequestheaderUsernameHeaders,
					a.RequestheaderGroupHeaders, a.RequestheaderExtraHeadersPrefix, a.ProxyClientCertFile, a.ProxyClientKeyFile}
			},
			want: []any{
				"/srv/kubernetes/kube-apiserver/etcd-ca.crt", "/etc/kubernetes/pki/etcd-client.crt", "/srv/kubernetes/kube-apiserver/etcd-client.key",
				"/srv/kubernetes/kube-apiserver/kubelet-api.crt", "/etc/kubernetes/pki/kubelet-api.key",
				"/srv/kubernetes/kube-apiserver/front-proxy-ca.crt", []string{"front-proxy-client"}, []string{"X-Proxy-User"},
				[]string{"X-Proxy-Group"}, []string{"X-Remote-Extra-"},
				"/srv/kubernetes/kube-apiserver/front-proxy-client.crt", "/srv/kubernetes/kube-apiserver/front-proxy-client.key",
			},
		},
		{
			name: "kubelet.maxPods",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Kubelet = &KubeletConfig{MaxPods: ptr[int32](30)} },
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Kubelet.MaxPods },
			want: int32(30),
		},
		{
			name: "kubelet.anonymousAuth true",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Kubelet = &KubeletConfig{AnonymousAuth: ptr(true)} },
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Kubelet.AnonymousAuth },
			want: true,
		},
		{
			name: "kubelet.logLevel 0",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Kubelet = &KubeletConfig{LogLevel: ptr[int32](0)} },
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Kubelet.LogLevel },
			want: int32(0),
		},
		{
			name: "dnsZone, and the local zone file",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.DNSZone = "demo.example.com" },
			get: func(c *Cluster, _ []*InstanceGroup) any {
				return []string{c.Spec.DNSZone, c.Spec.Local.ZoneFile}
			},
			want: []string{"demo.example.com", "/tmp/s-local/dns/demo.example.com.zone"},
		},
		{
			name: "api names, and the service account issuer",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.API = &APISpec{PublicName: "k8s.demo.example.com", InternalName: "k8s-internal.demo.example.com"}
			},
			get: func(c *Cluster, _ []*InstanceGroup) any {
				return []string{c.Spec.API.PublicName, c.Spec.API.InternalName, c.Spec.KubeAPIServer.ServiceAccountIssuer}
			},
			want: []string{"k8s.demo.example.com", "k8s-internal.demo.example.com", "https://k8s-internal.demo.example.com"},
		},
		{
			name: "kubernetesVersion, and the images",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.KubernetesVersion = "v1.33.5" },
			get: func(c *Cluster, _ []*InstanceGroup) any {
				s := c.Spec
				return []string{s.KubernetesVersion, s.KubeAPIServer.Image, s.KubeControllerManager.Image, s.KubeScheduler.Image, s.KubeProxy.Image}
			},
			want: []string{"v1.33.5", "registry.k8s.io/kube-apiserver:v1.33.5", "registry.k8s.io/kube-controller-manager:v1.33.5",
				"registry.k8s.io/kube-scheduler:v1.33.5", "registry.k8s.io/kube-proxy:v1.33.5"},
		},
		{
			name: "local.poolDir",
			set:  func(c *Cluster, _ []*InstanceGroup) { c.Spec.Local = &LocalSpec{PoolDir: "/var/lib/kubeup/pool"} },
			get:  func(c *Cluster, _ []*InstanceGroup) any { return []string{c.Spec.Local.PoolDir, c.Spec.Local.ZoneFile} },
			want: []string{"/var/lib/kubeup/pool", "/tmp/s-local/dns/example.com.zone"},
		},
		{
			name: "local.dns: the zone file by default",
			set:  func(*Cluster, []*InstanceGroup) {},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Local.DNS },
			want: LocalDNSSpec{Provider: "zonefile"},
		},
		{
			name: "local.dns hosts: /etc/hosts by default",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "hosts"}}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Local.DNS },
			want: LocalDNSSpec{Provider: "hosts", HostsFile: "/etc/hosts"},
		},
		{
			name: "local.dns hosts: a hosts file set",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "hosts", HostsFile: "/run/kubeup/hosts"}}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Local.DNS },
			want: LocalDNSSpec{Provider: "hosts", HostsFile: "/run/kubeup/hosts"},
		},
		{
			name: "local.dns rfc2136: hmac-sha256 by default, nothing else invented",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k", TSIGSecretFile: "/etc/kubeup/k"}}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return *c.Spec.Local.DNS },
			want: LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k", TSIGAlgorithm: "hmac-sha256", TSIGSecretFile: "/etc/kubeup/k"},
		},
		{
			name: "local.dns rfc2136: an algorithm set",
			set: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k",
					TSIGAlgorithm: "hmac-sha512", TSIGSecretFile: "/etc/kubeup/k"}}
			},
			get:  func(c *Cluster, _ []*InstanceGroup) any { return c.Spec.Local.DNS.TSIGAlgorithm },
			want: "hmac-sha512",
		},
		{
			// (a local group takes no machineType or image but its own: validate_local_test.go)
			name: "instance group minSize 0",
			set: func(_ *Cluster, igs []*InstanceGroup) {
				nodes := igs[len(igs)-1]
				nodes.Spec.MinSize = ptr[int32](0)
				nodes.Spec.MaxSize = nil
			},
			get: func(_ *Cluster, igs []*InstanceGroup) any {
				s := igs[len(igs)-1].Spec
				return []any{*s.MinSize, *s.MaxSize}
			},
			want: []any{int32(0), int32(0)},
		},
		{
			name: "node group zones",
			set:  func(_ *Cluster, igs []*InstanceGroup) { igs[len(igs)-1].Spec.Zones = []string{"b"} },
			get:  func(_ *Cluster, igs []*InstanceGroup) any { return igs[len(igs)-1].Spec.Zones },
			want: []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, igs := userSpec(t, CloudLocal, 3)
			tt.set(c, igs)
			c, igs = Complete(c, igs)
			if diff := cmp.Diff(tt.want, tt.get(c, igs)); diff != "" {
				t.Errorf("after Complete (-want +got):\n%s", diff)
			}
			if err := Validate("test", c, igs); err != nil {
				t.Errorf("the complete spec is not valid: %v", err)
			}
		})
	}
}

func TestCompleteCloudDefaults(t *testing.T) {
	tests := []struct {
		cloud string
		want  []any // region, machine type, image, volume type, encrypted
	}{
		{CloudAWS, []any{"us-east-1", "t3.medium", "debian-12-amd64", "gp3", true}},
		{CloudGCE, []any{"", "e2-standard-2", "debian-cloud/debian-12", "pd-ssd", true}},
		{CloudLocal, []any{"", "local", "debian-12", "sparse", false}},
	}
	for _, tt := range tests {
		t.Run(tt.cloud, func(t *testing.T) {
			c, igs := completeSpec(t, tt.cloud, 1)
			for _, ig := range igs {
				m := c.Spec.EtcdClusters[0].Members[0]
				got := []any{c.Spec.Region, ig.Spec.MachineType, ig.Spec.Image, *m.VolumeType, *m.Encrypted}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("instance group %s (-want +got):\n%s", ig.Metadata.Name, diff)
				}
			}
		})
	}
}

func TestCompleteIsDeterministic(t *testing.T) {
	c, igs := userSpec(t, CloudLocal, 5)
	want := encodeSpec(t, c, igs)
	first := completeEncoded(t, c, igs)
	for range 20 {
		if diff := cmp.Diff(string(first), string(completeEncoded(t, c, igs))); diff != "" {
			t.Fatalf("Complete gave two different answers (-first +now):\n%s", diff)
		}
	}
	// The order of the instance groups does not change the etcd members.
	reversed := slices.Clone(igs)
	slices.Reverse(reversed)
	c1, _ := Complete(c, igs)
	c2, _ := Complete(c, reversed)
	if diff := cmp.Diff(c1, c2); diff != "" {
		t.Errorf("the order of the instance groups changed the complete cluster (-in order +reversed):\n%s", diff)
	}
	// Complete does not touch its input.
	if diff := cmp.Diff(string(want), string(encodeSpec(t, c, igs))); diff != "" {
		t.Errorf("Complete changed its input (-before +after):\n%s", diff)
	}
}

func completeEncoded(t testing.TB, c *Cluster, igs []*InstanceGroup) []byte {
	t.Helper()
	c, igs = Complete(c, igs)
	return encodeSpec(t, c, igs)
}

func TestCompleteDoesNotShareWithItsInput(t *testing.T) {
	c, igs := userSpec(t, CloudAWS, 3)
	c.Spec.Kubelet = &KubeletConfig{NodeLabels: map[string]string{"a": "b"}, MaxPods: ptr[int32](50)}
	c.Spec.EtcdClusters = []EtcdClusterSpec{{Name: "main", Members: []EtcdMemberSpec{{Name: "a", VolumeSize: ptr[int32](30)}}}}
	before := encodeSpec(t, c, igs)

	got, gotIGs := Complete(c, igs)
	got.Spec.Kubelet.NodeLabels["a"] = "changed"
	*got.Spec.Kubelet.MaxPods = 1
	*got.Spec.EtcdClusters[0].Members[0].VolumeSize = 1
	got.Spec.Zones[0] = "changed"
	*gotIGs[0].Spec.MinSize = 7
	gotIGs[0].Spec.Zones[0] = "changed"

	if diff := cmp.Diff(string(before), string(encodeSpec(t, c, igs))); diff != "" {
		t.Errorf("the complete spec shares memory with its input (-before +after):\n%s", diff)
	}
}

func TestCompleteEtcdMembers(t *testing.T) {
	tests := []struct {
		name          string
		cloud         string
		controlPlanes int
		want          []EtcdMemberSpec
	}{
		{
			name:          "one member per control-plane group",
			cloud:         CloudLocal,
			controlPlanes: 3,
			want: []EtcdMemberSpec{
				{Name: "a", InstanceGroup: "control-plane-a", Zone: "a", VolumeType: ptr("sparse"), VolumeSize: ptr[int32](20), Encrypted: ptr(false)},
				{Name: "b", InstanceGroup: "control-plane-b", Zone: "b", VolumeType: ptr("sparse"), VolumeSize: ptr[int32](20), Encrypted: ptr(false)},
				{Name: "c", InstanceGroup: "control-plane-c", Zone: "c", VolumeType: ptr("sparse"), VolumeSize: ptr[int32](20), Encrypted: ptr(false)},
			},
		},
		{
			name:          "five over three zones, sorted by name",
			cloud:         CloudAWS,
			controlPlanes: 5,
			want: []EtcdMemberSpec{
				{Name: "a-1", InstanceGroup: "control-plane-a-1", Zone: "us-east-1a", VolumeType: ptr("gp3"), VolumeSize: ptr[int32](20), Encrypted: ptr(true)},
				{Name: "a-2", InstanceGroup: "control-plane-a-2", Zone: "us-east-1a", VolumeType: ptr("gp3"), VolumeSize: ptr[int32](20), Encrypted: ptr(true)},
				{Name: "b-1", InstanceGroup: "control-plane-b-1", Zone: "us-east-1b", VolumeType: ptr("gp3"), VolumeSize: ptr[int32](20), Encrypted: ptr(true)},
				{Name: "b-2", InstanceGroup: "control-plane-b-2", Zone: "us-east-1b", VolumeType: ptr("gp3"), VolumeSize: ptr[int32](20), Encrypted: ptr(true)},
				{Name: "c", InstanceGroup: "control-plane-c", Zone: "us-east-1c", VolumeType: ptr("gp3"), VolumeSize: ptr[int32](20), Encrypted: ptr(true)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, igs := completeSpec(t, tt.cloud, tt.controlPlanes)
			if err := Validate("test", c, igs); err != nil {
				t.Errorf("the complete spec is not valid: %v", err)
			}
			for i, name := range []string{"main", "events"} {
				e := c.Spec.EtcdClusters[i]
				if e.Name != name {
					t.Fatalf("etcdClusters[%d] is %s, want %s", i, e.Name, name)
				}
				if diff := cmp.Diff(tt.want, e.Members); diff != "" {
					t.Errorf("members of %s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestCompleteExtraEtcdClusterPorts(t *testing.T) {
	c, igs := userSpec(t, CloudLocal, 1)
	c.Spec.EtcdClusters = []EtcdClusterSpec{
		{Name: "main", Members: []EtcdMemberSpec{{Name: "a"}}},
		{Name: "events", Members: []EtcdMemberSpec{{Name: "a"}}},
		{Name: "cilium", Members: []EtcdMemberSpec{{Name: "a"}}},
		{Name: "calico", Members: []EtcdMemberSpec{{Name: "a"}}},
	}
	c, igs = Complete(c, igs)
	if err := Validate("test", c, igs); err != nil {
		t.Errorf("the complete spec is not valid: %v", err)
	}
	type ports struct{ Client, Peer, Metrics int32 }
	var got []ports
	for _, e := range c.Spec.EtcdClusters {
		got = append(got, ports{e.ClientPort, e.PeerPort, e.MetricsPort})
	}
	want := []ports{{4001, 2380, 8081}, {4002, 2381, 8082}, {4005, 2384, 8085}, {4006, 2385, 8086}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("etcd ports (-want +got):\n%s", diff)
	}
}
