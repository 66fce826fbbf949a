package e2e

import (
	"os"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// The components `make kube-binaries` builds are the version kubeup deploys by default, and the one the tests
// look for: change hack/kube-binaries/go.mod (k8s.io/kubernetes and the replace directives of the staging
// modules), model.DefaultKubernetesVersion and KubernetesVersion together.
func TestKubeBinariesAreTheDefaultKubernetesVersion(t *testing.T) {
	const goMod = "../../hack/kube-binaries/go.mod"
	b, err := os.ReadFile(goMod)
	if err != nil {
		t.Fatal(err)
	}
	built := ""
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == "k8s.io/kubernetes" {
			built = strings.TrimPrefix(f[1], "v")
		}
	}
	if built != model.DefaultKubernetesVersion || KubernetesVersion != model.DefaultKubernetesVersion {
		t.Errorf("%s builds k8s.io/kubernetes %q, e2e.KubernetesVersion is %q, model.DefaultKubernetesVersion is %q: "+
			"change them together (with go.mod's replace directives of the k8s.io staging modules, v0.MINOR.PATCH)",
			goMod, built, KubernetesVersion, model.DefaultKubernetesVersion)
	}
	staging := "v0." + strings.TrimPrefix(model.DefaultKubernetesVersion, "1.")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[0], "k8s.io/") && f[3] != staging {
			t.Errorf("%s: %s is pinned to %s, want %s (the staging modules of Kubernetes %s)",
				goMod, f[0], f[3], staging, model.DefaultKubernetesVersion)
		}
	}
}
