package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompleteSpecStaysOut is the acceptance of "the spec stays the user's": `get --full -o yaml` then
// `replace -f` of it is refused (it would pin every derived value), the spec printed without --full replaces,
// and a later kubernetesVersion bump changes the components' images in the plan. An image set by hand that lags
// the version is stored, with a warning on stderr from replace and update.
func TestCompleteSpecStaysOut(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a", "--kubernetes-version", "1.33.4")
	mustKubeup(t, state, "update", "cluster", name, "--yes")
	write := func(file, data string) string {
		t.Helper()
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	full := mustKubeup(t, state, "get", "cluster", name, "--full", "-o", "yaml")
	if !strings.Contains(full, "annotations:\n    kubeup.dev/complete: \"true\"\n") || !strings.Contains(full, "kube-apiserver:v1.33.4") {
		t.Fatalf("get --full does not mark the complete spec:\n%s", full)
	}
	before := treeSums(t, state)
	stored, err := os.ReadFile(filepath.Join(state, name, "cluster-completed.spec")) // what the last apply wrote
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		write("full.yaml", full),
		write("cluster-completed.spec", string(stored)),
		write("full-bumped.yaml", strings.ReplaceAll(full, "kubernetesVersion: 1.33.4", "kubernetesVersion: 1.34.2")),
		write("igs.yaml", mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")+"---\n"+mustKubeup(t, state, "get", "instancegroups", name, "--full", "-o", "yaml")),
	} {
		_, _, err := kubeup(t, state, "replace", "-f", f)
		for _, want := range []string{"metadata.annotations[kubeup.dev/complete]", "the complete spec `kubeup get --full` prints", "nothing was written",
			"`kubeup get cluster " + name + " -o yaml > spec.yaml` (without --full)"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("replace -f %s: %v, want it refused with %q", filepath.Base(f), err, want)
			}
		}
	}
	if !sameSums(before, treeSums(t, state)) {
		t.Error("a refused replace changed the store")
	}

	// The spec itself, its version bumped: the plan moves every component's image to the new version.
	spec := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	if strings.Contains(spec, "image:") || strings.Contains(spec, "kubeup.dev/complete") {
		t.Fatalf("get without --full prints derived values:\n%s", spec)
	}
	mustKubeup(t, state, "replace", "-f", write("bumped.yaml", strings.Replace(spec, "kubernetesVersion: 1.33.4", "kubernetesVersion: 1.34.2", 1)))
	plan := mustKubeup(t, state, "update", "cluster", name)
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		if !strings.Contains(plan, c+":v1.34.2") {
			t.Errorf("the plan of a version bump does not move %s to v1.34.2:\n%s", c, plan)
		}
	}

	// An image set by hand that lags the version: stored, and warned about.
	lagging := strings.Replace(mustKubeup(t, state, "get", "cluster", name, "-o", "yaml"), "  kubernetesVersion: 1.34.2\n",
		"  kubernetesVersion: 1.34.2\n  kubeAPIServer:\n    image: registry.k8s.io/kube-apiserver:v1.33.4\n", 1)
	const warning = "Warning: cluster demo.example.com: spec.kubeAPIServer.image: registry.k8s.io/kube-apiserver:v1.33.4 is tagged v1.33.4, not spec.kubernetesVersion 1.34.2"
	_, stderr, err := kubeup(t, state, "replace", "-f", write("lagging.yaml", lagging))
	if err != nil || !strings.Contains(stderr, warning) {
		t.Errorf("replace of a lagging image: %v, stderr %q; want it stored with the warning %q", err, stderr, warning)
	}
	out, stderr, err := kubeup(t, state, "update", "cluster", name)
	if err != nil || !strings.Contains(stderr, warning) || strings.Contains(out, "Warning") {
		t.Errorf("update with a lagging image: %v, stderr %q; want the warning on stderr only", err, stderr)
	}
}
