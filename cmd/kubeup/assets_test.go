package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssetsMirror: a cluster with nothing mirrored updates with a warning that names every asset without a
// sha256 and the fix; `kubeup assets mirror` is a dry run by default, copies every asset from --from into the
// state store and records its URL and sha256 with --yes (the warning is gone, the nodes' configuration names
// them), changes nothing when run again, and refuses a file whose sha256 is not the one recorded, changing
// nothing.
func TestAssetsMirror(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	_, stderr, err := kubeup(t, state, "update", "cluster", name, "--yes")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spec.assets.kubelet.sha256", "spec.assets.images.pause.sha256", "Run `kubeup assets mirror " + name + " --yes`"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("update printed on stderr:\n%s\nwant it to name %q", stderr, want)
		}
	}

	from := filepath.Join(dir, "from")
	if err := os.MkdirAll(from, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range []string{"kubelet", "runc.amd64", "containerd-2.4.2-linux-amd64.tar.gz", "cni-plugins-linux-amd64-v1.10.0.tgz",
		"crictl-v1.37.0-linux-amd64.tar.gz", "protokube", "pause.tar", "kube-proxy.tar", "etcd.tar", "kube-apiserver.tar",
		"kube-controller-manager.tar", "kube-scheduler.tar", "coredns.tar"} {
		files[f] = "contents of " + f
		if err := os.WriteFile(filepath.Join(from, f), []byte(files[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

	before := treeSums(t, state)
	out := mustKubeup(t, state, "assets", "mirror", name, "--from", from)
	if !strings.Contains(out, "Will mirror the assets of cluster "+name+" (13 changes)") || !strings.Contains(out, "Run with --yes") {
		t.Errorf("dry run printed:\n%s", out)
	}
	if !sameSums(before, treeSums(t, state)) {
		t.Fatal("the dry run changed the store")
	}

	out = mustKubeup(t, state, "assets", "mirror", name, "--from", from, "--yes")
	kubeletObj := filepath.Join(state, name, "assets/kubernetes/v1.34.2/bin/linux/amd64/kubelet")
	if got, err := os.ReadFile(kubeletObj); err != nil || string(got) != files["kubelet"] {
		t.Fatalf("kubelet in the store: %q, %v\nmirror printed:\n%s", got, err, out)
	}
	spec := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	for _, want := range []string{"url: file://" + kubeletObj, "sha256: " + sum(files["kubelet"]), "sha256: " + sum(files["pause.tar"]),
		"image: registry.k8s.io/pause:3.10.2"} {
		if !strings.Contains(spec, want) {
			t.Errorf("the stored spec does not record %q:\n%s", want, spec)
		}
	}
	_, stderr, err = kubeup(t, state, "update", "cluster", name, "--yes")
	if err != nil || strings.Contains(stderr, "spec.assets") {
		t.Errorf("update after the mirror: %v; stderr:\n%s\nwant no warning about assets", err, stderr)
	}
	role, err := os.ReadFile(filepath.Join(state, name, "nodeup", "Node.role"))
	// A local cluster's workers run protokube (their pod routes: model.NodeRunsProtokube).
	if err != nil || !strings.Contains(string(role), sum(files["kubelet"])) || !strings.Contains(string(role), sum(files["protokube"])) {
		t.Errorf("the nodes' configuration: %v; want kubelet's and protokube's sha256:\n%s", err, role)
	}

	mirrored := treeSums(t, state)
	out = mustKubeup(t, state, "assets", "mirror", name, "--from", from, "--yes")
	if !strings.Contains(out, "no changes") || !sameSums(mirrored, treeSums(t, state)) {
		t.Errorf("second mirror printed:\n%s\nand changed the store: %v", out, !sameSums(mirrored, treeSums(t, state)))
	}
	out = mustKubeup(t, state, "assets", "mirror", name, "--yes")
	if !strings.Contains(out, "no changes") {
		t.Errorf("mirror without --from, everything mirrored, printed:\n%s", out)
	}

	if err := os.WriteFile(filepath.Join(from, "kubelet"), []byte("another kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = kubeup(t, state, "assets", "mirror", name, "--from", from, "--yes")
	for _, want := range []string{"spec.assets.kubelet", sum("another kubelet"), sum(files["kubelet"]), "nothing was changed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mirror of a different kubelet: %v; want it refused naming %q", err, want)
		}
	}
	if !sameSums(mirrored, treeSums(t, state)) {
		t.Error("a refused mirror changed the store")
	}

	// A version bump: the images recorded for 1.34.2 are no longer the manifests' and kubelet's URL is mirrored for
	// another version (update warns about both; the nodes no longer get those images), and mirroring again fixes
	// both, the new kubelet's sha256 no longer held to the old one's.
	spec = mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	bumped := strings.Replace(spec, "\nspec:\n", "\nspec:\n  kubernetesVersion: 1.34.3\n", 1)
	if bumped == spec || strings.Contains(spec, "kubernetesVersion") {
		t.Fatalf("want a spec that leaves kubernetesVersion to its default:\n%s", spec)
	}
	specFile := filepath.Join(dir, "bumped.yaml")
	if err := os.WriteFile(specFile, []byte(bumped), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubeup(t, state, "replace", "-f", specFile)
	_, stderr, err = kubeup(t, state, "update", "cluster", name)
	for _, want := range []string{"spec.assets.images.kube-apiserver.image", "spec.assets.kubelet.url"} {
		if err != nil || !strings.Contains(stderr, want) {
			t.Errorf("update of the bumped spec: %v; stderr:\n%s\nwant a warning naming %q", err, stderr, want)
		}
	}
	out = mustKubeup(t, state, "assets", "mirror", name, "--from", from, "--yes")
	spec = mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	for _, want := range []string{"assets/kubernetes/v1.34.3/bin/linux/amd64/kubelet", "sha256: " + sum("another kubelet"), "image: registry.k8s.io/kube-apiserver:v1.34.3"} {
		if !strings.Contains(spec, want) {
			t.Errorf("after mirroring the bumped spec, it does not hold %q:\n%s\nmirror printed:\n%s", want, spec, out)
		}
	}
	if _, stderr, err = kubeup(t, state, "update", "cluster", name); err != nil || strings.Contains(stderr, "spec.assets") {
		t.Errorf("update after mirroring the bumped spec: %v; stderr:\n%s", err, stderr)
	}
}
