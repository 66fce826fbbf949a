//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"

	"kubeup.dev/kubeup/tasks/nodetasks"
)

// The built components run through the fake kubelet from manifests that name them as model's do
// (/usr/local/bin/kube-apiserver...), and are the version the tests expect.
func TestKubeBinariesRunThroughTheKubelet(t *testing.T) {
	RequireRoot(t)
	bins := KubeBinaries(t)
	node := Network(t).Node(t, "kubebin")
	root := t.TempDir()
	k := RunStaticPods(t, node, root, testManifestDir, WithBinaries(bins))
	for cmd := range bins {
		name := strings.TrimPrefix(cmd, "/usr/local/bin/")
		writeManifest(t, root, name+".manifest", &nodetasks.Pod{
			APIVersion: "v1", Kind: "Pod",
			Metadata: nodetasks.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: nodetasks.PodSpec{HostNetwork: true, Containers: []nodetasks.Container{{
				Name: name, Image: "registry.k8s.io/" + name + ":v" + KubernetesVersion,
				Command: []string{cmd}, Args: []string{"--version"},
			}}},
		})
	}
	want := "Kubernetes v" + KubernetesVersion + "\n"
	for cmd := range bins {
		manifest := strings.TrimPrefix(cmd, "/usr/local/bin/") + ".manifest"
		var log string
		waitFor(t, cmd+" --version in "+manifest+"'s log", func() bool {
			pod, ok := k.Pod(manifest)
			if !ok {
				return false
			}
			b, _ := os.ReadFile(pod.Log)
			log = string(b)
			return strings.Contains(log, want)
		})
		if strings.Contains(log, "failed") {
			t.Errorf("%s: a start failed:\n%s", manifest, log)
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
