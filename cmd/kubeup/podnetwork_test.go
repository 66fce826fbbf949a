package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPodNetworkIsFixed: spec.networking.podNetwork is chosen before the first apply (flannel here), and a change
// of it afterwards is refused by replace and edit, and by update cluster (dry run and --yes) when the stored spec
// was changed by hand past them; each refusal names the field, the network the cluster was applied with and
// the fix, and changes nothing in the store.
func TestPodNetworkIsFixed(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	withNetwork := func(network string) string {
		spec := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
		if strings.Contains(spec, "podNetwork: flannel") {
			spec = strings.Replace(spec, "podNetwork: flannel", "podNetwork: "+network, 1)
		} else {
			spec = strings.Replace(spec, "\nspec:\n", "\nspec:\n  networking:\n    podNetwork: "+network+"\n", 1)
		}
		p := filepath.Join(dir, network+".yaml")
		if err := os.WriteFile(p, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Not applied yet: chosen freely.
	mustKubeup(t, state, "replace", "-f", withNetwork("flannel"))
	converge(t, state, name)
	if full := mustKubeup(t, state, "get", "cluster", name, "--full", "-o", "yaml"); !strings.Contains(full, "podNetwork: flannel") ||
		!strings.Contains(full, "image: ghcr.io/flannel-io/flannel:v0.28.10") {
		t.Fatalf("the complete spec does not run flannel:\n%s", full)
	}

	want := []string{"spec.networking.podNetwork: kubenet, but cluster demo.example.com was applied with flannel",
		"kubeup does not switch the pod network of a running cluster", "nothing was written",
		"Set spec.networking.podNetwork back to flannel, or create a new cluster with kubenet"}
	kubenet := withNetwork("kubenet")
	t.Setenv("KUBE_EDITOR", `sed -i -e "s/podNetwork: flannel/podNetwork: kubenet/"`)
	for _, args := range [][]string{{"replace", "-f", kubenet}, {"edit", "cluster", name}} {
		before := treeSums(t, state)
		_, _, err := kubeup(t, state, args...)
		if err == nil {
			t.Fatalf("kubeup %s switched the pod network of an applied cluster", strings.Join(args, " "))
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("kubeup %s: error lacks %q:\n%v", strings.Join(args, " "), w, err)
			}
		}
		if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
			t.Errorf("a refused kubeup %s changed the store (-before +after):\n%s", strings.Join(args, " "), diff)
		}
		if _, kept, ok := strings.Cut(err.Error(), "your edit is kept in "); ok {
			os.Remove(strings.Fields(kept)[0])
		}
	}

	// Past replace and edit, by hand: update refuses it before anything is made.
	spec := filepath.Join(state, name, "config")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "podNetwork: flannel", "podNetwork: kubenet", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeSums(t, state)
	for _, args := range [][]string{{"update", "cluster", name}, {"update", "cluster", name, "--yes"}} {
		_, _, err := kubeup(t, state, args...)
		if err == nil {
			t.Fatalf("kubeup %s switched the pod network of an applied cluster", strings.Join(args, " "))
		}
		for _, w := range append(want, "the spec of cluster demo.example.com in file://"+spec) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("kubeup %s: error lacks %q:\n%v", strings.Join(args, " "), w, err)
			}
		}
		if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
			t.Errorf("a refused kubeup %s changed the store (-before +after):\n%s", strings.Join(args, " "), diff)
		}
	}
}
