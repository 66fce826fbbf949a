package model_test

import (
	"fmt"
	"kubeup.dev/kubeup/model"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeNodeConfigDerivedAccepted: every configuration kubeup writes (NewNodeConfig and AddKeystoreFiles,
// as the cloud graph stores it) decodes: the files as a dry run has them, and as an applied cluster's store
// holds them.
func TestDecodeNodeConfigDerivedAccepted(t *testing.T) {
	for _, cloud := range []string{model.CloudLocal, model.CloudAWS, model.CloudGCE} {
		for _, controlPlanes := range []int{1, 3} {
			c, igs := model.CompleteSpec(t, cloud, controlPlanes)
			for _, ig := range igs {
				nc := model.NewNodeConfig(c, ig)
				if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
					t.Fatal(err)
				}
				obj, err := nc.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := model.DecodeNodeConfigObject("conf", obj, nil); err != nil {
					t.Errorf("%s %d %s: %v", cloud, controlPlanes, ig.Metadata.Name, err)
				}
			}
		}
	}
	// As an earlier kubeup wrote it when two spec fields named one file: the same entry twice.
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "control-plane-a"))
	if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
		t.Fatal(err)
	}
	nc.Files = append(nc.Files, nc.Files[0])
	if obj, err := nc.Encode(); err != nil {
		t.Fatal(err)
	} else if _, err := model.DecodeNodeConfigObject("conf", obj, nil); err != nil {
		t.Errorf("a file listed twice, the same: %v", err)
	}

	c, igs, _, store := appliedCluster(t, 3)
	for _, ig := range igs {
		nc, _ := storedNodeConfig(t, store, c.Metadata.Name, ig.Metadata.Name) // fails the test if refused
		if len(nc.Files) == 0 {
			t.Errorf("%s: no files stored", ig.Metadata.Name)
		}
	}
}

// TestDecodeNodeConfigDerivedRefused: a configuration whose spec is valid and whose sha256 matches, but whose
// protokube configuration or files are not what kubeup writes from that spec (the reviewer's cases: a path in
// an etcd cluster's name, a flag, a member's DNS name that adds --initial-cluster entries, a hosts file outside
// --root, a file kubeup never writes) is refused with the field path and the fix.
func TestDecodeNodeConfigDerivedRefused(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	for _, tt := range []struct {
		name   string
		group  string
		mutate func(nc *model.NodeConfig)
		want   []string // problem paths
	}{
		{"etcd cluster name with a path", "control-plane-a",
			func(nc *model.NodeConfig) { nc.Protokube.EtcdClusters[0].Name = "main/../../x" },
			[]string{"protokube.etcdClusters[0].name"}},
		{"etcd flag added", "control-plane-a",
			func(nc *model.NodeConfig) {
				nc.Protokube.EtcdClusters[1].Flags = append(nc.Protokube.EtcdClusters[1].Flags, "--data-dir=/")
			},
			[]string{"protokube.etcdClusters[1].flags"}},
		{"member DNS name with commas", "control-plane-b",
			func(nc *model.NodeConfig) {
				nc.Protokube.EtcdClusters[0].Members[2].DNSName = "c.etcd-main.internal.x,evil=https://203.0.113.9:2380"
			},
			[]string{"protokube.etcdClusters[0].members[2].dnsName"}},
		{"member added", "control-plane-a",
			func(nc *model.NodeConfig) {
				e := &nc.Protokube.EtcdClusters[0]
				e.Members = append(e.Members, e.Members[0])
			},
			[]string{"protokube.etcdClusters[0].members"}},
		{"hosts file outside the root", "control-plane-a",
			func(nc *model.NodeConfig) {
				l := *nc.Protokube.Local
				dns := *l.DNS
				dns.Provider, dns.HostsFile = "hosts", "/../../.."
				l.DNS = &dns
				nc.Protokube.Local = &l
			},
			[]string{"protokube.local.dns.hostsFile", "protokube.local.dns.provider"}},
		{"DNS name dropped", "control-plane-a",
			func(nc *model.NodeConfig) { nc.Protokube.DNSNames = nc.Protokube.DNSNames[:1] },
			[]string{"protokube.dnsNames"}},
		{"protokube on a worker", "nodes",
			func(nc *model.NodeConfig) { nc.Protokube = model.NewProtokubeConfig(c, igs[0]) },
			[]string{"protokube"}},
		{"no protokube on the control plane", "control-plane-a",
			func(nc *model.NodeConfig) { nc.Protokube = nil },
			[]string{"protokube"}},
		{"a file kubeup never writes", "nodes",
			func(nc *model.NodeConfig) {
				nc.Files = append(nc.Files, model.NodeFile{Path: "/etc/sudoers.d/zz", Mode: "0440", Contents: "ALL ALL=(ALL) NOPASSWD: ALL\n"})
			},
			[]string{"files[3].path"}},
		{"a control plane's file on a worker", "nodes",
			func(nc *model.NodeConfig) {
				nc.Files = append(nc.Files, model.NodeFile{Path: c.Spec.KubeAPIServer.TLSPrivateKeyFile, Mode: "0600", Contents: "k", Sensitive: true})
			},
			[]string{"files[3].path"}},
		{"a file given twice, other contents", "nodes",
			func(nc *model.NodeConfig) {
				again := nc.Files[0]
				again.Contents += "x"
				nc.Files = append(nc.Files, again)
			},
			[]string{"files[3].path"}},
		{"a key readable by all", "control-plane-a",
			func(nc *model.NodeConfig) { nc.Files[1].Mode = "0644" },
			[]string{"files[1].mode"}},
		{"a key not sensitive", "control-plane-a",
			func(nc *model.NodeConfig) { nc.Files[1].Sensitive = false },
			[]string{"files[1].sensitive"}},
		{"no kube-proxy configuration", "nodes",
			func(nc *model.NodeConfig) { nc.Cluster.Spec.KubeProxy = nil },
			[]string{"cluster.spec.kubeProxy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, tt.group))
			if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
				t.Fatal(err)
			}
			tt.mutate(nc)
			obj, err := nc.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = model.DecodeNodeConfigObject("conf", obj, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			var paths []string
			for _, p := range model.ProblemsOf(t, err) {
				paths = append(paths, p.Path)
				for _, want := range []string{"this object is not what this kubeup (", "re-run `kubeup update cluster --yes` with the kubeup whose nodeup runs on this node"} {
					if !strings.Contains(p.Message, want) {
						t.Errorf("%s: %q does not say %q", p.Path, p.Message, want)
					}
				}
			}
			if diff := cmp.Diff(tt.want, paths); diff != "" {
				t.Errorf("problem paths (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

// TestDecodeNodeConfigDerivedMessage: what the operator reads.
func TestDecodeNodeConfigDerivedMessage(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "control-plane-a"))
	nc.Protokube.EtcdClusters[0].Name = "main/../../x"
	nc.Files = []model.NodeFile{{Path: "/etc/sudoers.d/zz", Mode: "0440", Contents: "secret-7c1d"}}
	obj, err := nc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, err = model.DecodeNodeConfigObject("s3://state/demo/nodeup/control-plane-a", obj, nil)
	want := fmt.Sprintf("s3://state/demo/nodeup/control-plane-a: 2 problems:\n"+
		"  protokube.etcdClusters[0].name: \"main/../../x\", but kubeup writes %q from this cluster and instance group; %s\n"+
		"  files[0].path: \"/etc/sudoers.d/zz\" is not a file kubeup writes for instance group \"control-plane-a\" (role ControlPlane); %s",
		c.Spec.EtcdClusters[0].Name, model.NotWritten, model.NotWritten)
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "secret-7c1d") {
		t.Error("the error quotes a file's contents")
	}
}

// TestNodeConfigLeavesTheSizeOut: a group's size is the cloud's, not a node's: resizing a group changes no node
// configuration, so no launch template or instance template, and no machine is to be replaced for it.
func TestNodeConfigLeavesTheSizeOut(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudAWS, 3)
	ig := model.FindInstanceGroup(igs, "nodes")
	before, err := model.NewNodeConfig(c, ig).Encode()
	if err != nil {
		t.Fatal(err)
	}
	resized := *ig
	resized.Spec.MinSize, resized.Spec.MaxSize = model.Ptr(int32(7)), model.Ptr(int32(9))
	after, err := model.NewNodeConfig(c, &resized).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("a resize changed the node configuration:\n%s\n---\n%s", before, after)
	}
	if _, err := model.DecodeNodeConfigObject("conf", after, nil); err != nil {
		t.Errorf("the configuration without the size is refused: %v", err)
	}
}
