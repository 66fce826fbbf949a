package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/golden"
)

// wantProblem is a problem a test expects: its exact path and a part of its message; a message ending in "$"
// must end the problem's message.
type wantProblem struct {
	path, message string
}

func (w wantProblem) matches(p Problem) bool {
	if w.path != p.Path {
		return false
	}
	if m, ok := strings.CutSuffix(w.message, "$"); ok {
		return strings.HasSuffix(p.Message, m)
	}
	return strings.Contains(p.Message, w.message)
}

func matchProblems(t *testing.T, want []wantProblem, got []Problem) {
	t.Helper()
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i].matches(got[i])
	}
	if !ok {
		var w, g strings.Builder
		for _, p := range want {
			fmt.Fprintf(&w, "  %s: ...%s...\n", p.path, p.message)
		}
		for _, p := range got {
			fmt.Fprintf(&g, "  %s\n", p)
		}
		t.Errorf("problems differ\nwant:\n%sgot:\n%s", w.String(), g.String())
	}
}

func group(igs []*InstanceGroup, name string) *InstanceGroup {
	for _, ig := range igs {
		if ig.Metadata.Name == name {
			return ig
		}
	}
	panic("no instance group " + name)
}

// validateCase is a spec of `kubeup create cluster` (three control planes), changed, and the problems Validate
// finds in it.
type validateCase struct {
	name  string
	cloud string // local when empty
	// user changes the spec before Complete, complete after it; either may be nil.
	user     func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup
	complete func(c *Cluster, igs []*InstanceGroup)
	want     []wantProblem
}

func runValidateCases(t *testing.T, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud := tt.cloud
			if cloud == "" {
				cloud = CloudLocal
			}
			c, igs := userSpec(t, cloud, 3)
			if tt.user != nil {
				igs = tt.user(c, igs)
			}
			c, igs = Complete(c, igs)
			if tt.complete != nil {
				tt.complete(c, igs)
			}
			err := Validate("cluster demo.example.com", c, igs)
			matchProblems(t, tt.want, problemsOf(t, err))
			if err != nil && err.(*InvalidError).Source != "cluster demo.example.com" {
				t.Errorf("Source = %q, want %q", err.(*InvalidError).Source, "cluster demo.example.com")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "the complete spec of create cluster is valid"},
		{name: "aws is valid", cloud: CloudAWS},
		{name: "gce is valid", cloud: CloudGCE},

		// etcd
		{
			name: "even number of etcd members",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters[0].Members = c.Spec.EtcdClusters[0].Members[:2]
			},
			want: []wantProblem{{"spec.etcdClusters[0].members", "2 members: etcd needs an odd number to keep a quorum; use 1 or 3"}},
		},
		{
			name:     "no etcd members",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Members = nil },
			want:     []wantProblem{{"spec.etcdClusters[1].members", "required: 1, 3 or 5 members"}},
		},
		{
			name:     "member in a zone the cluster does not have",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[2].Zone = "d" },
			want:     []wantProblem{{"spec.etcdClusters[0].members[2].zone", `"d" is not one of spec.zones [a b c]`}},
		},
		{
			name:     "member in a zone its instance group is not in",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[2].Zone = "a" },
			want:     []wantProblem{{"spec.etcdClusters[0].members[2].zone", `"a" is not a zone of instance group "control-plane-c" [c]`}},
		},
		{
			name: "member whose instance group has several zones",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				group(igs, "control-plane-a").Spec.Zones = []string{"a", "b"}
				return igs
			},
			want: []wantProblem{
				{"spec.etcdClusters[0].members[0].zone", "required: the zone of the member's volume"},
				{"spec.etcdClusters[1].members[0].zone", "required: the zone of the member's volume"},
				{"instancegroup/control-plane-a: spec.zones", "a control-plane group has one zone"},
			},
		},
		{
			name: "member whose instance group does not exist",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters[1].Members[1].InstanceGroup = "control-plane-z"
			},
			want: []wantProblem{{"spec.etcdClusters[1].members[1].instanceGroup",
				`instance group "control-plane-z" does not exist: create it or name one of [control-plane-a control-plane-b control-plane-c]`}},
		},
		{
			name: "member whose instance group does not exist, without a zone",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				return setMembers(c, igs, EtcdMemberSpec{Name: "x", InstanceGroup: "control-plane-x"})
			},
			want: []wantProblem{
				{"spec.etcdClusters[0].members[0].instanceGroup", `instance group "control-plane-x" does not exist`},
				{"spec.etcdClusters[0].members[0].zone", "required: the zone of the member's volume$"},
			},
		},
		{
			name: "member without an instance group",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				return setMembers(c, igs, EtcdMemberSpec{Name: "x", Zone: "a"})
			},
			want: []wantProblem{{"spec.etcdClusters[0].members[0].instanceGroup", "required: the control-plane instance group"}},
		},
		{
			name:     "member on a Node group",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[2].InstanceGroup = "nodes" },
			want: []wantProblem{{"spec.etcdClusters[0].members[2].instanceGroup",
				`instance group "nodes" has role Node: etcd members run on ControlPlane groups`}},
		},
		{
			name: "two members on one instance group",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters[0].Members[1].InstanceGroup = "control-plane-a"
				c.Spec.EtcdClusters[0].Members[1].Zone = "a"
			},
			want: []wantProblem{{"spec.etcdClusters[0].members[1].instanceGroup",
				`instance group "control-plane-a" already runs member "a" of main: each member needs its own group`}},
		},
		{
			name:     "two members with one name",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Members[2].Name = "a" },
			want:     []wantProblem{{"spec.etcdClusters[1].members[2].name", `"a" is used by another member of events`}},
		},
		{
			name:     "member name not a DNS label",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Members[2].Name = "C_1" },
			want:     []wantProblem{{"spec.etcdClusters[1].members[2].name", `"C_1" is not a valid member name`}},
		},
		{
			name:     "encrypted volume on local",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[0].Encrypted = ptr(true) },
			want:     []wantProblem{{"spec.etcdClusters[0].members[0].encrypted", "the local provider cannot encrypt volumes"}},
		},
		{
			name:     "volume type of another cloud",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[0].VolumeType = ptr("gp3") },
			want:     []wantProblem{{"spec.etcdClusters[0].members[0].volumeType", `"gp3" is not a volume type of local: want one of [sparse]`}},
		},
		{
			name:     "unknown aws volume type",
			cloud:    CloudAWS,
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Members[1].VolumeType = ptr("pd-ssd") },
			want:     []wantProblem{{"spec.etcdClusters[1].members[1].volumeType", `"pd-ssd" is not a volume type of aws`}},
		},
		{
			name:     "volume of 0 GiB",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].Members[1].VolumeSize = ptr[int32](0) },
			want:     []wantProblem{{"spec.etcdClusters[0].members[1].volumeSize", "0 GiB: must be at least 1"}},
		},
		{
			name:     "duplicate ports across etcd clusters",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].ClientPort = 4001 },
			want:     []wantProblem{{"spec.etcdClusters[1].clientPort", "port 4001 is already spec.etcdClusters[0].clientPort"}},
		},
		{
			name:     "duplicate ports in one etcd cluster",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].PeerPort = 4001 },
			want:     []wantProblem{{"spec.etcdClusters[0].peerPort", "port 4001 is already spec.etcdClusters[0].clientPort"}},
		},
		{
			name:     "a metrics port that is another cluster's metrics port",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].MetricsPort = 8081 },
			want:     []wantProblem{{"spec.etcdClusters[1].metricsPort", "port 8081 is already spec.etcdClusters[0].metricsPort"}},
		},
		{
			name:     "a metrics port that is a client port",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].MetricsPort = 4001 },
			want:     []wantProblem{{"spec.etcdClusters[1].metricsPort", "port 4001 is already spec.etcdClusters[0].clientPort"}},
		},
		{
			name:     "metrics port missing",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].MetricsPort = 0 },
			want:     []wantProblem{{"spec.etcdClusters[0].metricsPort", "0 is not a port: want 1-65535"}},
		},
		{
			name:     "port out of range",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[0].PeerPort = 65536 },
			want:     []wantProblem{{"spec.etcdClusters[0].peerPort", "65536 is not a port: want 1-65535"}},
		},
		{
			name: "etcd version, log level and image",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.EtcdClusters[0].Version = "3.5"
				c.Spec.EtcdClusters[0].LogLevel = "verbose"
				c.Spec.EtcdClusters[1].Image = ""
			},
			want: []wantProblem{
				{"spec.etcdClusters[0].version", `"3.5" is not a version: want MAJOR.MINOR.PATCH`},
				{"spec.etcdClusters[0].logLevel", `"verbose" is not one of debug, info, warn, error`},
				{"spec.etcdClusters[1].image", "required"},
			},
		},
		{
			name:     "two etcd clusters with one name",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Name = "main" },
			want:     []wantProblem{{"spec.etcdClusters[1].name", `"main" is used by another etcd cluster`}},
		},
		{
			name: "no main etcd cluster",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.EtcdClusters = []EtcdClusterSpec{{Name: "primary", Members: []EtcdMemberSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}
				return igs
			},
			want: []wantProblem{
				{"spec.etcdClusters", "the main etcd cluster is missing"},
				{"spec.kubeAPIServer.etcdServers", "required: the main etcd cluster's client URLs"},
			},
		},

		// networking
		{
			name: "overlapping pod and service CIDRs",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{PodCIDR: "100.64.0.0/11"}
				return igs
			},
			want: []wantProblem{{"spec.networking.podCIDR", "100.64.0.0/11 overlaps spec.networking.serviceClusterIPRange 100.64.0.0/13"}},
		},
		{
			name: "service range outside nonMasqueradeCIDR",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{ServiceClusterIPRange: "10.0.0.0/16"}
				return igs
			},
			want: []wantProblem{{"spec.networking.serviceClusterIPRange", "10.0.0.0/16 is not inside spec.networking.nonMasqueradeCIDR 100.64.0.0/10"}},
		},
		{
			name: "pod range larger than nonMasqueradeCIDR",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{PodCIDR: "100.0.0.0/8"}
				return igs
			},
			want: []wantProblem{
				{"spec.networking.podCIDR", "100.0.0.0/8 overlaps spec.networking.serviceClusterIPRange"},
				{"spec.networking.podCIDR", "100.0.0.0/8 is not inside spec.networking.nonMasqueradeCIDR 100.64.0.0/10"},
			},
		},
		{
			name: "not a CIDR, and host bits set",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{NonMasqueradeCIDR: "100.64.0.0/33", PodCIDR: "100.96.0.1/11"}
				return igs
			},
			want: []wantProblem{
				{"spec.networking.nonMasqueradeCIDR", `"100.64.0.0/33" is not a CIDR`},
				{"spec.networking.podCIDR", `"100.96.0.1/11" has host bits set: use 100.96.0.0/11`},
			},
		},
		{
			name: "cluster domain",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{ClusterDomain: "cluster..local"}
				return igs
			},
			want: []wantProblem{{"spec.networking.clusterDomain", `"cluster..local" is not a valid DNS name`}},
		},
		{
			name: "a pod network kubeup does not make",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{PodNetwork: "calico"}
				return igs
			},
			want: []wantProblem{{"spec.networking.podNetwork", `"calico" is not a pod network kubeup makes: kubenet (a bridge per node, routes between nodes; the default: leave the field out) or flannel`}},
		},
		{
			name: "kubenet without the nodes' ranges",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				no := false
				c.Spec.KubeControllerManager = &KubeControllerManagerConfig{AllocateNodeCIDRs: &no}
				return igs
			},
			want: []wantProblem{{"spec.kubeControllerManager.allocateNodeCIDRs", "false, but spec.networking.podNetwork kubenet routes each node's pod range, which kube-controller-manager allocates: leave the field out (true)"}},
		},
		{
			name: "flannel without the nodes' ranges",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				no := false
				c.Spec.Networking = &NetworkingSpec{PodNetwork: PodNetworkFlannel}
				c.Spec.KubeControllerManager = &KubeControllerManagerConfig{AllocateNodeCIDRs: &no}
				return igs
			},
			want: []wantProblem{{"spec.kubeControllerManager.allocateNodeCIDRs", "false, but spec.networking.podNetwork flannel takes each node's flannel subnet from its pod range, which kube-controller-manager allocates (flannel's kube subnet manager): leave the field out (true)"}},
		},
		{
			name: "flannel's image bad",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Networking = &NetworkingSpec{PodNetwork: PodNetworkFlannel}
				c.Spec.Addons = &AddonsSpec{Flannel: &FlannelAddon{Image: "flannel 0.28"}}
				return igs
			},
			want: []wantProblem{{"spec.addons.flannel.image", `"flannel 0.28" is not a container image reference`}},
		},
		{
			name: "flannel's addon without flannel",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Addons = &AddonsSpec{Flannel: &FlannelAddon{Image: DefaultFlannelImage}}
				return igs
			},
			want: []wantProblem{{"spec.addons.flannel", "set, but spec.networking.podNetwork is kubenet: flannel runs only when the pod network is flannel; leave spec.addons.flannel out"}},
		},

		// names
		{
			name: "metadata.name not a DNS name",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = "demo_1.example.com"
				c.Spec.API = &APISpec{PublicName: "api.demo.example.com", InternalName: "api.internal.demo.example.com"}
				return igs
			},
			want: []wantProblem{{"metadata.name", `"demo_1.example.com" is not a valid DNS name`}},
		},
		{
			name: "metadata.name of one label",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = "demo"
				return igs
			},
			want: []wantProblem{
				{"metadata.name", `"demo" must have at least 2 dot-separated labels`},
			},
		},
		{
			name: "metadata.name missing",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = ""
				c.Spec.DNSZone = "example.com"
				c.Spec.API = &APISpec{PublicName: "api.example.com", InternalName: "api.internal.example.com"}
				return igs
			},
			want: []wantProblem{{"metadata.name", "required"}},
		},
		{
			name: "dnsZone not a DNS name",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.DNSZone = "Example.com"
				return igs
			},
			want: []wantProblem{{"spec.dnsZone", `"Example.com" is not a valid DNS name`}},
		},
		{
			name: "dnsZone that does not hold the cluster's name",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.DNSZone = "example.org"
				return igs
			},
			want: []wantProblem{
				{"spec.dnsZone", `"example.org" does not hold the cluster's name "demo.example.com": use "example.com" or a parent domain of it`},
				{"spec.api.publicName", `"api.demo.example.com" is not in spec.dnsZone "example.org"`},
				{"spec.api.internalName", `"api.internal.demo.example.com" is not in spec.dnsZone "example.org"`},
			},
		},
		{
			name: "dnsZone that only ends like the cluster's name",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.DNSZone = "ample.com"
				c.Spec.API = &APISpec{PublicName: "api.ample.com", InternalName: "api.internal.ample.com"}
				return igs
			},
			want: []wantProblem{{"spec.dnsZone", `"ample.com" does not hold the cluster's name "demo.example.com"`}},
		},
		{
			name: "api names: invalid, outside the zone, the same",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.API = &APISpec{PublicName: "api.demo.example.net", InternalName: "api.demo.example.net"}
				return igs
			},
			want: []wantProblem{
				{"spec.api.publicName", `"api.demo.example.net" is not in spec.dnsZone "example.com"`},
				{"spec.api.internalName", `"api.demo.example.net" is not in spec.dnsZone "example.com"`},
				{"spec.api.internalName", `must differ from spec.api.publicName "api.demo.example.net"`},
			},
		},
		{
			name: "api name not a DNS name",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.API = &APISpec{InternalName: "-api.internal.demo.example.com"}
				return igs
			},
			want: []wantProblem{{"spec.api.internalName", `"-api.internal.demo.example.com" is not a valid DNS name`}},
		},

		// cluster
		{
			name: "no control-plane instance group",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup { return igs[len(igs)-1:] },
			want: []wantProblem{
				{"instancegroups", "no control-plane instance group: add one with spec.role: ControlPlane"},
			},
		},
		{
			name: "unparseable kubernetesVersion",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "1.34"
				return igs
			},
			want: []wantProblem{{"spec.kubernetesVersion", `"1.34" is not a version: want MAJOR.MINOR.PATCH, for example 1.34.2`}},
		},
		{
			name: "unknown cloudProvider",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.CloudProvider = "azure"
				for _, ig := range igs {
					ig.Spec.MachineType, ig.Spec.Image = "Standard_D2s_v5", "debian-12"
				}
				return igs
			},
			want: []wantProblem{{"spec.cloudProvider", `"azure" is not supported: want aws, gce or local`}},
		},
		{
			name: "no cloudProvider",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.CloudProvider = ""
				for _, ig := range igs {
					ig.Spec.MachineType, ig.Spec.Image = "local", "debian-12"
				}
				return igs
			},
			want: []wantProblem{{"spec.cloudProvider", "required: aws, gce or local"}},
		},
		{
			name:     "missing region for aws",
			cloud:    CloudAWS,
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.Region = "" },
			want:     []wantProblem{{"spec.region", "required for cloudProvider aws"}},
		},
		{
			name:  "aws zones outside the region",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Region = "us-west-2"
				return igs
			},
			want: []wantProblem{
				{"spec.zones[0]", `"us-east-1a" is not a zone of spec.region "us-west-2"`},
				{"spec.zones[1]", `"us-east-1b" is not a zone of spec.region "us-west-2"`},
				{"spec.zones[2]", `"us-east-1c" is not a zone of spec.region "us-west-2"`},
			},
		},
		{
			name:  "missing project for gce",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Project = ""
				return igs
			},
			want: []wantProblem{{"spec.project", "required for cloudProvider gce"}},
		},
		{
			name: "zones: none",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Zones = nil
				return igs[:len(igs)-1]
			},
			want: []wantProblem{
				{"spec.zones", "required: at least one zone"},
				{"spec.etcdClusters[0].members[0].zone", `"a" is not one of spec.zones []`},
				{"spec.etcdClusters[0].members[1].zone", `"b" is not one of spec.zones []`},
				{"spec.etcdClusters[0].members[2].zone", `"c" is not one of spec.zones []`},
				{"spec.etcdClusters[1].members[0].zone", `"a" is not one of spec.zones []`},
				{"spec.etcdClusters[1].members[1].zone", `"b" is not one of spec.zones []`},
				{"spec.etcdClusters[1].members[2].zone", `"c" is not one of spec.zones []`},
				{"instancegroup/control-plane-a: spec.zones[0]", `"a" is not one of the cluster's spec.zones []`},
				{"instancegroup/control-plane-b: spec.zones[0]", `"b" is not one of the cluster's spec.zones []`},
				{"instancegroup/control-plane-c: spec.zones[0]", `"c" is not one of the cluster's spec.zones []`},
			},
		},
		{
			name: "zones: invalid and listed twice",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.Zones = append(c.Spec.Zones, "B", "a")
			},
			want: []wantProblem{
				{"spec.zones[3]", `"B" is not a valid zone name`},
				{"spec.zones[4]", `"a" is listed twice`},
			},
		},
		{
			name: "configBase of an unknown scheme, with no local paths",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.ConfigBase = "ftp://host/demo"
				return igs
			},
			want: []wantProblem{
				{"spec.local.poolDir", "required when the state store is not file://"},
				{"spec.local.zoneFile", "required when the state store is not file://"},
				{"spec.configBase", `"ftp://host/demo" is not a state store URL`},
			},
		},
		{
			name: "relative local paths",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Local = &LocalSpec{PoolDir: "pool", ZoneFile: "dns/example.com.zone"}
				return igs
			},
			want: []wantProblem{
				{"spec.local.poolDir", `"pool" must be an absolute path`},
				{"spec.local.zoneFile", `"dns/example.com.zone" must be an absolute path`},
			},
		},

		// instance groups
		{
			name: "instance group name, role and zones",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				nodes := group(igs, "nodes")
				nodes.Metadata.Name = "Nodes"
				nodes.Spec.Role = "Worker"
				nodes.Spec.Zones = []string{"a", "d"}
				return igs
			},
			want: []wantProblem{
				{"instancegroup/Nodes: metadata.name", `"Nodes" is not a valid name`},
				{"instancegroup/Nodes: spec.role", `"Worker" is not a role: want ControlPlane or Node`},
				{"instancegroup/Nodes: spec.zones[1]", `"d" is not one of the cluster's spec.zones [a b c]`},
			},
		},
		{
			name: "instance group without a name, role or zones",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				return append(igs, &InstanceGroup{})
			},
			want: []wantProblem{
				{"instancegroup (unnamed): metadata.name", "required"},
				{"instancegroup (unnamed): spec.role", "required: ControlPlane or Node"},
				{"instancegroup (unnamed): spec.zones", "required: at least one of spec.zones [a b c]"},
			},
		},
		{
			name: "two instance groups with one name",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				extra := newInstanceGroup("nodes", RoleNode, []string{"a"}, 1)
				return append(igs, extra)
			},
			want: []wantProblem{{"instancegroup/nodes: metadata.name", `"nodes" is used by another instance group`}},
		},
		{
			name: "instance group sizes, machine type and image",
			complete: func(_ *Cluster, igs []*InstanceGroup) {
				nodes := group(igs, "nodes")
				nodes.Spec.MinSize = ptr[int32](3)
				nodes.Spec.MaxSize = ptr[int32](2)
				nodes.Spec.MachineType = ""
				cp := group(igs, "control-plane-b")
				cp.Spec.MinSize = ptr[int32](-1)
				cp.Spec.Image = ""
			},
			want: []wantProblem{
				{"instancegroup/control-plane-b: spec.image", "required"},
				{"instancegroup/control-plane-b: spec.minSize", "-1: must not be negative"},
				{"instancegroup/nodes: spec.machineType", "required"},
				{"instancegroup/nodes: spec.maxSize", "2 is smaller than spec.minSize 3"},
			},
		},
	})
}

// setMembers leaves one etcd cluster, main, with the members ms.
func setMembers(c *Cluster, igs []*InstanceGroup, ms ...EtcdMemberSpec) []*InstanceGroup {
	c.Spec.EtcdClusters = []EtcdClusterSpec{{Name: "main", Members: ms}}
	return igs
}

// manyProblems is a spec with a problem in nearly every part.
func manyProblems(t testing.TB) (*Cluster, []*InstanceGroup) {
	c, igs := userSpec(t, CloudAWS, 3)
	c.Spec.KubernetesVersion = "latest"
	c.Spec.DNSZone = "example.org"
	c.Spec.Networking = &NetworkingSpec{PodCIDR: "100.64.0.0/12", ServiceClusterIPRange: "10.0.0.0/24"}
	c.Spec.EtcdClusters = []EtcdClusterSpec{
		{Name: "main", Members: []EtcdMemberSpec{{Name: "a"}, {Name: "b"}}},
		{Name: "events", ClientPort: 4001, Members: []EtcdMemberSpec{
			{Name: "a"}, {Name: "b", InstanceGroup: "nodes"}, {Name: "z", InstanceGroup: "control-plane-z", Zone: "us-east-1z"}}},
	}
	c.Spec.KubeProxy = &KubeProxyConfig{ProxyMode: "userspace"}
	group(igs, "nodes").Spec.MaxSize = ptr[int32](1)
	group(igs, "control-plane-c").Spec.Zones = []string{"us-east-1c", "us-east-1d"}
	return Complete(c, igs)
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c, igs := manyProblems(t)
	err := Validate("cluster.yaml", c, igs)
	if err == nil {
		t.Fatal("Validate found no problem")
	}
	golden.Assert(t, "testdata/validate-many-problems.golden", []byte(err.Error()+"\n"))
}

func TestValidateOrderIsDeterministic(t *testing.T) {
	c, igs := manyProblems(t)
	first := problemsOf(t, Validate("cluster.yaml", c, igs))
	for range 20 {
		c, igs := manyProblems(t)
		if diff := cmp.Diff(first, problemsOf(t, Validate("cluster.yaml", c, igs))); diff != "" {
			t.Fatalf("Validate gave the problems in another order (-first +now):\n%s", diff)
		}
	}
}

func TestValidateDoesNotChangeTheSpec(t *testing.T) {
	c, igs := manyProblems(t)
	before := encodeSpec(t, c, igs)
	_ = Validate("cluster.yaml", c, igs)
	if diff := cmp.Diff(string(before), string(encodeSpec(t, c, igs))); diff != "" {
		t.Errorf("Validate changed the spec (-before +after):\n%s", diff)
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    [3]int
		wantErr bool
	}{
		{in: "1.34.2", want: [3]int{1, 34, 2}},
		{in: "v1.33.0", want: [3]int{1, 33, 0}},
		{in: "1.35.0-alpha.1", want: [3]int{1, 35, 0}},
		{in: "1.34", wantErr: true},
		{in: "01.34.2", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			major, minor, patch, err := ParseVersion(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseVersion(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, [3]int{major, minor, patch}); diff != "" {
				t.Errorf("ParseVersion(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
