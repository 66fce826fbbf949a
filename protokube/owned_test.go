package protokube

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/pkitasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// forcedConf writes the configuration of control-plane-a-1 of a local cluster after force changed its spec
// past validation, as a configuration written by hand would be, and returns its path.
func forcedConf(t *testing.T, force func(*model.Cluster)) string {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "file:///var/lib/kubeup/state/demo.example.com"
	c, igs = model.Complete(c, igs)
	c.Spec.Local.PoolDir = t.TempDir()
	force(c)
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleControlPlane {
			obj, err := model.NewNodeConfig(c, ig).Encode()
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), ig.Metadata.Name)
			if err := os.WriteFile(p, obj, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatal("no control-plane group")
	return ""
}

// TestRefusesWhatKubeupDoesNotOwn: a node configuration whose paths point at system files (forced past
// kubeup's validation) is refused by protokube, which converges the node's files as nodeup does, and nothing
// is written. The configuration reader's validation refuses it first; checkOwned (TestCheckOwned) holds
// whatever slips past that.
func TestRefusesWhatKubeupDoesNotOwn(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		force      func(*model.Cluster)
		want       []string
	}{
		{"kubelet's client CA", "/etc/shadow", func(c *model.Cluster) { c.Spec.Kubelet.ClientCAFile = "/etc/shadow" },
			[]string{`spec.kubelet.clientCAFile: "/etc/shadow" is not in a directory kubeup owns on a node`}},
		{"the hosts file", "/etc/passwd", func(c *model.Cluster) {
			c.Spec.Local.DNS = &model.LocalDNSSpec{Provider: model.LocalDNSHosts, HostsFile: "/etc/passwd"}
		}, []string{`spec.local.dns.hostsFile: "/etc/passwd" is not in a directory kubeup owns on a node`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := forcedConf(t, tc.force)
			root := t.TempDir()
			var logs bytes.Buffer
			err := Run(context.Background(), Options{Conf: conf, Root: root, Once: true,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)), Node: volumetasks.Holder{NodeID: "n1", InternalIP: "10.0.0.1"}})
			if err == nil {
				t.Fatalf("Run took the configuration; logs:\n%s", logs.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run = %v\nwant it to say %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, tc.file)); !os.IsNotExist(err) {
				t.Errorf("%s was written under the node's root (%v)", tc.file, err)
			}
			var written []string
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					written = append(written, p)
				}
				return nil
			})
			if len(written) > 0 {
				t.Errorf("the refused round wrote %v", written)
			}
		})
	}
}

// TestCheckOwned: a round's graph that would write, remove or mount outside what kubeup owns on the node, or
// touch a unit that is not kubeup's, is refused before anything runs, each offender named; the graph of a valid
// configuration passes (found in review: protokube converged the node's files with no such check).
func TestCheckOwned(t *testing.T) {
	ok := func(g *engine.Graph[*Round]) {
		engine.AddIn(g, (*Round).Node, &nodetasks.File{Path: "/etc/kubernetes/pki/ca.crt", Contents: ptr("x")})
		engine.AddIn(g, (*Round).Node, &nodetasks.File{Path: "/mnt/master-v1/data", Type: ptr(nodetasks.TypeDirectory)})
		engine.AddIn(g, (*Round).Node, &nodetasks.Absent{Path: "/etc/kubernetes/manifests/etcd-main.manifest"})
	}
	for _, tc := range []struct {
		name string
		add  func(*engine.Graph[*Round])
		want string // "": accepted
	}{
		{"kubeup's paths", func(*engine.Graph[*Round]) {}, ""},
		{"a preloaded image", func(g *engine.Graph[*Round]) {
			engine.AddIn(g, (*Round).Node, &nodetasks.ImageImport{Name: "registry.k8s.io/pause:3.10.2", Archive: "/var/lib/kubeup/images/pause.tar",
				Address: "/run/containerd/containerd.sock", Ctr: "/usr/local/bin/ctr"})
		}, ""},
		{"kubelet credentials' objects and approvals: the cluster's API, nothing on the node", func(g *engine.Graph[*Round]) {
			nc := roundNodeConfig(t)
			if err := nodegraph.AddKubeObjects(g, nc, nil); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"the pod network's routes: kubeup's protocol in the routing table, nothing on the filesystem", func(g *engine.Graph[*Round]) {
			engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: map[string]string{"100.96.1.0/24": "10.0.0.2"}})
		}, ""},
		{"a file", func(g *engine.Graph[*Round]) {
			engine.AddIn(g, (*Round).Node, &nodetasks.File{Path: "/etc/shadow", Contents: ptr("x")})
		}, "File//etc/shadow: /etc/shadow is not in a directory kubeup owns"},
		{"a removal", func(g *engine.Graph[*Round]) {
			engine.AddIn(g, (*Round).Node, &nodetasks.Absent{Path: "/etc/passwd"})
		}, "/etc/passwd is not in a directory kubeup owns"},
		{"a mount", func(g *engine.Graph[*Round]) {
			engine.AddIn(g, (*Round).Node, &nodetasks.FormatAndMount{MountPoint: "/var/lib/docker"})
		}, "/var/lib/docker is not an etcd volume's mount point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := engine.NewGraph[*Round]()
			ok(g)
			tc.add(g)
			err := checkOwned("node.conf", g, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkOwned = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkOwned = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestInEtcdMount(t *testing.T) {
	for p, want := range map[string]bool{
		"/mnt/master-a-1.etcd-main.x":      true,
		"/mnt/master-a-1.etcd-main.x/data": true,
		"/mnt/master-":                     false,
		"/mnt/master-../etc":               false,
		"/mnt/master-x/../../etc/shadow":   false,
		"/mnt/other":                       false,
		"/etc/shadow":                      false,
	} {
		if got := model.InEtcdMount(p); got != want {
			t.Errorf("InEtcdMount(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestMovedVolumes: a round that detached a lost race's volume is followed at once by another, which may claim
// a free volume, as one that attached or mounted is (it waited the whole interval).
func TestMovedVolumes(t *testing.T) {
	change := func(typ string) engine.Change { return engine.Change{Key: engine.Key{Type: typ, Name: "v"}} }
	for _, tc := range []struct {
		changes []engine.Change
		want    bool
	}{
		{nil, false},
		{[]engine.Change{change("File"), change("DNSRecord")}, false},
		{[]engine.Change{change(volumetasks.AttachKeyType)}, true},
		{[]engine.Change{change("File"), change(volumetasks.DetachKeyType)}, true},
		{[]engine.Change{change("FormatAndMount")}, true},
	} {
		if got := movedVolumes(tc.changes); got != tc.want {
			t.Errorf("movedVolumes(%v) = %v, want %v", tc.changes, got, tc.want)
		}
	}
}

// roundNodeConfig is a control-plane node's configuration whose bootstrap kubeconfig holds a token.
func roundNodeConfig(t *testing.T) *model.NodeConfig {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, igs = model.Complete(c, igs)
	nc := model.NewNodeConfig(c, igs[0])
	tok, err := pkitasks.IssueToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.AddKeystoreFiles(model.Issued{model.KeypairBootstrapToken: {Token: tok.Token}}); err != nil {
		t.Fatal(err)
	}
	return nc
}
