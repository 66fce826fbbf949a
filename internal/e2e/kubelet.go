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

// RunStaticPods starts a FakeKubelet for node, whose filesystem is root (a directory of the host), running the
// pods of root+manifestDir ("/etc/kubernetes/manifests"). Logs go under a t.TempDir(). It is stopped in t.Cleanup.
func RunStaticPods(t testing.TB, node *NetNode, root, manifestDir string) *FakeKubelet {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, staticpods.Tools...)
	k := &FakeKubelet{r: staticpods.Start(staticpods.Config{
		NetNS: node.Name, Root: root, ManifestDir: manifestDir, LogDir: t.TempDir(), Name: "fake kubelet",
		Start: func(cmd *exec.Cmd, logFile string) (staticpods.Process, error) { return startProcess(cmd, logFile) },
	})}
	t.Cleanup(k.Stop)
	return k
}

// Stop stops every pod and the polling, and returns when they have exited. Stopping twice does nothing.
func (k *FakeKubelet) Stop() { k.r.Stop() }

// Pods reports the manifests the FakeKubelet runs, sorted by file name.
func (k *FakeKubelet) Pods() []FakePod { return k.r.Pods() }

// Pod reports one manifest by file name; ok is false when the FakeKubelet does not run it.
func (k *FakeKubelet) Pod(manifest string) (pod FakePod, ok bool) { return k.r.Pod(manifest) }
