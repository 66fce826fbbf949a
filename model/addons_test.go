package model_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/model"
)

// TestCoreDNSImageIsBuilt: the CoreDNS image the spec pins by default is the one `make images` builds (the
// version hack/coredns/go.mod requires): the nodes preload that archive, and no registry is reachable.
func TestCoreDNSImageIsBuilt(t *testing.T) {
	built := requiredVersion(t, "../hack/coredns/go.mod", "github.com/coredns/coredns")
	if want := "registry.k8s.io/coredns/coredns:" + built; built == "" || model.DefaultCoreDNSImage != want {
		t.Errorf("hack/coredns/go.mod builds github.com/coredns/coredns %q, model.DefaultCoreDNSImage is %q: change them together", built, model.DefaultCoreDNSImage)
	}
}

// requiredVersion is the version of module that goMod requires ("" when it requires none).
func requiredVersion(t *testing.T, goMod, module string) string {
	t.Helper()
	mod, err := os.ReadFile(goMod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return ""
}

// object finds an addon's object by kind and name.
func object(t *testing.T, a model.Addon, kind, name string) map[string]any {
	t.Helper()
	for _, o := range a.Objects {
		if o.Kind() == kind && o.Name() == name {
			return o.Manifest
		}
	}
	t.Fatalf("addon %s has no %s %s", a.Name, kind, name)
	return nil
}

// dig reads a path of a manifest ("spec.template.spec.containers.0.image") as YAML shows it.
func dig(t *testing.T, m map[string]any, path string) string {
	t.Helper()
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := int(k[0] - '0')
			if i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	out, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(out))
}

// TestCoreDNSObjects: the CoreDNS addon of a complete spec is its six objects, each labelled as kubeup's, the
// Service kube-dns at spec.kubelet.clusterDNS, the Corefile serving spec.networking.clusterDomain, the
// Deployment running the spec's image and replicas on any node (the control plane's too); disabled, it has no
// objects but still every collection its objects were in (where kubeup looks for them to delete).
func TestCoreDNSObjects(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.Networking.ClusterDomain = "k8s.example.internal"
	c.Spec.Addons.CoreDNS.Replicas = model.Ptr(int32(3))
	addons := model.Addons(c)
	if len(addons) != 2 || addons[0].Name != model.AddonCoreDNS || !addons[0].Enabled || addons[1].Name != model.AddonFlannel || addons[1].Enabled {
		t.Fatalf("addons %+v, want CoreDNS enabled, flannel not (kubenet)", addons)
	}
	a := addons[0]
	var got []string
	for _, o := range a.Objects {
		got = append(got, o.Kind()+"/"+o.Namespace()+"/"+o.Name()+" "+o.Resource)
		if l, _ := o.Manifest["metadata"].(map[string]any)["labels"].(map[string]any); l[model.AddonLabel] != model.AddonCoreDNS {
			t.Errorf("%s %s is not labelled %s=%s: %v", o.Kind(), o.Name(), model.AddonLabel, model.AddonCoreDNS, l)
		}
	}
	want := []string{"ServiceAccount/kube-system/coredns serviceaccounts", "ClusterRole//system:coredns clusterroles",
		"ClusterRoleBinding//system:coredns clusterrolebindings", "ConfigMap/kube-system/coredns configmaps",
		"Deployment/kube-system/coredns deployments", "Service/kube-system/kube-dns services"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	svc := object(t, a, "Service", "kube-dns")
	for path, want := range map[string]string{
		"spec.clusterIP": c.Spec.Kubelet.ClusterDNS, "metadata.labels.k8s-app": "kube-dns",
		"spec.ports.0.port": "53", "spec.ports.0.protocol": "UDP", "spec.ports.1.protocol": "TCP", "spec.ports.2.port": "9153",
	} {
		if got := dig(t, svc, path); got != want {
			t.Errorf("Service kube-dns %s: %q, want %q", path, got, want)
		}
	}
	if c.Spec.Kubelet.ClusterDNS != "100.64.0.10" {
		t.Errorf("clusterDNS %s, want the service range's 10th address", c.Spec.Kubelet.ClusterDNS)
	}
	corefile := dig(t, object(t, a, "ConfigMap", "coredns"), "data.Corefile")
	for _, line := range []string{"health :8080", "ready :8181", "kubernetes k8s.example.internal in-addr.arpa ip6.arpa {", "pods insecure",
		"fallthrough in-addr.arpa ip6.arpa", "prometheus :9153", "forward . /etc/resolv.conf", "cache 30", "loop", "reload", "loadbalance"} {
		if !strings.Contains(corefile, line) {
			t.Errorf("the Corefile lacks %q:\n%s", line, corefile)
		}
	}
	d := object(t, a, "Deployment", "coredns")
	for path, want := range map[string]string{
		"spec.replicas": "3", "spec.template.spec.containers.0.image": model.DefaultCoreDNSImage,
		"spec.template.spec.containers.0.imagePullPolicy": "IfNotPresent",
		"spec.template.spec.dnsPolicy":                    "Default", "spec.template.spec.priorityClassName": "system-cluster-critical",
		"spec.template.spec.serviceAccountName":                                                                                     "coredns",
		"spec.template.spec.tolerations.0.key":                                                                                      "node-role.kubernetes.io/control-plane",
		"spec.template.spec.tolerations.0.effect":                                                                                   "NoSchedule",
		"spec.template.spec.containers.0.readinessProbe.httpGet.port":                                                               "8181",
		"spec.template.spec.containers.0.livenessProbe.httpGet.path":                                                                "/health",
		"spec.template.spec.containers.0.securityContext.readOnlyRootFilesystem":                                                    "true",
		"spec.template.spec.containers.0.securityContext.capabilities.add.0":                                                        "NET_BIND_SERVICE",
		"spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.0.podAffinityTerm.topologyKey": "kubernetes.io/hostname",
	} {
		if got := dig(t, d, path); got != want {
			t.Errorf("Deployment coredns %s: %q, want %q", path, got, want)
		}
	}

	c.Spec.Addons.CoreDNS.Enabled = model.Ptr(false)
	off := model.Addons(c)[0]
	if off.Enabled || len(off.Objects) != 0 || len(off.Collections) != len(want) {
		t.Errorf("disabled: enabled %v, %d objects, %d collections; want none and the %d collections", off.Enabled, len(off.Objects), len(off.Collections), len(want))
	}
}

// TestValidateAddons: a bad image, a size under 1 and a DNS address outside the service range are each refused
// at their field path; a disabled CoreDNS needs no DNS address.
func TestValidateAddons(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	d := c.Spec.Addons.CoreDNS
	d.Image = "coredns 1.12"
	d.Replicas = model.Ptr(int32(0))
	c.Spec.Kubelet.ClusterDNS = "10.0.0.10"
	got := map[string]string{}
	for _, p := range model.ProblemsOf(t, model.Validate("test", c, igs)) {
		got[p.Path] = p.Message
	}
	for path, want := range map[string]string{
		"spec.addons.coreDNS.image":    `"coredns 1.12" is not a container image reference`,
		"spec.addons.coreDNS.replicas": "0: must be at least 1 (to run no CoreDNS, set spec.addons.coreDNS.enabled: false)",
		"spec.kubelet.clusterDNS":      "10.0.0.10 is not in spec.networking.serviceClusterIPRange 100.64.0.0/13",
	} {
		if !strings.Contains(got[path], want) {
			t.Errorf("%s: %q, want it to say %q (all: %v)", path, got[path], want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("problems %v, want those 3", got)
	}

	c, igs = model.CompleteSpec(t, model.CloudLocal, 1)
	c.Spec.Addons.CoreDNS.Enabled = model.Ptr(false)
	c.Spec.Kubelet.ClusterDNS = "10.0.0.10"
	if err := model.Validate("test", c, igs); err != nil {
		t.Errorf("a disabled CoreDNS: %v", err)
	}
}

// TestCoreDNSPreloaded: with the addon enabled every node preloads CoreDNS's image (its archive mirrored, with a
// sha256), the spec's image, not the default; disabled, no node does, and its mirrored image may stay in the
// spec. A change of its replicas changes no node configuration: no machine is replaced for it.
func TestCoreDNSPreloaded(t *testing.T) {
	user, igs := model.UserSpec(t, model.CloudLocal, 1)
	const mine = "registry.example.com/coredns:v1.12.1-1"
	user.Spec.Addons = &model.AddonsSpec{CoreDNS: &model.CoreDNSAddon{Image: mine}}
	c, igs := model.Complete(user, igs)
	img := c.Spec.Assets.Images[model.AddonCoreDNS]
	if img == nil || img.Image != mine {
		t.Fatalf("spec.assets.images.coredns %+v, want the addon's image %s", img, mine)
	}
	img.URL, img.SHA256 = "file:///m/coredns.tar", testSHA
	nodes := model.FindInstanceGroup(igs, "nodes")
	preloads := func(c *model.Cluster) bool {
		for _, p := range model.PreloadImages(model.NewNodeConfig(c, nodes)) {
			if p.Name == mine {
				return true
			}
		}
		return false
	}
	if !preloads(c) {
		t.Errorf("a node does not preload %s: %+v", mine, model.PreloadImages(model.NewNodeConfig(c, nodes)))
	}
	before, err := model.NewNodeConfig(c, nodes).Encode()
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Addons.CoreDNS.Replicas = model.Ptr(int32(5))
	if after, err := model.NewNodeConfig(c, nodes).Encode(); err != nil || string(after) != string(before) {
		t.Errorf("a change of spec.addons.coreDNS.replicas changes the node configuration (%v)", err)
	}
	c.Spec.Addons.CoreDNS.Enabled = model.Ptr(false)
	if err := model.Validate("test", c, igs); err != nil {
		t.Errorf("a disabled CoreDNS whose image is still in spec.assets.images: %v", err)
	}
	if preloads(c) {
		t.Errorf("with the addon disabled, a node still preloads %s", mine)
	}
	for _, w := range model.AssetWarnings(c) {
		if strings.Contains(w.Path, model.AddonCoreDNS) {
			t.Errorf("a warning of a disabled addon's image: %s", w)
		}
	}
}
