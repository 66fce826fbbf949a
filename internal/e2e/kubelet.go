package e2e

import (
	"os/exec"
	"testing"

	"kubeup.dev/kubeup/internal/staticpods"
)

// FakeKubelet is a stand-in for kubelet in tests, not product code: it runs the static pods of one test node,
// with internal/staticpods (see staticpods.Runner for what it does and ignores) in the node's network namespace;
// its processes are registered for the next run's reap.
type FakeKubelet struct {
	r *staticpods.Runner
}

// FakePod is what FakeKubelet.Pods reports of one manifest.
type FakePod = staticpods.Pod

// KubeletOption is an option of RunStaticPods.
type KubeletOption func(*staticpods.Config)

// WithBinaries has the FakeKubelet run the host file binaries[command] for a container whose command is a key
// ("/usr/local/bin/kube-apiserver"), bound at that path in the pod's root filesystem (see
// staticpods.Config.Binaries); KubeBinaries returns those of the real Kubernetes components. Options given twice
// add up.
func WithBinaries(binaries map[string]string) KubeletOption {
	return func(c *staticpods.Config) {
		if c.Binaries == nil {
			c.Binaries = map[string]string{}
		}
		for cmd, file := range binaries {
			c.Binaries[cmd] = file
		}
	}
}

// RunStaticPods starts a FakeKubelet for node, whose filesystem is root (a directory of the host), running the
// pods of root+manifestDir ("/etc/kubernetes/manifests"). Logs go under a t.TempDir(). It is stopped in t.Cleanup.
func RunStaticPods(t testing.TB, node *NetNode, root, manifestDir string, opts ...KubeletOption) *FakeKubelet {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, staticpods.Tools...)
	c := staticpods.Config{
		NetNS: node.Name, Root: root, ManifestDir: manifestDir, LogDir: t.TempDir(), Name: "fake kubelet",
		Start: func(cmd *exec.Cmd, logFile string) (staticpods.Process, error) { return startProcess(cmd, logFile) },
	}
	for _, o := range opts {
		o(&c)
	}
	k := &FakeKubelet{r: staticpods.Start(c)}
	t.Cleanup(k.Stop)
	return k
}

// Stop stops every pod and the polling, and returns when they have exited. Stopping twice does nothing.
func (k *FakeKubelet) Stop() { k.r.Stop() }

// Pods reports the manifests the FakeKubelet runs, sorted by file name.
func (k *FakeKubelet) Pods() []FakePod { return k.r.Pods() }

// Pod reports one manifest by file name; ok is false when the FakeKubelet does not run it.
func (k *FakeKubelet) Pod(manifest string) (pod FakePod, ok bool) { return k.r.Pod(manifest) }
