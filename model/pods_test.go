package model

import (
	"slices"
	"testing"
)

// TestAPIServerPodMountsItsFiles: kube-apiserver's pod mounts the directory of every file it reads, wherever the
// spec puts it, and no directory twice.
func TestAPIServerPodMountsItsFiles(t *testing.T) {
	c, _ := completeSpec(t, CloudLocal, 1)
	a := c.Spec.KubeAPIServer
	a.EtcdKeyFile = "/etc/kubeup-pki/etcd/client.key"
	a.EtcdCertFile = "/etc/kubeup-pki/etcd/client.crt"
	a.ProxyClientKeyFile = "/srv/kubernetes/elsewhere/proxy.key"
	var mounts []string
	for _, m := range kubeAPIServerPod(a).Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	want := []string{"/srv/kubernetes", "/etc/ssl/certs", "/etc/kubeup-pki/etcd"}
	if !slices.Equal(mounts, want) {
		t.Errorf("kube-apiserver mounts %v, want %v", mounts, want)
	}
}
