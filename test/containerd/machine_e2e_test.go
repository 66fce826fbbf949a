//go:build e2e

package containerd

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestKubeletInAMachineRunsAStaticPod boots a machine (systemd in systemd-nspawn, its own network namespace on
// a bridge, BootMachine's preparation for kubelet), installs the runtime and kubelet there as a node has them,
// starts containerd and kubelet as systemd units of the machine, imports the pause image and the e2e workload,
// and checks that kubelet runs the workload's static pod in a container: it answers on the machine's address
// from the host. A kubelet standalone (no API server): what kubelet needs of the machine, not of the cluster.
func TestKubeletInAMachineRunsAStaticPod(t *testing.T) {
	e2e.RequireRoot(t)
	bin := e2e.RuntimeBin(t)
	kubelet := e2e.KubeBinary(t, "kubelet")
	images := e2e.Images(t)
	nw := e2e.Network(t)
	node := nw.Node(t, "machine")
	m := e2e.BootMachine(t, e2e.MachineOptions{NetNS: "/run/netns/" + node.Name, Kubelet: true})

	install := map[string]string{filepath.Join(bin, "runc"): "/usr/local/sbin/runc", kubelet: "/usr/local/bin/kubelet"}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "crictl"} {
		install[filepath.Join(bin, b)] = "/usr/local/bin/" + b
	}
	for _, p := range e2e.CNIPlugins {
		install[filepath.Join(bin, "cni", p)] = "/opt/cni/bin/" + p
	}
	for _, img := range images {
		install[img.Archive] = "/var/lib/kubeup/images/" + filepath.Base(img.Archive)
	}
	for from, to := range install {
		copyFile(t, from, filepath.Join(m.Dir, to))
	}
	files := map[string]string{
		"/etc/containerd/config.toml": `version = 3
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '` + e2e.PauseImage + `'
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = '/usr/local/sbin/runc'
  SystemdCgroup = false
`,
		"/etc/systemd/system/containerd.service": `[Unit]
Description=containerd
[Service]
Type=notify
ExecStart=/usr/local/bin/containerd
Delegate=yes
KillMode=process
`,
		"/etc/systemd/system/kubelet.service": `[Unit]
Description=kubelet
After=containerd.service
Requires=containerd.service
[Service]
ExecStart=/usr/local/bin/kubelet --config=/var/lib/kubelet/config.yaml
Restart=always
`,
		"/var/lib/kubelet/config.yaml": `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
address: 127.0.0.1
`,
		"/etc/kubernetes/manifests/hello.yaml": `apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  hostNetwork: true
  containers:
  - name: hello
    image: ` + e2e.HelloImage + `
    imagePullPolicy: IfNotPresent
    args: ["-listen=:18080"]
`,
	}
	if e2e.SystemdBooted() {
		files["/var/lib/kubelet/config.yaml"] = strings.Replace(files["/var/lib/kubelet/config.yaml"], "cgroupfs", "systemd", 1)
		files["/etc/containerd/config.toml"] = strings.Replace(files["/etc/containerd/config.toml"], "SystemdCgroup = false", "SystemdCgroup = true", 1)
	}
	for p, content := range files {
		e2e.WriteFile(t, filepath.Join(m.Dir, p), content)
	}
	m.MustExec(t, "systemctl", "daemon-reload")
	m.MustExec(t, "systemctl", "start", "containerd.service")
	for _, img := range images {
		if img.Ref == e2e.PauseImage || img.Ref == e2e.HelloImage {
			m.MustExec(t, "/usr/local/bin/ctr", "-n", "k8s.io", "images", "import", "/var/lib/kubeup/images/"+filepath.Base(img.Archive))
		}
	}
	m.MustExec(t, "systemctl", "start", "kubelet.service")

	url := "http://" + node.IP + ":18080/"
	e2e.WaitFor(t, 3*time.Minute, "the static pod to answer at "+url, func() (string, bool) {
		if state := m.Show(t, "kubelet.service", "ActiveState"); state != "active" {
			return "kubelet.service is " + state, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out, _ := m.Exec(ctx, "/usr/local/bin/crictl", "--runtime-endpoint", "unix:///run/containerd/containerd.sock", "ps", "-a")
			return err.Error() + "\n" + out, false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), strings.HasPrefix(string(b), "hello from ")
	})
	// The pod runs in the machine's own cgroups, below the cgroup namespace BootMachine gave it.
	if v2, _ := e2e.CgroupV2(); !v2 {
		out := m.MustExec(t, "sh", "-c", "ls -d /sys/fs/cgroup/memory/kubepods")
		if strings.TrimSpace(out) != "/sys/fs/cgroup/memory/kubepods" {
			t.Errorf("kubelet's kubepods cgroup is not at the root of the machine's memory hierarchy: %q", out)
		}
	}
	// The machine's cleanup powers it off: systemd stops kubelet and containerd, and its PID namespace ends the
	// pods' processes with it.
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
