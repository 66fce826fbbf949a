//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// The built components run, and are the version the tests expect.
func TestKubeBinariesRun(t *testing.T) {
	want := "Kubernetes v" + KubernetesVersion + "\n"
	for cmd, file := range KubeBinaries(t) {
		if out := MustRun(t, file, "--version"); out != want {
			t.Errorf("%s (for %s) --version: %q, want %q", file, cmd, out, want)
		}
	}
}

// The kubectl the tests run is there and runs.
func TestKubectlRuns(t *testing.T) {
	RequireRoot(t)
	out := MustRun(t, Kubectl(t), "version", "--client")
	if !strings.Contains(out, "v1.") {
		t.Errorf("kubectl version --client: %s", out)
	}
}
