package awsprovider

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// awsGraph is the cloud graph of the test's aws cluster with controlPlanes control planes; edit changes its user
// spec first.
func awsGraph(t *testing.T, controlPlanes int, edit func(c *model.Cluster)) (*model.Cluster, []*model.InstanceGroup, *engine.Graph[*awstasks.Cloud]) {
	t.Helper()
	c, igs := userSpec(t, controlPlanes)
	if edit != nil {
		edit(c)
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

// awsFields renders the fields of the graph's aws tasks that the model sets, one task a paragraph, sorted by key:
// what the cloud is asked for.
func awsFields(t *testing.T, g *engine.Graph[*awstasks.Cloud]) []byte {
	t.Helper()
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return *p
	}
	num := func(p *int32) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	tags := func(m map[string]string) string {
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
		case *awstasks.VPC:
			f = []string{"id " + x.ID}
		case *awstasks.Subnet:
			f = []string{"vpc " + x.VPC.ID, "zone " + str(x.Zone)}
		case *awstasks.InstanceProfile:
			f = []string{"name " + x.Name}
		case *awstasks.SecurityGroup:
			f = []string{"vpc " + x.VPC.ID, "description " + str(x.Description), "tags " + tags(x.Tags)}
		case *awstasks.SecurityGroupRule:
			src := "cidr " + str(x.CIDR)
			if x.SourceGroup != nil {
				src = "source group " + x.SourceGroup.Name
			}
			f = []string{"group " + x.Group.Name, fmt.Sprintf("protocol %s ports %d-%d", x.Protocol, port(x.FromPort), port(x.ToPort)), src}
		case *awstasks.EBSVolume:
			f = []string{"zone " + str(x.Zone), "size " + num(x.SizeGB) + " type " + str(x.VolumeType),
				fmt.Sprintf("encrypted %v iops %s throughput %s kms %s", *x.Encrypted, num(x.IOPS), num(x.Throughput), str(x.KMSKeyID)),
				"tags " + tags(x.Tags)}
		case *awstasks.LaunchTemplate:
			var sgs []string
			for _, sg := range x.SecurityGroups {
				sgs = append(sgs, sg.Name)
			}
			var after []string
			for _, a := range x.After {
				after = append(after, a.Key().String())
			}
			f = []string{"image " + str(x.Image) + " instance type " + str(x.InstanceType),
				"instance profile " + x.InstanceProfile.Name, "security groups " + strings.Join(sgs, " "),
				"root volume " + num(x.RootVolumeSizeGB) + " " + str(x.RootVolumeType), "tags " + tags(x.Tags),
				fmt.Sprintf("user data made after %s", strings.Join(after, " "))}
		case *awstasks.AutoScalingGroup:
			var sns []string
			for _, sn := range x.Subnets {
				sns = append(sns, sn.ID+" ("+*sn.Zone+")")
			}
			f = []string{"size " + num(x.MinSize) + "-" + num(x.MaxSize), "subnets " + strings.Join(sns, " "),
				"launch template " + x.LaunchTemplate.Name, "tags " + tags(x.Tags)}
		default:
			continue // the tasks every cloud's graph holds: their golden is the local graph's
		}
		out = append(out, task.Key().String()+"\n    "+strings.Join(f, "\n    "))
	}
	slices.Sort(out)
	return []byte(strings.Join(out, "\n") + "\n")
}

func TestBuildAWSCloudGraph(t *testing.T) {
	for _, controlPlanes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d control planes", controlPlanes), func(t *testing.T) {
			_, igs, g := awsGraph(t, controlPlanes, nil)
			golden.Assert(t, fmt.Sprintf("testdata/build-cloud-aws-%d.golden", controlPlanes), enginetest.TaskList(t, g.Tasks()))
			golden.Assert(t, fmt.Sprintf("testdata/build-cloud-aws-%d-fields.golden", controlPlanes), awsFields(t, g))

			count := map[string]int{}
			for _, task := range g.Tasks() {
				count[task.Key().Type]++
			}
			want := map[string]int{
				"EBSVolume": 2 * controlPlanes, "LaunchTemplate": len(igs), "AutoScalingGroup": len(igs),
				"SecurityGroup": 2, "SecurityGroupRule": 9, "SecurityGroupIngress": 2, "VPC": 1, "Subnet": 3, "InstanceProfile": 1,
			}
			for typ, n := range want {
				if count[typ] != n {
					t.Errorf("%d %s tasks, want %d", count[typ], typ, n)
				}
			}
		})
	}
}

// TestBuildAWSCloudGraphAccess: who may reach the API and ssh, and a control-plane instance profile of its own.
func TestBuildAWSCloudGraphAccess(t *testing.T) {
	_, _, g := awsGraph(t, 1, func(c *model.Cluster) {
		c.Spec.AWS.APIAccess = []string{"203.0.113.0/24", "198.51.100.7/32"}
		c.Spec.AWS.SSHAccess = []string{"192.0.2.0/24"}
		c.Spec.AWS.ControlPlaneInstanceProfile = "kubeup-control-plane"
	})
	var rules []string
	for _, task := range g.Tasks() {
		if r, ok := task.(*awstasks.SecurityGroupRule); ok && r.CIDR != nil {
			rules = append(rules, fmt.Sprintf("%s %s %d %s", r.Group.Name, r.Protocol, port(r.FromPort), *r.CIDR))
		}
	}
	slices.Sort(rules)
	want := []string{
		"control-plane.demo.example.com tcp 22 192.0.2.0/24",
		"control-plane.demo.example.com tcp 443 198.51.100.7/32",
		"control-plane.demo.example.com tcp 443 203.0.113.0/24",
		"nodes.demo.example.com tcp 22 192.0.2.0/24",
	}
	if !slices.Equal(rules, want) {
		t.Errorf("rules with a CIDR:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
	profile := func(lt string) string {
		task, ok := g.Lookup(engine.Key{Type: "LaunchTemplate", Name: lt})
		if !ok {
			t.Fatalf("no launch template %s", lt)
		}
		return task.(*awstasks.LaunchTemplate).InstanceProfile.Name
	}
	if cp, n := profile("control-plane-a.demo.example.com"), profile("nodes.demo.example.com"); cp != "kubeup-control-plane" || n != "kubeup" {
		t.Errorf("instance profiles: control plane %s, nodes %s; want kubeup-control-plane and kubeup", cp, n)
	}
	for _, p := range []string{"kubeup", "kubeup-control-plane"} {
		if _, ok := g.Lookup(engine.Key{Type: "InstanceProfile", Name: p}); !ok {
			t.Errorf("no InstanceProfile/%s", p)
		}
	}
}

func TestBuildAWSCloudGraphRefusesOtherClouds(t *testing.T) {
	c, igs := model.Complete(localSpec(t))
	if _, err := BuildCloudGraph(c, igs); err == nil {
		t.Error("BuildAWSCloudGraph accepted a local cluster")
	}
}

var confSHA256Line = regexp.MustCompile(`(?m)^CONF_SHA256='([0-9a-f]{64})'$`)

// TestAWSUserData checks that each launch template's user data pins its machines to the node configuration the
// graph writes for the group (made by the same maker, from the same keystore), and pins the script itself.
func TestAWSUserData(t *testing.T) {
	_, igs, g := awsGraph(t, 3, nil)
	for _, ig := range igs {
		task, _ := g.Lookup(engine.Key{Type: "LaunchTemplate", Name: ig.Metadata.Name + ".demo.example.com"})
		lt := task.(*awstasks.LaunchTemplate)
		if lt.UserData != nil {
			t.Errorf("%s: user data set before the graph runs", lt.Name)
		}
		if err := lt.Resolve(); err != nil {
			t.Fatal(err)
		}
		conf, ok := g.Lookup(engine.Key{Type: "StoreFile", Name: model.NodeConfigPath("demo.example.com", ig.Metadata.Name)})
		if !ok {
			t.Fatalf("no node configuration of %s", ig.Metadata.Name)
		}
		obj, _, err := conf.(*storetasks.SecretFile[*awstasks.Cloud]).Make()
		if err != nil {
			t.Fatal(err)
		}
		want, err := model.NodeConfigObjectSHA256("conf", []byte(obj.Reveal()))
		if err != nil {
			t.Fatal(err)
		}
		m := confSHA256Line.FindStringSubmatch(*lt.UserData)
		if m == nil || m[1] != want {
			t.Errorf("%s: user data pins %v, want the configuration's sha256 %s:\n%s", lt.Name, m, want, *lt.UserData)
		}
		if !strings.Contains(*lt.UserData, "CONF='s3://kubeup-state/demo.example.com/nodeup/"+ig.Metadata.Name+"'\n") {
			t.Errorf("%s: user data does not read s3://kubeup-state/demo.example.com/nodeup/%s:\n%s", lt.Name, ig.Metadata.Name, *lt.UserData)
		}
	}
}

// port is a security group rule's port, 0 when it has none (protocol -1).
func port(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// The user's VPC, subnets and instance profiles name the spec's field that names them, which their errors say
// (a subnet not found: "spec.aws.subnets[2]: subnet ... does not exist in region ...").
func TestBuildAWSCloudGraphSpecPaths(t *testing.T) {
	for _, tc := range []struct {
		name         string
		controlPlane string
		want         map[string]string
	}{
		{"one profile", "", map[string]string{"InstanceProfile/kubeup": "spec.aws.instanceProfile"}},
		{"the same named twice", "kubeup", map[string]string{"InstanceProfile/kubeup": "spec.aws.instanceProfile"}},
		{"two profiles", "kubeup-control-plane", map[string]string{"InstanceProfile/kubeup": "spec.aws.instanceProfile",
			"InstanceProfile/kubeup-control-plane": "spec.aws.controlPlaneInstanceProfile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, g := awsGraph(t, 3, func(c *model.Cluster) { c.Spec.AWS.ControlPlaneInstanceProfile = tc.controlPlane })
			want := map[string]string{"VPC/" + c.Spec.AWS.VPCID: "spec.aws.vpcID"}
			for i, sn := range c.Spec.AWS.Subnets {
				want["Subnet/"+sn.ID] = fmt.Sprintf("spec.aws.subnets[%d]", i)
			}
			maps.Copy(want, tc.want)
			got := map[string]string{}
			for _, task := range g.Tasks() {
				switch u := task.(type) {
				case *awstasks.VPC:
					got[u.Key().String()] = u.SpecPath
				case *awstasks.Subnet:
					got[u.Key().String()] = u.SpecPath
				case *awstasks.InstanceProfile:
					got[u.Key().String()] = u.SpecPath
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spec paths (-want +got):\n%s", diff)
			}
		})
	}
}

// userSpec is the user spec of the tests' aws cluster, demo.example.com with controlPlanes control planes and two
// nodes over three zones of us-east-1, as `kubeup create cluster` makes it from a development build (which
// carries no nodeup of its own).
func userSpec(t *testing.T, controlPlanes int) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	subnet := func(zone string) string { return "subnet-0000000000000000" + zone }
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudAWS,
		ControlPlaneCount: controlPlanes, NodeCount: 2, Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		VPC: "vpc-0123456789abcdef0", Subnets: []string{subnet("a"), subnet("b"), subnet("c")},
		NodeupURL:    "https://downloads.example.com/kubeup/v0.1.0/nodeup-linux-amd64",
		NodeupSHA256: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "s3://kubeup-state/demo.example.com"
	return c, igs
}

// localSpec is the user spec of a local cluster, which the aws graph builder refuses.
func localSpec(t *testing.T) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "file:///tmp/s/demo.example.com"
	return c, igs
}

// TestBuildAWSCloudGraphPodCIDR: the VPC's check knows the pod range kubenet's routes take through the VPC.
func TestBuildAWSCloudGraphPodCIDR(t *testing.T) {
	_, _, g := awsGraph(t, 1, nil)
	found := false
	for _, task := range g.Tasks() {
		if v, ok := task.(*awstasks.VPC); ok {
			found = true
			if v.PodCIDR != "100.96.0.0/11" {
				t.Errorf("the VPC's pod range = %q, want the cluster's 100.96.0.0/11", v.PodCIDR)
			}
		}
	}
	if !found {
		t.Error("no VPC task")
	}
}
