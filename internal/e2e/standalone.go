package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// StandaloneKubelet makes the machine m (BootMachine with Kubelet) a node whose kubelet runs with no API server:
// the runtime (RuntimeBin) and kubelet (KubeBinary) installed where nodeup installs them, containerd's
// configuration and a kubelet configuration that runs the static pods of /etc/kubernetes/manifests, containerd
// enabled and started as a systemd unit of the machine, the images whose references are refs (and the pause
// image) imported into containerd's k8s.io namespace, then kubelet enabled and started as a unit too (as nodeup
// leaves them: a machine booted again on its disk starts both). It is what kubelet needs of a machine, not of a
// cluster: tests whose subject is on the node (protokube's etcd) run their pods with it.
//
// A container that exits is started again after at most 10s, not after kubelet's default back-off of up to 5
// minutes: tests kill containers on purpose, many times over.
func StandaloneKubelet(t testing.TB, m *Container, refs ...string) {
	t.Helper()
	bin := RuntimeBin(t)
	images := Images(t)
	InstallRuntime(t, bin, m.Dir)
	InstallFile(t, KubeBinary(t, "kubelet"), filepath.Join(m.Dir, "/usr/local/bin/kubelet"))
	refs = append([]string{PauseImage}, refs...)
	var imports []string
	for _, ref := range refs {
		i := slices.IndexFunc(images, func(img Image) bool { return img.Ref == ref })
		if i < 0 {
			t.Fatalf("no image archive of `make images` holds %s", ref)
		}
		to := "/var/lib/kubeup/images/" + filepath.Base(images[i].Archive)
		InstallFile(t, images[i].Archive, filepath.Join(m.Dir, to))
		imports = append(imports, to)
	}
	driver := MachineCgroupDriver(t)
	restrict, systemdCgroup := "false", "false"
	if !hasCapSysResource() {
		restrict = "true" // runc cannot give a pod a negative oom_score_adj
	}
	if driver == "systemd" {
		systemdCgroup = "true"
	}
	files := map[string]string{
		"/etc/containerd/config.toml": `version = 3
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '` + PauseImage + `'
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = ` + restrict + `
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = '/usr/local/sbin/runc'
  SystemdCgroup = ` + systemdCgroup + `
`,
		"/etc/systemd/system/containerd.service": `[Unit]
Description=containerd
[Service]
Type=notify
ExecStart=/usr/local/bin/containerd
Delegate=yes
KillMode=process
[Install]
WantedBy=multi-user.target
`,
		"/etc/systemd/system/kubelet.service": `[Unit]
Description=kubelet
After=containerd.service
Requires=containerd.service
[Service]
ExecStart=/usr/local/bin/kubelet --config=/var/lib/kubelet/config.yaml
Restart=always
[Install]
WantedBy=multi-user.target
`,
		"/var/lib/kubelet/config.yaml": `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: ` + driver + `
staticPodPath: /etc/kubernetes/manifests
fileCheckFrequency: 5s
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
address: 127.0.0.1
featureGates: {KubeletCrashLoopBackOffMax: true}
crashLoopBackOff: {maxContainerRestartPeriod: 10s}
`,
	}
	for p, content := range files {
		WriteFile(t, filepath.Join(m.Dir, p), content)
	}
	m.MustExec(t, "systemctl", "daemon-reload")
	m.MustExec(t, "systemctl", "enable", "--now", "containerd.service")
	for _, archive := range imports {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := m.Exec(ctx, "/usr/local/bin/ctr", "-n", "k8s.io", "images", "import", archive)
		cancel()
		if err != nil {
			t.Fatalf("importing %s in %s: %v\n%s", archive, m.Name, err, out)
		}
	}
	m.MustExec(t, "systemctl", "enable", "--now", "kubelet.service")
}

// MachineCgroupDriver is the cgroup driver of kubelet and containerd on BootMachine's machines on this host:
// systemd on a cgroup v2 host (nspawn delegates a subtree to the machine's systemd), cgroupfs on cgroup v1 (the
// machine's systemd has no controller but its own; BootMachine gives the machine a cgroup of its own in each
// hierarchy instead).
func MachineCgroupDriver(t testing.TB) string {
	t.Helper()
	v2, err := CgroupV2()
	if err != nil {
		t.Fatal(err)
	}
	if v2 {
		return "systemd"
	}
	return "cgroupfs"
}

// CRI runs crictl in the machine against its containerd, and returns its output with surrounding space trimmed.
func (c *Container) CRI(ctx context.Context, args ...string) (string, error) {
	out, err := c.Exec(ctx, append([]string{"/usr/local/bin/crictl", "--runtime-endpoint", "unix:///run/containerd/containerd.sock"}, args...)...)
	return strings.TrimSpace(out), err
}
