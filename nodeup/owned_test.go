package nodeup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// completeNodeConfig is the node configuration of group, with the keystore's files (their contents pending), of
// the cluster nodeConfig's is from, changed by mutate and never validated: what a hand-made configuration
// may hold.
func completeNodeConfig(t *testing.T, group string, mutate func(*model.Cluster)) *model.NodeConfig {
	t.Helper()
	c, igs := completeSpec(t, mutate)
	for _, ig := range igs {
		if ig.Metadata.Name == group {
			nc := model.NewNodeConfig(c, ig)
			if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
				t.Fatal(err)
			}
			return nc
		}
	}
	t.Fatalf("no instance group %q", group)
	return nil
}

// pathLeaves returns the JSON paths (a.b.c) of the string values under v that are absolute paths.
func pathLeaves(prefix string, v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			pathLeaves(prefix+"."+k, e, out)
		}
	case string:
		if strings.HasPrefix(v, "/") {
			*out = append(*out, prefix)
		}
	}
}

// TestSystemPathsRefusedByNodeup forces each path of a control plane's node configuration (every value of its
// cluster spec that is a path, and the keystore's files that name the same path) to a file or directory of the
// system, seals it as kubeup would, and runs nodeup: each is refused as a bad configuration, naming the field,
// and nothing under the root changes.
func TestSystemPathsRefusedByNodeup(t *testing.T) {
	obj, err := completeNodeConfig(t, "control-plane-a", nil).Encode()
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(unseal(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	var base map[string]any
	if err := json.Unmarshal(js, &base); err != nil {
		t.Fatal(err)
	}
	var fields []string
	pathLeaves("cluster.spec", base["cluster"].(map[string]any)["spec"], &fields)
	slices.Sort(fields)
	if len(fields) < 20 {
		t.Fatalf("found %d path fields in the configuration, want every component's: %v", len(fields), fields)
	}
	root := t.TempDir()
	before := treeHash(t, root)
	dir := t.TempDir()
	for _, field := range fields {
		for _, sys := range []string{"/etc/shadow", "/root/.ssh/authorized_keys", "/usr/bin/env", "/etc/systemd/system"} {
			var conf map[string]any
			if err := json.Unmarshal(js, &conf); err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(field, ".")
			m := conf
			for _, p := range parts[:len(parts)-1] {
				m = m[p].(map[string]any)
			}
			old := m[parts[len(parts)-1]].(string)
			m[parts[len(parts)-1]] = sys
			files, _ := conf["files"].([]any)
			for _, f := range files {
				if f := f.(map[string]any); f["path"] == old {
					f["path"] = sys
				}
			}
			body, err := yaml.Marshal(conf)
			if err != nil {
				t.Fatal(err)
			}
			path := writeConf(t, dir, "conf", seal(body))
			r := run(t, Options{Conf: path, Root: root})
			var ce *ConfigError
			fieldPath := strings.TrimPrefix(field, "cluster.")
			if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), fieldPath+": \""+sys+"\"") {
				t.Errorf("%s: %s: nodeup returned %v, want a *ConfigError naming %s", field, sys, r.runErr, fieldPath)
			}
		}
	}
	if got := treeHash(t, root); got != before {
		t.Errorf("a refused configuration changed the root:\n%s", got)
	}
}

// TestCheckOwned: whatever the model builds from a configuration that validation would refuse, nodeup refuses
// the graph before it touches anything, naming each path and where kubeup writes.
func TestCheckOwned(t *testing.T) {
	nc := completeNodeConfig(t, "control-plane-a", func(c *model.Cluster) {
		c.Spec.Kubelet.ClientCAFile = "/etc/shadow"
		c.Spec.KubeAPIServer.TLSPrivateKeyFile = "/etc/ssh/ssh_host_ed25519_key"
		c.Spec.KubeProxy.Kubeconfig = "/etc/passwd"
		c.Spec.Kubelet.PodManifestPath = "/etc/systemd/system"
	})
	g, err := nodegraph.BuildNodeGraph(nc)
	if err != nil {
		t.Fatal(err)
	}
	err = checkOwned("conf", g)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("checkOwned: %v, want a *ConfigError", err)
	}
	for _, want := range []string{
		"File//etc/shadow: /etc/shadow is not in a directory kubeup owns",
		"File//etc/ssh/ssh_host_ed25519_key: /etc/ssh/ssh_host_ed25519_key is not in a directory kubeup owns",
		"File//etc/passwd: /etc/passwd is not in a directory kubeup owns",
		"File//etc/systemd/system: /etc/systemd/system is not in a directory kubeup owns",
		"ManifestFile//etc/systemd/system/kube-apiserver.manifest: /etc/systemd/system/kube-apiserver.manifest is not in a directory kubeup owns",
		"kubeup writes only below /etc/kubernetes, /etc/kubeup, /srv/kubernetes",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkOwned said:\n%v\nwant it to contain %q", err, want)
		}
	}

	good, err := nodegraph.BuildNodeGraph(completeNodeConfig(t, "control-plane-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	addSelfUnit(good, &selfInstall{executable: "/x", sha256: strings.Repeat("0", 64), conf: "/c", unit: "[Unit]\n"})
	// An image imported into containerd writes nothing of nodeup's: containerd stores it.
	engine.Add(good, &nodetasks.ImageImport{Name: "registry.k8s.io/pause:3.10.2", Archive: "/var/lib/kubeup/images/pause.tar",
		Address: "/run/containerd/containerd.sock", Ctr: "/usr/local/bin/ctr"})
	if err := checkOwned("conf", good); err != nil {
		t.Errorf("checkOwned refused what kubeup writes: %v", err)
	}
}

// TestRefusedGraphTouchesNothing runs nodeup on a root whose configuration passes its sha256 check but names
// /etc/shadow, after the real file: the file is left as it was.
func TestRefusedGraphTouchesNothing(t *testing.T) {
	root := t.TempDir()
	shadow := filepath.Join(root, "etc", "shadow")
	if err := os.MkdirAll(filepath.Dir(shadow), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shadow, []byte("root:*:19000:0:99999:7:::\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, root)
	obj, err := completeNodeConfig(t, "nodes", func(c *model.Cluster) { c.Spec.Kubelet.ClientCAFile = "/etc/shadow" }).Encode()
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, Options{Conf: writeConf(t, t.TempDir(), "conf", obj), Root: root})
	if r.runErr == nil || !strings.Contains(r.runErr.Error(), `spec.kubelet.clientCAFile: "/etc/shadow" is not in a directory kubeup owns on a node`) {
		t.Errorf("nodeup: %v, want the configuration refused at spec.kubelet.clientCAFile", r.runErr)
	}
	if got := treeHash(t, root); got != before {
		t.Errorf("the refused run changed the root:\nbefore:\n%s\nafter:\n%s", before, got)
	}
}
