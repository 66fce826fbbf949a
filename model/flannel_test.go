package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestFlannelImageIsBuilt: the flannel image the spec pins by default is the one `make images` builds (the
// version hack/flannel/go.mod requires): the nodes preload that archive, and no registry is reachable.
func TestFlannelImageIsBuilt(t *testing.T) {
	built := requiredVersion(t, "../hack/flannel/go.mod", "github.com/flannel-io/flannel")
	if want := "ghcr.io/flannel-io/flannel:" + built; built == "" || model.DefaultFlannelImage != want {
		t.Errorf("hack/flannel/go.mod builds github.com/flannel-io/flannel %q, model.DefaultFlannelImage is %q: change them together", built, model.DefaultFlannelImage)
	}
}

// flannelSpec is a complete local spec of controlPlanes control planes and a Node group, on the flannel pod
// network.
func flannelSpec(t *testing.T, controlPlanes int) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	user, igs := model.UserSpec(t, model.CloudLocal, controlPlanes)
	user.Spec.Networking = &model.NetworkingSpec{PodNetwork: model.PodNetworkFlannel}
	c, igs := model.Complete(user, igs)
	if err := model.Validate("flannel", c, igs); err != nil {
		t.Fatalf("a complete spec on flannel is not valid: %v", err)
	}
	return c, igs
}

// TestFlannelObjects: on the flannel pod network the flannel addon is enabled, its image pinned in the complete
// spec, and its objects (golden: testdata/addon-flannel.golden) are labelled as kubeup's: RBAC to read Nodes and
// write their annotations and status, net-conf.json with the cluster's pod range over VXLAN, and a DaemonSet on
// every node in the node's network namespace that makes no iptables rule. Under kubenet the addon is disabled,
// has no objects, still every collection (where kubeup looks for what to delete), and the complete spec names no
// flannel.
func TestFlannelObjects(t *testing.T) {
	c, _ := flannelSpec(t, 1)
	if f := c.Spec.Addons.Flannel; f == nil || f.Image != model.DefaultFlannelImage {
		t.Errorf("spec.addons.flannel %+v, want the default image %s", f, model.DefaultFlannelImage)
	}
	addons := model.Addons(c)
	if len(addons) != 2 || addons[1].Name != model.AddonFlannel || !addons[1].Enabled {
		t.Fatalf("addons %+v, want flannel enabled", addons)
	}
	a := addons[1]
	var docs []string
	for _, o := range a.Objects {
		if l, _ := o.Manifest["metadata"].(map[string]any)["labels"].(map[string]any); l[model.AddonLabel] != model.AddonFlannel {
			t.Errorf("%s %s is not labelled %s=%s: %v", o.Kind(), o.Name(), model.AddonLabel, model.AddonFlannel, l)
		}
		y, err := yaml.Marshal(o.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, "# "+o.Resource+"\n"+string(y))
	}
	golden.Assert(t, "testdata/addon-flannel.golden", []byte(strings.Join(docs, "---\n")))

	var netConf struct {
		Network        string
		EnableNFTables bool
		Backend        struct {
			Type      string
			VNI, Port int
		}
	}
	data, _ := object(t, a, "ConfigMap", "flannel")["data"].(map[string]any)["net-conf.json"].(string)
	if err := json.Unmarshal([]byte(data), &netConf); err != nil {
		t.Fatalf("net-conf.json: %v\n%s", err, data)
	}
	if netConf.Network != c.Spec.Networking.PodCIDR || netConf.Backend.Type != "vxlan" || netConf.Backend.Port != 8472 || netConf.Backend.VNI != 1 || netConf.EnableNFTables {
		t.Errorf("net-conf.json %+v, want the pod range %s over vxlan on 8472, VNI 1, iptables", netConf, c.Spec.Networking.PodCIDR)
	}
	d := object(t, a, "DaemonSet", "flannel")
	for path, want := range map[string]string{
		"spec.template.spec.containers.0.image":                        model.DefaultFlannelImage,
		"spec.template.spec.containers.0.imagePullPolicy":              "IfNotPresent",
		"spec.template.spec.hostNetwork":                               "true",
		"spec.template.spec.priorityClassName":                         "system-node-critical",
		"spec.template.spec.serviceAccountName":                        "flannel",
		"spec.template.spec.tolerations.0.operator":                    "Exists",
		"spec.template.spec.tolerations.0.key":                         "",
		"spec.template.spec.containers.0.securityContext.capabilities": "add:\n- NET_ADMIN\n- NET_RAW",
	} {
		if got := dig(t, d, path); got != want && !(want == "" && got == "null") {
			t.Errorf("DaemonSet flannel %s: %q, want %q", path, got, want)
		}
	}
	args := dig(t, d, "spec.template.spec.containers.0.args")
	for _, want := range []string{"--kube-subnet-mgr", "--iface=$(HOST_IP)", "--iptables-forward-rules=false"} {
		if !strings.Contains(args, "- "+want+"\n") && !strings.HasSuffix(args, "- "+want) {
			t.Errorf("flanneld's args lack %s:\n%s", want, args)
		}
	}
	if strings.Contains(args, "--ip-masq") {
		t.Errorf("flanneld masquerades (--ip-masq):\n%s", args)
	}
	rules := dig(t, object(t, a, "ClusterRole", "kubeup:flannel"), "rules")
	for _, want := range []string{"- nodes\n  verbs:\n  - get\n  - list\n  - watch\n  - patch", "- nodes/status\n  verbs:\n  - patch"} {
		if !strings.Contains(rules, want) {
			t.Errorf("the ClusterRole's rules lack %q:\n%s", want, rules)
		}
	}

	k, _ := model.CompleteSpec(t, model.CloudLocal, 1)
	if k.Spec.Addons.Flannel != nil {
		t.Errorf("under kubenet, spec.addons.flannel is %+v, want none", k.Spec.Addons.Flannel)
	}
	off := model.Addons(k)[1]
	if off.Name != model.AddonFlannel || off.Enabled || len(off.Objects) != 0 || len(off.Collections) != len(a.Objects) {
		t.Errorf("under kubenet: %s enabled %v, %d objects, %d collections; want flannel disabled, none and the %d collections",
			off.Name, off.Enabled, len(off.Objects), len(off.Collections), len(a.Objects))
	}
}

// TestFlannelNode: on the flannel pod network every node, of the control plane and of a Node group, preloads
// flannel's image (mirrored with a sha256), and its CNI template gives the bridge and the pods flannel's MTU;
// under kubenet no node preloads it and the template sets no MTU.
func TestFlannelNode(t *testing.T) {
	for _, network := range []string{model.PodNetworkFlannel, model.PodNetworkKubenet} {
		t.Run(network, func(t *testing.T) {
			user, igs := model.UserSpec(t, model.CloudLocal, 1)
			user.Spec.Networking = &model.NetworkingSpec{PodNetwork: network}
			c, igs := model.Complete(user, igs)
			if img := c.Spec.Assets.Images[model.AddonFlannel]; img != nil {
				img.URL, img.SHA256 = "file:///m/flannel.tar", testSHA
			}
			if err := model.Validate("test", c, igs); err != nil {
				t.Fatal(err)
			}
			for _, group := range []string{"control-plane-a", "nodes"} {
				nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, group))
				preloads := false
				for _, p := range model.PreloadImages(nc) {
					preloads = preloads || p.Name == model.DefaultFlannelImage
				}
				if want := network == model.PodNetworkFlannel; preloads != want {
					t.Errorf("%s preloads %s: %v, want %v (%+v)", group, model.DefaultFlannelImage, preloads, want, model.PreloadImages(nc))
				}
				g, err := nodegraph.BuildNodeGraph(nc)
				if err != nil {
					t.Fatal(err)
				}
				task, ok := g.Lookup(engine.Key{Type: "File", Name: model.CNIConfigTemplate})
				if !ok {
					t.Fatalf("%s: no CNI template", group)
				}
				tmpl := *task.(*nodetasks.File).Contents
				if got, want := strings.Contains(tmpl, `"mtu": 1450,`), network == model.PodNetworkFlannel; got != want || (!want && strings.Contains(tmpl, "mtu")) {
					t.Errorf("%s: the CNI template sets mtu 1450: %v, want %v:\n%s", group, got, want, tmpl)
				}
			}
		})
	}
}

// TestValidateFlannelImageAsset: under kubenet an archive of flannel's image in spec.assets.images is refused
// (no node would preload it); under flannel it is flannel's.
func TestValidateFlannelImageAsset(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.Assets.Images[model.AddonFlannel] = &model.ImageAssetSpec{Image: model.DefaultFlannelImage}
	var got []string
	for _, p := range model.ProblemsOf(t, model.Validate("test", c, igs)) {
		got = append(got, p.Path)
	}
	if diff := cmp.Diff([]string{"spec.assets.images.flannel"}, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
