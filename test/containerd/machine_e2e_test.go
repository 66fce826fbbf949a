//go:build e2e

package containerd

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestKubeletInAMachineRunsAStaticPod boots a machine (systemd in systemd-nspawn, its own network namespace on
// a bridge, BootMachine's preparation for kubelet), installs the runtime and kubelet there as a node has them,
// starts containerd and kubelet as systemd units of the machine, imports the pause image and the e2e workload
// (StandaloneKubelet), and checks that kubelet runs the workload's static pod in a container: it answers on the
// machine's address from the host. Then the machine dies and boots again on its disk: containerd and kubelet,
// enabled, start at boot and run the pod again. A kubelet standalone (no API server): what kubelet needs of the
// machine, not of the cluster.
func TestKubeletInAMachineRunsAStaticPod(t *testing.T) {
	e2e.RequireRoot(t)
	nw := e2e.Network(t)
	node := nw.Node(t, "machine")
	opts := e2e.MachineOptions{NetNS: "/run/netns/" + node.Name, Kubelet: true, Disk: t.TempDir()}
	m := e2e.BootMachine(t, opts)

	e2e.WriteFile(t, filepath.Join(m.Dir, "/etc/kubernetes/manifests/hello.yaml"), `apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  hostNetwork: true
  containers:
  - name: hello
    image: `+e2e.HelloImage+`
    imagePullPolicy: IfNotPresent
    args: ["-listen=:18080"]
`)
	e2e.StandaloneKubelet(t, m, e2e.HelloImage)

	url := "http://" + node.IP + ":18080/"
	answers := func(m *e2e.Container, what string) {
		t.Helper()
		e2e.WaitFor(t, 3*time.Minute, what, func() (string, bool) {
			if state := m.Show(t, "kubelet.service", "ActiveState"); state != "active" {
				return "kubelet.service is " + state, false
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out, _ := m.CRI(ctx, "ps", "-a")
				return err.Error() + "\n" + out, false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b), strings.HasPrefix(string(b), "hello from ")
		})
	}
	answers(m, "the static pod to answer at "+url)
	// The pod runs in the machine's own cgroups, below the cgroup namespace BootMachine gave it.
	if v2, _ := e2e.CgroupV2(); !v2 {
		out := m.MustExec(t, "sh", "-c", "ls -d /sys/fs/cgroup/memory/kubepods")
		if strings.TrimSpace(out) != "/sys/fs/cgroup/memory/kubepods" {
			t.Errorf("kubelet's kubepods cgroup is not at the root of the machine's memory hierarchy: %q", out)
		}
	}
	// The machine dies and boots again on its disk: containerd and kubelet, enabled, start at boot (after the
	// machine made its cgroup hierarchies writable) and run the pod again.
	m.Remove(t)
	m = e2e.BootMachine(t, opts)
	answers(m, "the static pod to answer at "+url+" after the machine booted again on its disk")
	// The machine's cleanup powers it off: systemd stops kubelet and containerd, and its PID namespace ends the
	// pods' processes with it.
}
