package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The real Kubernetes components: `make kube-binaries` (part of `make e2e-deps`) builds kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kube-proxy, static, from the k8s.io/kubernetes Go module
// of hack/kube-binaries into a cache keyed by version; `make kubectl` (also part of it) unpacks Debian's kubernetes-client into a cache of its
// own (not installed: on a machine where another package holds /usr/bin/kubectl, dpkg refuses it).

// KubernetesVersion is the version of the components the tests run: hack/kube-binaries/go.mod's
// k8s.io/kubernetes, which is model.DefaultKubernetesVersion (a unit test holds the three together; this
// package cannot import model, whose tests import it).
const KubernetesVersion = "1.34.2"

// KubeBinEnv names the environment variable that holds the directory of the built components (the Makefile
// exports it).
const KubeBinEnv = "KUBEUP_KUBE_BIN"

// DefaultKubeBin is where `make kube-binaries` puts the components when KubeBinEnv is not set.
const DefaultKubeBin = "/var/cache/kubeup/bin/v" + KubernetesVersion

// KubectlEnv names the environment variable that holds the kubectl the tests run (the Makefile exports it).
const KubectlEnv = "KUBEUP_KUBECTL"

// DefaultKubectl is the kubectl the tests run when KubectlEnv is not set: Debian's, where `make kubectl` unpacks
// it.
const DefaultKubectl = "/var/cache/kubeup/kubernetes-client/usr/bin/kubectl"

// KubeBinaries returns the built components by the command their static-pod manifests name
// ("/usr/local/bin/kube-apiserver" -> "$KUBEUP_KUBE_BIN/kube-apiserver"); it skips t, loudly
// (under CI=true: fails it), when one is missing.
func KubeBinaries(t testing.TB) map[string]string {
	t.Helper()
	dir := os.Getenv(KubeBinEnv)
	if dir == "" {
		dir = DefaultKubeBin
	}
	bins := map[string]string{}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		file := filepath.Join(dir, name)
		if err := executable(file); err != nil {
			CannotRun(t, "(e2e) no Kubernetes %s: %v; `make e2e-deps` builds the components once (about 10 minutes on 2 cores)", KubernetesVersion, err)
		}
		bins["/usr/local/bin/"+name] = file
	}
	return bins
}

// KubeBinary returns the path of one built component, such as kubelet or kube-proxy, which the static-pod
// manifests do not run; it skips t, loudly (under CI=true: fails it), when it is missing.
func KubeBinary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(KubeBinEnv)
	if dir == "" {
		dir = DefaultKubeBin
	}
	file := filepath.Join(dir, name)
	if err := executable(file); err != nil {
		CannotRun(t, "(e2e) no Kubernetes %s %s: %v; `make kube-binaries` builds it", KubernetesVersion, name, err)
	}
	return file
}

// Kubectl returns the kubectl the tests run ($KUBEUP_KUBECTL, or DefaultKubectl); it skips t, loudly (under
// CI=true: fails it), when there is none. Debian's is kubectl 1.20: enough for get, create, get --raw and
// create --raw (a TokenRequest), not for `kubectl create token` (1.24).
func Kubectl(t testing.TB) string {
	t.Helper()
	file := os.Getenv(KubectlEnv)
	if file == "" {
		file = DefaultKubectl
	}
	if err := executable(file); err != nil {
		CannotRun(t, "(e2e) no kubectl: %v; `make e2e-deps` unpacks Debian's kubernetes-client", err)
	}
	return file
}

// executable reports why file is not an executable file (following links), or nil.
func executable(file string) error {
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", file)
	}
	return nil
}
