package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

// TestUpdateAppliesAddons: `update cluster --kubeconfig FILE` plans CoreDNS's objects in its dry run, applies
// them with --yes, and then plans nothing; without a kubeconfig (none at $KUBECONFIG) the update succeeds and
// says the addons wait, on stdout in text and on stderr beside a JSON plan.
func TestUpdateAppliesAddons(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	out := mustKubeup(t, state, "update", "cluster", name, "--yes")
	if !strings.Contains(out, "Addons wait: there is no kubeconfig "+filepath.Join(dir, "none")) {
		t.Errorf("update --yes without a kubeconfig does not say the addons wait:\n%s", out)
	}
	out, stderr, err := kubeup(t, state, "update", "cluster", name, "-o", "json")
	var plan map[string]any
	if err != nil || json.Unmarshal([]byte(out), &plan) != nil || !strings.Contains(stderr, "the addons wait") {
		t.Errorf("update -o json without a kubeconfig: %v; stdout must be one JSON plan, stderr say the addons wait:\n%s\n%s", err, out, stderr)
	}

	api, _ := kubetest.New(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, api.Kubeconfig(name, ""), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustKubeup(t, state, "update", "cluster", name, "--kubeconfig", kubeconfig)
	for _, want := range []string{"Will create resources:\n", "  KubeObject/Deployment/kube-system/coredns\n", "  KubeObject/Service/kube-system/kube-dns\n"} {
		if !strings.Contains(out, want) || strings.Contains(out, "Addons wait") {
			t.Errorf("the dry run does not plan %q:\n%s", want, out)
		}
	}
	if len(api.Patches) != 0 {
		t.Fatalf("the dry run applied %q", api.Patches)
	}
	out = mustKubeup(t, state, "update", "cluster", name, "--kubeconfig", kubeconfig, "--yes")
	if !strings.Contains(out, "create KubeObject/Deployment/kube-system/coredns") || len(api.Patches) != 6 {
		t.Errorf("update --yes applied %d objects (want 6):\n%s", len(api.Patches), out)
	}
	if out = mustKubeup(t, state, "update", "cluster", name, "--kubeconfig", kubeconfig); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("after the apply, the dry run plans changes:\n%s", out)
	}
}
