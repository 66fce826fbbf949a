package nodegraph

import (
	"kubeup.dev/kubeup/model"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/tasks/nodetasks"
)

// TestAPIServerPodMountsItsFiles: kube-apiserver's pod mounts the directory of every file it reads, wherever the
// spec puts it, and no directory twice.
func TestAPIServerPodMountsItsFiles(t *testing.T) {
	c, _ := completeSpec(t, model.CloudLocal, 1)
	a := c.Spec.KubeAPIServer
	a.EtcdKeyFile = "/etc/kubeup-pki/etcd/client.key"
	a.EtcdCertFile = "/etc/kubeup-pki/etcd/client.crt"
	a.ProxyClientKeyFile = "/srv/kubernetes/elsewhere/proxy.key"
	var mounts []string
	for _, m := range KubeAPIServerPod(a).Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	want := []string{"/srv/kubernetes", "/etc/ssl/certs", "/etc/kubeup-pki/etcd"}
	if !slices.Equal(mounts, want) {
		t.Errorf("kube-apiserver mounts %v, want %v", mounts, want)
	}
}

// checkPodVolumes fails unless every volume of p has a name kubelet accepts (a DNS label), given once, and
// every mount names one of them at a path mounted once.
func checkPodVolumes(t *testing.T, p *nodetasks.Pod) {
	t.Helper()
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	names := map[string]string{}
	for _, v := range p.Spec.Volumes {
		if !label.MatchString(v.Name) {
			t.Errorf("volume %q (%s) is not a DNS label", v.Name, v.HostPath.Path)
		}
		if other, ok := names[v.Name]; ok {
			t.Errorf("volume name %q given to %s and %s", v.Name, other, v.HostPath.Path)
		}
		names[v.Name] = v.HostPath.Path
	}
	mounted := map[string]bool{}
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		if names[m.Name] != m.MountPath {
			t.Errorf("mount %s names volume %q, which is %q", m.MountPath, m.Name, names[m.Name])
		}
		if mounted[m.MountPath] {
			t.Errorf("%s mounted twice", m.MountPath)
		}
		mounted[m.MountPath] = true
	}
}

// TestVolumeNamesUnique: two host paths whose letters and digits are the same (/srv/kubernetes and
// /srv/kube/rnetes, /etc/ssl/certs and /etc/sslcerts) get two names, the same whatever order they come in;
// a path without a clash keeps the name it always had.
func TestVolumeNamesUnique(t *testing.T) {
	c, _ := completeSpec(t, model.CloudLocal, 1)
	a := c.Spec.KubeAPIServer
	a.EtcdKeyFile = "/srv/kube/rnetes/etcd-client.key"
	a.EtcdCertFile = "/etc/sslcerts/etcd-client.crt"
	a.ProxyClientKeyFile = "/var/lib/x/proxy.key"
	p := KubeAPIServerPod(a)
	checkPodVolumes(t, p)
	got := map[string]string{}
	for _, v := range p.Spec.Volumes {
		got[v.HostPath.Path] = v.Name
	}
	want := map[string]string{
		"/srv/kube/rnetes": "srvkubernetes", "/srv/kubernetes": "srvkubernetes-2",
		"/etc/ssl/certs": "etcsslcerts", "/etc/sslcerts": "etcsslcerts-2",
		"/var/lib/x": "varlibx",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("volume names (-want +got):\n%s", diff)
	}

	tests := []struct {
		paths, taken, want []string
	}{
		{[]string{"/srv/kubernetes", "/etc/ssl/certs"}, nil, []string{"srvkubernetes", "etcsslcerts"}},
		{[]string{"/srv/kubernetes", "/srv/kube/rnetes"}, nil, []string{"srvkubernetes-2", "srvkubernetes"}},
		{[]string{"/srv/kube/rnetes", "/srv/kubernetes"}, nil, []string{"srvkubernetes", "srvkubernetes-2"}},
		{[]string{"/a/b", "/ab", "/a/b/"}, nil, []string{"ab", "ab-3", "ab-2"}},
		{[]string{"/ab"}, []string{"ab"}, []string{"ab-2"}},
		{[]string{"/hostpath0", "/"}, nil, []string{"hostpath0", "hostpath1"}},
		{[]string{"/", "/hostpath0"}, nil, []string{"hostpath0", "hostpath0-2"}},
		{[]string{"/" + strings.Repeat("x", 63), "/" + strings.Repeat("x", 62) + "/x"}, nil,
			[]string{strings.Repeat("x", 61) + "-2", strings.Repeat("x", 63)}},
	}
	for _, tt := range tests {
		got := volumeNames(tt.paths, tt.taken)
		if !slices.Equal(got, tt.want) {
			t.Errorf("volumeNames(%q, %q) = %q, want %q", tt.paths, tt.taken, got, tt.want)
		}
	}
}

// TestLockFileMounts: the xtables lock, a file kube-proxy writes, is mounted FileOrCreate and writable; a
// directory whose name ends with .lock is a directory mounted read-only like any other.
func TestLockFileMounts(t *testing.T) {
	c, _ := completeSpec(t, model.CloudLocal, 1)
	k := c.Spec.KubeProxy
	k.Kubeconfig = "/var/lib/kube-proxy.lock/kubeconfig"
	p := kubeProxyPod(k)
	checkPodVolumes(t, p)
	type mount struct {
		Type     string
		ReadOnly bool
	}
	got := map[string]mount{}
	for i, v := range p.Spec.Volumes {
		got[v.HostPath.Path] = mount{v.HostPath.Type, p.Spec.Containers[0].VolumeMounts[i].ReadOnly}
	}
	want := map[string]mount{
		"/var/lib/kube-proxy.lock": {"DirectoryOrCreate", true},
		"/lib/modules":             {"DirectoryOrCreate", true},
		"/run/xtables.lock":        {"FileOrCreate", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kube-proxy's mounts (-want +got):\n%s", diff)
	}
}

// TestHostPathMountedOnce: a directory the spec names twice (the controller-manager's kubeconfig beside the files the
// pod mounts already) is one volume, not two at the same mount path.
func TestHostPathMountedOnce(t *testing.T) {
	c, _ := completeSpec(t, model.CloudLocal, 1)
	m := c.Spec.KubeControllerManager
	m.Kubeconfig = "/srv/kubernetes/kube-controller-manager.kubeconfig"
	p := kubeControllerManagerPod(m)
	checkPodVolumes(t, p)
	if n := len(p.Spec.Volumes); n != 2 {
		t.Errorf("%d volumes, want 2 (/srv/kubernetes, /etc/ssl/certs): %+v", n, p.Spec.Volumes)
	}
}
