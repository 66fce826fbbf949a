package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewCluster(t *testing.T) {
	// group is an instance group in short: name, role, zones and size.
	type group struct {
		Name  string
		Role  string
		Zones []string
		Size  int32
	}
	tests := []struct {
		name       string
		opts       NewClusterOptions
		wantSpec   ClusterSpec
		wantGroups []group
	}{
		{
			name:     "one control plane, no nodes",
			opts:     NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"}, ControlPlaneCount: 1},
			wantSpec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"}},
			wantGroups: []group{
				{"control-plane-a", RoleControlPlane, []string{"a"}, 1},
			},
		},
		{
			name: "three control planes and nodes",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"},
				ControlPlaneCount: 3, NodeCount: 4, KubernetesVersion: "1.33.5", DNSZone: "demo.example.com"},
			wantSpec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"}, KubernetesVersion: "1.33.5",
				DNSZone: "demo.example.com"},
			wantGroups: []group{
				{"control-plane-a", RoleControlPlane, []string{"a"}, 1},
				{"control-plane-b", RoleControlPlane, []string{"b"}, 1},
				{"control-plane-c", RoleControlPlane, []string{"c"}, 1},
				{"nodes", RoleNode, []string{"a", "b", "c"}, 4},
			},
		},
		{
			name: "five control planes over three zones",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"},
				ControlPlaneCount: 5},
			wantSpec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"}},
			wantGroups: []group{
				{"control-plane-a-1", RoleControlPlane, []string{"a"}, 1},
				{"control-plane-b-1", RoleControlPlane, []string{"b"}, 1},
				{"control-plane-c", RoleControlPlane, []string{"c"}, 1},
				{"control-plane-a-2", RoleControlPlane, []string{"a"}, 1},
				{"control-plane-b-2", RoleControlPlane, []string{"b"}, 1},
			},
		},
		{
			name: "three control planes in one zone",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"},
				ControlPlaneCount: 3, NodeCount: 1},
			wantSpec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a"}},
			wantGroups: []group{
				{"control-plane-a-1", RoleControlPlane, []string{"a"}, 1},
				{"control-plane-a-2", RoleControlPlane, []string{"a"}, 1},
				{"control-plane-a-3", RoleControlPlane, []string{"a"}, 1},
				{"nodes", RoleNode, []string{"a"}, 1},
			},
		},
		{
			name: "aws zones are named by their letter",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS,
				Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, ControlPlaneCount: 3, NodeCount: 2,
				VPC: testVPC, Subnets: []string{testSubnet("a"), testSubnet("b"), testSubnet("c")},
				NodeupURL: testNodeupURL, NodeupSHA256: testNodeupSHA256},
			wantSpec: ClusterSpec{CloudProvider: CloudAWS, Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
				AWS: &AWSSpec{VPCID: testVPC, Subnets: []AWSSubnetSpec{
					{"us-east-1a", testSubnet("a")}, {"us-east-1b", testSubnet("b")}, {"us-east-1c", testSubnet("c")},
				}},
				Nodeup: &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}},
			wantGroups: []group{
				{"control-plane-a", RoleControlPlane, []string{"us-east-1a"}, 1},
				{"control-plane-b", RoleControlPlane, []string{"us-east-1b"}, 1},
				{"control-plane-c", RoleControlPlane, []string{"us-east-1c"}, 1},
				{"nodes", RoleNode, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, 2},
			},
		},
		{
			name: "gce zones and project",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Project: "kubeup-demo",
				Zones: []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}, ControlPlaneCount: 3,
				Network: testNetwork, Subnetworks: []string{testSubnetwork},
				NodeupURL: testNodeupURL, NodeupSHA256: testNodeupSHA256},
			wantSpec: ClusterSpec{CloudProvider: CloudGCE, Project: "kubeup-demo",
				Zones:  []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"},
				GCE:    &GCESpec{Network: testNetwork, Subnetworks: []GCESubnetworkSpec{{"europe-west1", testSubnetwork}}},
				Nodeup: &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}},
			wantGroups: []group{
				{"control-plane-b", RoleControlPlane, []string{"europe-west1-b"}, 1},
				{"control-plane-c", RoleControlPlane, []string{"europe-west1-c"}, 1},
				{"control-plane-d", RoleControlPlane, []string{"europe-west1-d"}, 1},
			},
		},
		{
			name: "zones whose short names are the same keep their whole name",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Project: "kubeup-demo",
				Zones: []string{"us-central1-a", "us-east1-a", "us-east1-b"}, ControlPlaneCount: 3,
				Network: testNetwork, Subnetworks: []string{"us-east1=east", "us-central1=central"},
				NodeupURL: testNodeupURL, NodeupSHA256: testNodeupSHA256},
			wantSpec: ClusterSpec{CloudProvider: CloudGCE, Project: "kubeup-demo",
				Zones: []string{"us-central1-a", "us-east1-a", "us-east1-b"},
				GCE: &GCESpec{Network: testNetwork, Subnetworks: []GCESubnetworkSpec{
					{"us-central1", "central"}, {"us-east1", "east"}}},
				Nodeup: &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}},
			wantGroups: []group{
				{"control-plane-us-central1-a", RoleControlPlane, []string{"us-central1-a"}, 1},
				{"control-plane-us-east1-a", RoleControlPlane, []string{"us-east1-a"}, 1},
				{"control-plane-b", RoleControlPlane, []string{"us-east1-b"}, 1},
			},
		},
		{
			name: "numbered local zones",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"zone-1", "zone-2", "zone-3"},
				ControlPlaneCount: 3},
			wantSpec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"zone-1", "zone-2", "zone-3"}},
			wantGroups: []group{
				{"control-plane-1", RoleControlPlane, []string{"zone-1"}, 1},
				{"control-plane-2", RoleControlPlane, []string{"zone-2"}, 1},
				{"control-plane-3", RoleControlPlane, []string{"zone-3"}, 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, igs, err := NewCluster(tt.opts)
			if err != nil {
				t.Fatalf("NewCluster: %v", err)
			}
			want := &Cluster{APIVersion: APIVersion, Kind: KindCluster, Metadata: ObjectMeta{Name: tt.opts.Name}, Spec: tt.wantSpec}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("cluster (-want +got):\n%s", diff)
			}
			var got []group
			for _, ig := range igs {
				if ig.APIVersion != APIVersion || ig.Kind != KindInstanceGroup {
					t.Errorf("instance group %s is %s %s", ig.Metadata.Name, ig.APIVersion, ig.Kind)
				}
				if *ig.Spec.MinSize != *ig.Spec.MaxSize {
					t.Errorf("instance group %s: minSize %d, maxSize %d", ig.Metadata.Name, *ig.Spec.MinSize, *ig.Spec.MaxSize)
				}
				got = append(got, group{ig.Metadata.Name, ig.Spec.Role, ig.Spec.Zones, *ig.Spec.MinSize})
			}
			if diff := cmp.Diff(tt.wantGroups, got); diff != "" {
				t.Errorf("instance groups (-want +got):\n%s", diff)
			}

			// What create cluster writes is valid once complete, and has one etcd member per control plane.
			c.Spec.ConfigBase = map[string]string{CloudAWS: "s3://state/", CloudGCE: "gs://state/"}[c.Spec.CloudProvider] + c.Metadata.Name
			if c.Spec.CloudProvider == CloudLocal {
				c.Spec.ConfigBase = "file:///tmp/s/" + c.Metadata.Name
			}
			cc, cigs := Complete(c, igs)
			if err := Validate("new cluster", cc, cigs); err != nil {
				t.Errorf("the complete spec is not valid: %v", err)
			}
			controlPlanes := 0
			for _, g := range tt.wantGroups {
				if g.Role == RoleControlPlane {
					controlPlanes++
				}
			}
			for _, e := range cc.Spec.EtcdClusters {
				if len(e.Members) != controlPlanes {
					t.Errorf("etcd cluster %s has %d members, want %d", e.Name, len(e.Members), controlPlanes)
				}
			}
		})
	}
}

func TestNewClusterDoesNotShareZones(t *testing.T) {
	zones := []string{"a", "b"}
	c, igs, err := NewCluster(NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: zones, ControlPlaneCount: 1, NodeCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	zones[0] = "changed"
	igs[len(igs)-1].Spec.Zones[1] = "changed too"
	if diff := cmp.Diff([]string{"a", "b"}, c.Spec.Zones); diff != "" {
		t.Errorf("spec.zones (-want +got):\n%s", diff)
	}
}

func TestNewClusterErrors(t *testing.T) {
	tests := []struct {
		name string
		opts NewClusterOptions
		want string
	}{
		{
			name: "no zones",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, ControlPlaneCount: 1},
			want: "--zones is required: the zones to run in, for example a,b,c",
		},
		{
			name: "a name longer than DNS allows, and than a file name",
			opts: NewClusterOptions{Name: strings.Repeat("a", 300) + ".example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1},
			want: `--name "` + strings.Repeat("a", MaxEcho) + `"... (312 bytes): cluster name: "` + strings.Repeat("a", MaxEcho) + `"... (312 bytes) is longer than 253 characters`,
		},
		{
			name: "a label longer than DNS allows",
			opts: NewClusterOptions{Name: strings.Repeat("a", 64) + ".example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1},
			want: `--name "` + strings.Repeat("a", 64) + `.example.com": cluster name: "` + strings.Repeat("a", 64) + `.example.com" is not a valid DNS name: each dot-separated label must be 1-63 lowercase letters, digits or '-', not starting or ending with '-'`,
		},
		{
			name: "a name of four full labels",
			opts: NewClusterOptions{Name: strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1},
			want: `--name "` + (strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com")[:MaxEcho] + `"... (259 bytes): cluster name: "` + (strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com")[:MaxEcho] + `"... (259 bytes) is longer than 253 characters`,
		},
		{
			name: "a name too long for the names derived from it",
			opts: NewClusterOptions{Name: strings.Repeat(strings.Repeat("a", 63)+".", 3) + "com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1},
			want: `--name "` + strings.Repeat(strings.Repeat("a", 63)+".", 3) + `com" is too long: the volume of etcd member a of events, "a.etcd-events.aaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", would be 209 characters, more than the 200 the local provider's volumes take; use a name of at most 186 characters`,
		},
		{
			name: "the longest name the local provider takes",
			opts: NewClusterOptions{Name: strings.Repeat(strings.Repeat("a", 63)+".", 2) + strings.Repeat("a", 54) + ".com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1},
		},
		{
			name: "negative control-plane count",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: -1},
			want: "--control-plane-count -1: a cluster needs a control plane to run its API and etcd: use 1, 3 or 5",
		},
		{
			name: "seven control-plane nodes",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 7},
			want: "--control-plane-count 7: use 1, 3 or 5: each control-plane node runs a member of each etcd cluster, which needs an odd number of members to keep a quorum, and kubeup runs at most 5",
		},
		{
			name: "two control-plane nodes",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a", "b"}, ControlPlaneCount: 2},
			want: "--control-plane-count 2: use 1, 3 or 5: each control-plane node runs a member of each etcd cluster, which needs an odd number of members to keep a quorum, and kubeup runs at most 5",
		},
		{
			name: "negative node count",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1, NodeCount: -2},
			want: "--node-count -2: must not be negative",
		},
		{
			name: "aws flags on local",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, VPC: testVPC},
			want: "--vpc is for --cloud aws, not --cloud local",
		},
		{
			name: "subnets on gce",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Zones: []string{"a"}, Subnets: []string{"subnet-1"}},
			want: "--subnets is for --cloud aws, not --cloud gce",
		},
		{
			name: "instance profile on local",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, InstanceProfile: "p"},
			want: "--instance-profile is for --cloud aws, not --cloud local",
		},
		{
			name: "nodeup on local",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, NodeupSHA256: testNodeupSHA256},
			want: "--nodeup-sha256 is for the clouds whose machines fetch nodeup at boot (aws, gce), not --cloud local",
		},
		{
			name: "project on aws",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a"}, Project: "p"},
			want: "--project is for --cloud gce, not --cloud aws",
		},
		{
			name: "network on aws",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a"}, Network: "n"},
			want: "--network is for --cloud gce, not --cloud aws",
		},
		{
			name: "subnetwork on local",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudLocal, Zones: []string{"a"}, Subnetworks: []string{"s"}},
			want: "--subnetwork is for --cloud gce, not --cloud local",
		},
		{
			name: "subnetwork names without their regions",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Zones: []string{"us-east1-b", "us-west1-a"}, Subnetworks: []string{"a", "b"}},
			want: "--subnetwork a,b: give one subnetwork as REGION=NAME per region of --zones (us-east1,us-west1), or a single NAME that every region's subnetwork has",
		},
		{
			name: "a subnetwork of another region",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Zones: []string{"us-east1-b"}, Subnetworks: []string{"us-west1=a"}},
			want: `--subnetwork: "us-west1=a": region "us-west1" is not a region of --zones us-east1-b (us-east1)`,
		},
		{
			name: "a region twice",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudGCE, Zones: []string{"us-east1-b"}, Subnetworks: []string{"us-east1=a", "us-east1=b"}},
			want: `--subnetwork: region "us-east1" is given twice: one subnetwork per region`,
		},
		{
			name: "fewer subnets than zones",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a", "us-east-1b"}, Subnets: []string{"subnet-1"}},
			want: "--subnets: 1 subnet ids for 2 zones (us-east-1a,us-east-1b): give one subnet per zone, in the order of --zones, or ZONE=ID pairs",
		},
		{
			name: "ids and pairs mixed",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a", "us-east-1b"}, Subnets: []string{"us-east-1a=subnet-1", "subnet-2"}},
			want: "--subnets us-east-1a=subnet-1,subnet-2: give every subnet as an id (in the order of --zones) or every one as ZONE=ID, not a mix",
		},
		{
			name: "a pair of another zone",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a"}, Subnets: []string{"us-east-1d=subnet-1"}},
			want: `--subnets: "us-east-1d=subnet-1": zone "us-east-1d" is not one of --zones us-east-1a`,
		},
		{
			name: "a zone twice",
			opts: NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS, Zones: []string{"us-east-1a"}, Subnets: []string{"us-east-1a=subnet-1", "us-east-1a=subnet-2"}},
			want: `--subnets: zone "us-east-1a" is given twice: one subnet per zone`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := NewCluster(tt.opts)
			if tt.want == "" {
				if err != nil {
					t.Errorf("NewCluster(%+v): %v", tt.opts, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewCluster(%+v) returned no error", tt.opts)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %q\nwant %q", err, tt.want)
			}
		})
	}
}

func TestNewClusterSubnetPairs(t *testing.T) {
	c, igs, err := NewCluster(NewClusterOptions{Name: "demo.example.com", CloudProvider: CloudAWS,
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, VPC: testVPC, InstanceProfile: "nodes-profile",
		Subnets: []string{"us-east-1c=" + testSubnet("c"), "us-east-1a=" + testSubnet("a")}})
	if err != nil {
		t.Fatal(err)
	}
	want := &AWSSpec{VPCID: testVPC, InstanceProfile: "nodes-profile",
		Subnets: []AWSSubnetSpec{{"us-east-1a", testSubnet("a")}, {"us-east-1c", testSubnet("c")}}}
	if diff := cmp.Diff(want, c.Spec.AWS); diff != "" {
		t.Errorf("spec.aws (-want +got):\n%s", diff)
	}
	// The zone left out is validation's to name.
	c.Spec.ConfigBase = "s3://state/demo.example.com"
	c.Spec.Nodeup = &NodeupSpec{URL: testNodeupURL, SHA256: testNodeupSHA256}
	full, fullIGs := Complete(c, igs)
	matchProblems(t, []wantProblem{
		{"spec.aws.subnets", `zone "us-east-1b" has no subnet: add {zone: us-east-1b, id: subnet-...}$`},
	}, problemsOf(t, Validate("test", full, fullIGs)))
}

// TestValidateRefusesMoreThanFiveMembers: a spec written by hand with 7 or 127 control-plane groups (their members
// defaulted, or listed) is refused at the members' path: kubeup runs etcd clusters of 1, 3 or 5 members, and a
// dry run of 127 took 11 s and 0.9 GB.
func TestValidateRefusesMoreThanFiveMembers(t *testing.T) {
	for _, n := range []int{7, 127} {
		c, igs := userSpec(t, CloudLocal, 5)
		for i := 5; i < n; i++ {
			igs = append(igs, newInstanceGroup(fmt.Sprintf("control-plane-x%d", i), RoleControlPlane, []string{"a"}, 1))
		}
		full, fullIGs := Complete(c, igs)
		var found []string
		for _, p := range problemsOf(t, Validate("spec.yaml", full, fullIGs)) {
			found = append(found, p.String())
		}
		for _, e := range []string{"main", "events"} {
			i := slices.IndexFunc(full.Spec.EtcdClusters, func(ec EtcdClusterSpec) bool { return ec.Name == e })
			want := fmt.Sprintf("spec.etcdClusters[%d].members: %d members (one per ControlPlane instance group when the spec leaves them out): kubeup runs 1, 3 or 5", i, n)
			if !slices.ContainsFunc(found, func(p string) bool { return strings.HasPrefix(p, want) }) {
				t.Errorf("%d members: want a problem %q, got %q", n, want, found)
			}
		}
	}
	c, igs := completeSpec(t, CloudLocal, 5)
	if err := Validate("spec.yaml", c, igs); err != nil {
		t.Errorf("5 members: %v", err)
	}
}
