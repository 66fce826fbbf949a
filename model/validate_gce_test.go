package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateGCE(t *testing.T) {
	gce := func(f func(g *GCESpec)) func(*Cluster, []*InstanceGroup) []*InstanceGroup {
		return func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup { f(c.Spec.GCE); return igs }
	}
	runValidateCases(t, []validateCase{
		{
			name:  "no spec.gce",
			cloud: CloudGCE,
			user:  func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup { c.Spec.GCE = nil; return igs },
			want: []wantProblem{
				{"spec.gce.network", "required: the name of the VPC network the cluster runs in (kubeup create cluster --network)$"},
				{"spec.gce.subnetworks", `required: one subnetwork per region of spec.zones [europe-west1]`},
			},
		},
		{
			name:  "a project id that is not one",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Project = "My_Project"
				return igs
			},
			want: []wantProblem{{"spec.project", `"My_Project" is not a GCP project id`}},
		},
		{
			name:  "a domain-scoped project id is one",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Project = "example.com:kubeup-demo"
				return igs
			},
		},
		{
			name:  "names that are not GCE's",
			cloud: CloudGCE,
			user: gce(func(g *GCESpec) {
				g.Network = "My.Network"
				g.Subnetworks[0].Name = "sub-"
			}),
			want: []wantProblem{
				{"spec.gce.network", `"My.Network" is not a GCE name: 1-63 lower-case letters, digits and '-', starting with a letter and not ending with '-'`},
				{"spec.gce.subnetworks[0].name", `"sub-" is not a GCE name`},
			},
		},
		{
			name:  "a region without a subnetwork, a subnetwork of another region, a region twice",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Zones = append(c.Spec.Zones, "us-central1-a")
				c.Spec.GCE.Subnetworks = []GCESubnetworkSpec{
					{"europe-west1", "a"}, {"europe-west4", "b"}, {"europe-west1", "c"}, {"", "d"},
				}
				return igs
			},
			want: []wantProblem{
				{"spec.gce.subnetworks[1].region", `"europe-west4" is not a region of spec.zones [europe-west1 us-central1]`},
				{"spec.gce.subnetworks[2].region", `"europe-west1" has another subnetwork already: one subnetwork per region`},
				{"spec.gce.subnetworks[3].region", "required: one of the regions of spec.zones"},
				{"spec.gce.subnetworks", `region "us-central1" has no subnetwork: add {region: us-central1, name: NAME}`},
			},
		},
		{
			name:  "zones that are not GCE's",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.Zones = append(c.Spec.Zones, "us-east-1a")
				c.Spec.GCE.Subnetworks = append(c.Spec.GCE.Subnetworks, GCESubnetworkSpec{"us-east", "s"})
				return igs
			},
			want: []wantProblem{{"spec.zones[3]", `"us-east-1a" is not a GCE zone: want REGION-LETTER, for example europe-west1-b`}},
		},
		{
			name:  "service accounts",
			cloud: CloudGCE,
			user:  gce(func(g *GCESpec) { g.ServiceAccount = "kubeup nodes" }),
			want:  []wantProblem{{"spec.gce.serviceAccount", `"kubeup nodes" is not a service account: want its email (NAME@PROJECT.iam.gserviceaccount.com) or "default"`}},
		},
		{
			name:  "a service account's email",
			cloud: CloudGCE,
			user:  gce(func(g *GCESpec) { g.ServiceAccount = "123456789012-compute@developer.gserviceaccount.com" }),
		},
		{
			name:  "access CIDRs",
			cloud: CloudGCE,
			user: gce(func(g *GCESpec) {
				g.APIAccess = []string{"203.0.113.7/24"}
				g.SSHAccess = []string{"10.0.0.1"}
			}),
			want: []wantProblem{
				{"spec.gce.apiAccess[0]", `"203.0.113.7/24" has host bits set: use 203.0.113.0/24`},
				{"spec.gce.sshAccess[0]", `"10.0.0.1" is not a CIDR`},
			},
		},
		{
			name:  "a gce cluster's state store is on GCS",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.ConfigBase = "s3://kubeup-state/demo.example.com"
				return igs
			},
			want: []wantProblem{{"spec.configBase", `"s3://kubeup-state/demo.example.com": nodes read their configuration from the state store: a gce cluster's store must be gs://BUCKET`}},
		},
		{
			name: "spec.gce on another cloud",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.GCE = &GCESpec{Network: testNetwork}
				return igs
			},
			want: []wantProblem{{"spec.gce", "is for cloudProvider gce only, and cloudProvider is local: remove it"}},
		},
		{
			name:  "machine types and images",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				group(igs, "control-plane-b").Spec.MachineType = "t3.medium"
				group(igs, "control-plane-c").Spec.Image = "debian{12}"
				group(igs, "control-plane-d").Spec.Image = "projects/debian-cloud/global/images/family/debian-12"
				group(igs, "nodes").Spec.MachineType = "n2-custom-4-8192"
				group(igs, "nodes").Spec.Image = "https://compute.googleapis.com/compute/v1/projects/my-images/global/images/kubeup-node-1"
				return igs
			},
			want: []wantProblem{
				{"instancegroup/control-plane-b: spec.machineType", `"t3.medium" is not a GCE machine type: want lower-case FAMILY-TYPE, for example e2-standard-2`},
				{"instancegroup/control-plane-c: spec.image", `"debian{12}" is not a GCE image`},
			},
		},
	})
}

func TestCompleteGCE(t *testing.T) {
	c, igs := userSpec(t, CloudGCE, 1)
	c.Spec.GCE.SSHAccess = []string{"192.0.2.0/24"}
	c.Spec.GCE.Subnetworks[0].Region = ""
	full, _ := Complete(c, igs)
	want := &GCESpec{Network: testNetwork, Subnetworks: []GCESubnetworkSpec{{"europe-west1", testSubnetwork}},
		ServiceAccount: "default", APIAccess: []string{"0.0.0.0/0"}, SSHAccess: []string{"192.0.2.0/24"}}
	if diff := cmp.Diff(want, full.Spec.GCE); diff != "" {
		t.Errorf("spec.gce (-want +got):\n%s", diff)
	}
	// Over two regions, a subnetwork's region is the user's to say.
	c.Spec.Zones = append(c.Spec.Zones, "us-central1-a")
	if full, _ := Complete(c, igs); full.Spec.GCE.Subnetworks[0].Region != "" {
		t.Errorf("region %q defaulted over two regions", full.Spec.GCE.Subnetworks[0].Region)
	}
}

// TestStartupScript: the gce startup script is the aws user data's script, reading gs://, that exits at once
// after the first boot.
func TestStartupScript(t *testing.T) {
	c, igs := completeSpec(t, CloudGCE, 3)
	ig := findInstanceGroup(igs, "control-plane-b")
	s, err := StartupScript(c, ig, strings.Repeat("c0", 32))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "\nCONF='gs://kubeup-state/demo.example.com/nodeup/control-plane-b'\n") {
		t.Errorf("the startup script does not read gs://kubeup-state/demo.example.com/nodeup/control-plane-b:\n%s", s)
	}
	if !strings.Contains(s, "if [ -e '/etc/systemd/system/kubeup-nodeup.service' ]; then\n\texit 0\nfi\n") {
		t.Errorf("the startup script runs again once nodeup's unit is installed:\n%s", s)
	}
	c.Spec.ConfigBase = strings.Replace(c.Spec.ConfigBase, "gs://", "s3://", 1)
	ud, err := UserData(c, ig, strings.Repeat("c0", 32))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ud, "kubeup-nodeup.service") {
		t.Errorf("the user data (run once) checks for nodeup's unit:\n%s", ud)
	}
}

// TestValidateGCEEtcdLabel: each etcd disk's label value names every member of its cluster, and GCE takes 63
// characters.
func TestValidateGCEEtcdLabel(t *testing.T) {
	c, igs := userSpec(t, CloudGCE, 3)
	c, igs = Complete(c, igs)
	for i := range c.Spec.EtcdClusters[1].Members {
		c.Spec.EtcdClusters[1].Members[i].Name = strings.Repeat(string(rune('a'+i)), 20)
	}
	var want []wantProblem
	for i := range 3 {
		want = append(want, wantProblem{fmt.Sprintf("spec.etcdClusters[1].members[%d].name", i),
			"would be more than the 63 characters GCE takes a label value: use shorter member names$"})
	}
	matchProblems(t, want, problemsOf(t, Validate("test", c, igs)))
}
