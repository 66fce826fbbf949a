package gceprovider

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// gceGraph is the cloud graph of the test's gce cluster with controlPlanes control planes; edit changes its user
// spec first.
func gceGraph(t *testing.T, controlPlanes int, edit func(c *model.Cluster, igs []*model.InstanceGroup)) (*model.Cluster, []*model.InstanceGroup, *engine.Graph[*gcetasks.Cloud]) {
	t.Helper()
	c, igs := userSpec(t, controlPlanes)
	if edit != nil {
		edit(c, igs)
	}
	c, igs = model.Complete(c, igs)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	g, err := BuildCloudGraph(c, igs)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(engine.Apply); err != nil {
		t.Fatal(err)
	}
	return c, igs, g
}

// gceFields renders the fields of the graph's gce tasks that the model sets, one task a paragraph, sorted by key:
// what the cloud is asked for.
func gceFields(t *testing.T, g *engine.Graph[*gcetasks.Cloud]) []byte {
	t.Helper()
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return *p
	}
	num := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	labels := func(m map[string]string) string {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kv = append(kv, k+"="+m[k])
		}
		return strings.Join(kv, " ")
	}
	var out []string
	for _, task := range g.Tasks() {
		var f []string
		switch x := task.(type) {
		case *gcetasks.Network:
			f = []string{"name " + x.Name}
		case *gcetasks.Subnetwork:
			f = []string{"network " + x.Network.Name, "region " + x.Region}
		case *gcetasks.FirewallRule:
			var allowed []string
			for _, a := range x.Allowed {
				allowed = append(allowed, a.String())
			}
			f = []string{"network " + x.Network.Name, "source ranges " + strings.Join(x.SourceRanges, " "),
				"source tags " + strings.Join(x.SourceTags, " "), "target tags " + strings.Join(x.TargetTags, " "),
				"allowed " + strings.Join(allowed, " ")}
		case *gcetasks.FirewallRules:
			var keep []string
			for _, r := range x.Keep {
				keep = append(keep, r.Name)
			}
			f = []string{"cluster " + x.Cluster, "keep " + strings.Join(keep, " ")}
		case *gcetasks.Disk:
			f = []string{"zone " + str(x.Zone), "size " + num(x.SizeGB) + " type " + str(x.Type), "labels " + labels(x.Labels)}
		case *gcetasks.InstanceTemplate:
			var after []string
			for _, a := range x.After {
				after = append(after, a.Key().String())
			}
			f = []string{"machine type " + x.MachineType + " image " + x.Image, "service account " + str(x.ServiceAccount),
				"network " + x.Network.Name + " subnetwork " + x.Subnetwork.Region + "/" + x.Subnetwork.Name,
				"tags " + strings.Join(x.Tags, " "), "labels " + labels(x.Labels), "root disk " + num(x.RootDiskSizeGB),
				"startup script made after " + strings.Join(after, " "), fmt.Sprintf("can ip forward %t", x.CanIpForward)}
		case *gcetasks.InstanceGroupManager:
			f = []string{"zone " + str(x.Zone) + " target size " + num(x.TargetSize), "template " + x.Template.Name,
				"base instance name " + x.BaseInstanceName}
		default:
			continue // the tasks every cloud's graph holds: their golden is the local graph's
		}
		out = append(out, task.Key().String()+"\n    "+strings.Join(f, "\n    "))
	}
	slices.Sort(out)
	return []byte(strings.Join(out, "\n") + "\n")
}

func TestBuildGCECloudGraph(t *testing.T) {
	for _, controlPlanes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d control planes", controlPlanes), func(t *testing.T) {
			_, igs, g := gceGraph(t, controlPlanes, nil)
			golden.Assert(t, fmt.Sprintf("testdata/build-cloud-gce-%d.golden", controlPlanes), enginetest.TaskList(t, g.Tasks()))
			golden.Assert(t, fmt.Sprintf("testdata/build-cloud-gce-%d-fields.golden", controlPlanes), gceFields(t, g))

			count := map[string]int{}
			for _, task := range g.Tasks() {
				count[task.Key().Type]++
			}
			want := map[string]int{
				"Disk": 2 * controlPlanes, "InstanceTemplate": len(igs), "InstanceGroupManager": controlPlanes + 3,
				"FirewallRule": 6, "Network": 1, "Subnetwork": 1, // two of them let kubenet's pod range in
			}
			for typ, n := range want {
				if count[typ] != n {
					t.Errorf("%d %s tasks, want %d", count[typ], typ, n)
				}
			}
		})
	}
}

// TestGCEUnusedGroupsKeepsTheGraphsGroups: what an update deletes after the graph keeps each managed instance
// group of the graph and each group label of its templates (a group over two regions included).
func TestGCEUnusedGroupsKeepsTheGraphsGroups(t *testing.T) {
	c, igs, g := gceGraph(t, 3, func(c *model.Cluster, igs []*model.InstanceGroup) {
		c.Spec.Zones = append(c.Spec.Zones, "us-central1-a")
		c.Spec.GCE.Subnetworks = append(c.Spec.GCE.Subnetworks, model.GCESubnetworkSpec{Region: "us-central1", Name: "central"})
		n := group(igs, "nodes")
		n.Spec.Zones = append(n.Spec.Zones, "us-central1-a")
	})
	var managers, labels []string
	for _, task := range g.Tasks() {
		switch x := task.(type) {
		case *gcetasks.InstanceGroupManager:
			managers = append(managers, x.Key().Name)
		case *gcetasks.InstanceTemplate:
			if !slices.Contains(labels, x.Labels[LabelInstanceGroup]) {
				labels = append(labels, x.Labels[LabelInstanceGroup])
			}
		}
	}
	u := UnusedGroups(c, igs)
	if u.Cluster != c.Metadata.Name || u.GroupLabel != LabelInstanceGroup {
		t.Errorf("GCEUnusedGroups: cluster %q, label %q", u.Cluster, u.GroupLabel)
	}
	for _, x := range [][]string{managers, labels, u.Keep, u.Groups} {
		slices.Sort(x)
	}
	if !slices.Equal(u.Keep, managers) || len(managers) != 7 {
		t.Errorf("GCEUnusedGroups keeps %v, want the graph's managed instance groups %v", u.Keep, managers)
	}
	if !slices.Equal(u.Groups, labels) || len(labels) != len(igs) {
		t.Errorf("GCEUnusedGroups' groups %v, want the templates' labels %v", u.Groups, labels)
	}
}

// TestBuildGCECloudGraphRegions: a group over zones of two regions gets a template per region, each with its
// region's subnetwork, and its minSize is spread over its zones; ssh is let in from spec.gce.sshAccess.
func TestBuildGCECloudGraphRegions(t *testing.T) {
	_, _, g := gceGraph(t, 1, func(c *model.Cluster, igs []*model.InstanceGroup) {
		c.Spec.Zones = append(c.Spec.Zones, "us-central1-a")
		c.Spec.GCE.Subnetworks = append(c.Spec.GCE.Subnetworks, model.GCESubnetworkSpec{Region: "us-central1", Name: "central"})
		c.Spec.GCE.SSHAccess = []string{"192.0.2.0/24"}
		n := group(igs, "nodes")
		n.Spec.Zones = append(n.Spec.Zones, "us-central1-a")
		n.Spec.MinSize, n.Spec.MaxSize = ptr(int32(5)), ptr(int32(5))
	})
	var got []string
	for _, task := range g.Tasks() {
		switch x := task.(type) {
		case *gcetasks.InstanceTemplate:
			got = append(got, x.Name+" "+x.Subnetwork.Name)
		case *gcetasks.InstanceGroupManager:
			if strings.HasPrefix(x.Name, "nodes-") {
				got = append(got, fmt.Sprintf("%s %d %s", *x.Zone, *x.TargetSize, x.Template.Name))
			}
		case *gcetasks.FirewallRule:
			if len(x.SourceRanges) > 0 {
				got = append(got, x.Name+" "+strings.Join(x.SourceRanges, ","))
			}
		}
	}
	slices.Sort(got)
	want := []string{
		"control-plane-b-demo-example-com " + testSubnetwork,
		"europe-west1-b 2 nodes-europe-west1-demo-example-com",
		"europe-west1-c 1 nodes-europe-west1-demo-example-com",
		"europe-west1-d 1 nodes-europe-west1-demo-example-com",
		"kubeup-demo-example-com-control-plane-from-pods 100.96.0.0/11",
		"kubeup-demo-example-com-https 0.0.0.0/0",
		"kubeup-demo-example-com-node-from-pods 100.96.0.0/11",
		"kubeup-demo-example-com-ssh 192.0.2.0/24",
		"nodes-europe-west1-demo-example-com " + testSubnetwork,
		"nodes-us-central1-demo-example-com central",
		"us-central1-a 1 nodes-us-central1-demo-example-com",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildGCECloudGraphRefusesOtherClouds(t *testing.T) {
	c, igs := model.Complete(localSpec(t))
	if _, err := BuildCloudGraph(c, igs); err == nil {
		t.Error("BuildGCECloudGraph accepted a local cluster")
	}
}

// TestGCEStartupScript checks that each template's startup script pins its machines to the node configuration
// the graph writes for the group, read from gs://.
func TestGCEStartupScript(t *testing.T) {
	_, igs, g := gceGraph(t, 3, nil)
	for _, ig := range igs {
		task, ok := g.Lookup(engine.Key{Type: "InstanceTemplate", Name: ig.Metadata.Name + "-demo-example-com"})
		if !ok {
			t.Fatalf("no template of %s", ig.Metadata.Name)
		}
		it := task.(*gcetasks.InstanceTemplate)
		if it.StartupScript != nil {
			t.Errorf("%s: startup script set before the graph runs", it.Name)
		}
		if err := it.Resolve(); err != nil {
			t.Fatal(err)
		}
		conf, _ := g.Lookup(engine.Key{Type: "StoreFile", Name: model.NodeConfigPath("demo.example.com", ig.Metadata.Name)})
		obj, _, err := conf.(*storetasks.SecretFile[*gcetasks.Cloud]).Make()
		if err != nil {
			t.Fatal(err)
		}
		want, err := model.NodeConfigObjectSHA256("conf", []byte(obj.Reveal()))
		if err != nil {
			t.Fatal(err)
		}
		if m := confSHA256Line.FindStringSubmatch(*it.StartupScript); m == nil || m[1] != want {
			t.Errorf("%s: startup script pins %v, want the configuration's sha256 %s", it.Name, m, want)
		}
		if !strings.Contains(*it.StartupScript, "CONF='gs://kubeup-state/demo.example.com/nodeup/"+ig.Metadata.Name+"'\n") {
			t.Errorf("%s: startup script does not read gs://kubeup-state/demo.example.com/nodeup/%s:\n%s", it.Name, ig.Metadata.Name, *it.StartupScript)
		}
	}
}

func TestGCENames(t *testing.T) {
	long := strings.Repeat("d", 63) + ".example.com"
	for _, tt := range []struct{ got, want string }{
		{NetworkTag("demo.example.com", model.RoleControlPlane), "kubeup-demo-example-com-control-plane"},
		{NetworkTag("demo.example.com", model.RoleNode), "kubeup-demo-example-com-node"},
		{Image("p", "debian-cloud/debian-12"), "projects/debian-cloud/global/images/family/debian-12"},
		{Image("p", "my-image"), "projects/p/global/images/my-image"},
		{Image("p", "projects/x/global/images/y"), "projects/x/global/images/y"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for _, n := range []string{NetworkTag(long, model.RoleControlPlane), FirewallRuleName(long, "control-plane-from-node"),
		InstanceGroupManagerName(long, "nodes", "europe-west1-b")} {
		if !gceName.MatchString(n) {
			t.Errorf("%q is not a GCE name", n)
		}
	}
	if a, b := NetworkTag(long, model.RoleControlPlane), NetworkTag(long, model.RoleNode); a == b {
		t.Errorf("the roles' tags of a long cluster name are both %s", a)
	}
}

// confSHA256Line is the line of a startup script that pins the node configuration's sha256.
var confSHA256Line = regexp.MustCompile(`(?m)^CONF_SHA256='([0-9a-f]{64})'$`)

// gceName is what GCE takes as a resource's name (RFC 1035: at most 63 characters).
var gceName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// testSubnetwork is the subnetwork of region europe-west1 in the tests' gce cluster.
const testSubnetwork = "kubeup-europe-west1"

// userSpec is the user spec of the tests' gce cluster, demo.example.com with controlPlanes control planes and two
// nodes over three zones of europe-west1, as `kubeup create cluster` makes it from a development build (which
// carries no nodeup of its own).
func userSpec(t *testing.T, controlPlanes int) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudGCE,
		ControlPlaneCount: controlPlanes, NodeCount: 2, Zones: []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"},
		Project: "kubeup-demo", Network: "kubeup-net", Subnetworks: []string{"europe-west1=" + testSubnetwork},
		NodeupURL:    "https://downloads.example.com/kubeup/v0.1.0/nodeup-linux-amd64",
		NodeupSHA256: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "gs://kubeup-state/demo.example.com"
	return c, igs
}

// localSpec is the user spec of a local cluster, which the gce graph builder refuses.
func localSpec(t *testing.T) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "file:///tmp/s/demo.example.com"
	return c, igs
}

// TestBuildGCECloudGraphPodCIDR: the subnetworks' checks know the pod range kubenet's routes take through the
// network.
func TestBuildGCECloudGraphPodCIDR(t *testing.T) {
	_, _, g := gceGraph(t, 1, nil)
	n := 0
	for _, task := range g.Tasks() {
		if s, ok := task.(*gcetasks.Subnetwork); ok {
			n++
			if s.PodCIDR != "100.96.0.0/11" {
				t.Errorf("subnetwork %s's pod range = %q, want the cluster's 100.96.0.0/11", s.Name, s.PodCIDR)
			}
		}
	}
	if n == 0 {
		t.Error("no Subnetwork task")
	}
}
