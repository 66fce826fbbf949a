//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// preinstall puts on a node what nodeup does not install yet (WIP, issue 24: the assets and the container
// runtime's configuration land next, and kubelet's own credentials): kubelet, protokube, containerd, runc, the CNI
// plugins and crictl, containerd's configuration and unit (started), a CNI configuration, the preloaded images,
// and the admin kubeconfig as kubelet's. And the test's own setting: protokube's rounds every 2s with a 10-minute
// lease (a drop-in of protokube.service).
func preinstall(t *testing.T, n *node, kubeconfig, kubeupBin string) {
	t.Helper()
	root := n.m.Root()
	bin := e2e.RuntimeBin(t)
	install := map[string]string{
		filepath.Join(bin, "runc"):                    "/usr/local/sbin/runc",
		e2e.KubeBinary(t, "kubelet"):                  "/usr/local/bin/kubelet",
		filepath.Join(kubeupBin, "protokube"):         "/usr/local/bin/protokube",
		kubeconfig:                                    "/var/lib/kubelet/kubeconfig",
		filepath.Join(bin, "containerd"):              "/usr/local/bin/containerd",
		filepath.Join(bin, "ctr"):                     "/usr/local/bin/ctr",
		filepath.Join(bin, "crictl"):                  "/usr/local/bin/crictl",
		filepath.Join(bin, "containerd-shim-runc-v2"): "/usr/local/bin/containerd-shim-runc-v2",
	}
	for _, p := range e2e.CNIPlugins {
		install[filepath.Join(bin, "cni", p)] = "/opt/cni/bin/" + p
	}
	images := e2e.Images(t)
	for _, img := range images {
		install[img.Archive] = "/var/lib/kubeup/images/" + filepath.Base(img.Archive)
	}
	for from, to := range install {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, to), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	systemdCgroup := "false"
	if v2, _ := e2e.CgroupV2(); v2 {
		systemdCgroup = "true"
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
  SystemdCgroup = ` + systemdCgroup + `
`,
		"/etc/crictl.yaml":                       "runtime-endpoint: unix:///run/containerd/containerd.sock\n",
		"/etc/systemd/system/containerd.service": "[Unit]\nDescription=containerd\n[Service]\nType=notify\nExecStart=/usr/local/bin/containerd\nDelegate=yes\nKillMode=process\n",
		"/etc/cni/net.d/10-kubeup.conflist": `{"cniVersion":"1.0.0","name":"kubeup","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,` +
			`"ipam":{"type":"host-local","ranges":[[{"subnet":"100.96.` + strings.TrimPrefix(n.id, "node") + `.0/24"}]]}},{"type":"portmap","capabilities":{"portMappings":true}}]}` + "\n",
		"/etc/systemd/system/protokube.service.d/10-e2e.conf": "[Service]\nExecStart=\nExecStart=/usr/local/bin/protokube --conf=/etc/kubeup/node.conf --interval=2s --lease=10m\n",
	}
	for p, content := range files {
		e2e.WriteFile(t, filepath.Join(root, p), content)
	}
	n.m.MustExec(t, "systemctl", "daemon-reload")
	n.m.MustExec(t, "systemctl", "start", "containerd.service")
	for _, img := range images {
		n.m.MustExec(t, "/usr/local/bin/ctr", "-n", "k8s.io", "images", "import", "/var/lib/kubeup/images/"+filepath.Base(img.Archive))
	}
}
