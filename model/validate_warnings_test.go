package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWarnings(t *testing.T) {
	base := func(edit func(s *ClusterSpec)) *Cluster {
		c := &Cluster{APIVersion: APIVersion, Kind: KindCluster, Metadata: ObjectMeta{Name: "demo.example.com"},
			Spec: ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a"}, KubernetesVersion: "1.34.2"}}
		edit(&c.Spec)
		return c
	}
	for _, tc := range []struct {
		name string
		c    *Cluster
		want []string // paths
	}{
		{"nothing set", base(func(s *ClusterSpec) {}), nil},
		{"nodeup over https", base(func(s *ClusterSpec) { s.Nodeup = &NodeupSpec{URL: testNodeupURL} }), nil},
		{"nodeup over plain http", base(func(s *ClusterSpec) { s.Nodeup = &NodeupSpec{URL: "http://mirror.internal/nodeup"} }),
			[]string{"spec.nodeup.url"}},
		{"images that follow the version", base(func(s *ClusterSpec) {
			s.KubeAPIServer = &KubeAPIServerConfig{Image: "registry.k8s.io/kube-apiserver:v1.34.2"}
			s.KubeProxy = &KubeProxyConfig{Image: "mirror.example.com:5000/kube-proxy:v1.34.2-custom"}
			s.EtcdClusters = []EtcdClusterSpec{{Name: "main", Version: "3.5.21", Image: "registry.k8s.io/etcd:3.5.21-0"}}
		}), nil},
		{"not judged: no tag, a digest, a tag that is not a version", base(func(s *ClusterSpec) {
			s.KubeAPIServer = &KubeAPIServerConfig{Image: "mirror.example.com:5000/kube-apiserver"}
			s.KubeScheduler = &KubeSchedulerConfig{Image: "registry.k8s.io/kube-scheduler@sha256:0123"}
			s.KubeProxy = &KubeProxyConfig{Image: "registry.k8s.io/kube-proxy:latest"}
		}), nil},
		{"images that lag the version", base(func(s *ClusterSpec) {
			s.KubeAPIServer = &KubeAPIServerConfig{Image: "registry.k8s.io/kube-apiserver:v1.33.0"}
			s.KubeControllerManager = &KubeControllerManagerConfig{Image: "registry.k8s.io/kube-controller-manager:v1.34.1"}
			s.KubeScheduler = &KubeSchedulerConfig{Image: "registry.k8s.io/kube-scheduler:v1.34.2"}
			s.KubeProxy = &KubeProxyConfig{Image: "registry.k8s.io/kube-proxy:v1.33.0@sha256:0123"}
			s.EtcdClusters = []EtcdClusterSpec{{Name: "main", Image: "registry.k8s.io/etcd:3.5.15-0"}, {Name: "events", Version: "3.5.15", Image: "registry.k8s.io/etcd:3.5.15-0"}}
		}), []string{"spec.kubeAPIServer.image", "spec.kubeControllerManager.image", "spec.kubeProxy.image", "spec.etcdClusters[0].image"}},
		{"the default version", base(func(s *ClusterSpec) {
			s.KubernetesVersion = ""
			s.KubeAPIServer = &KubeAPIServerConfig{Image: "registry.k8s.io/kube-apiserver:v" + DefaultKubernetesVersion}
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Warnings(tc.c) {
				got = append(got, p.Path)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Warnings paths (-want +got):\n%s\n%v", diff, Warnings(tc.c))
			}
		})
	}
	ws := Warnings(base(func(s *ClusterSpec) {
		s.KubeAPIServer = &KubeAPIServerConfig{Image: "registry.k8s.io/kube-apiserver:v1.33.0"}
	}))
	want := "spec.kubeAPIServer.image: registry.k8s.io/kube-apiserver:v1.33.0 is tagged v1.33.0, not spec.kubernetesVersion 1.34.2: this component stays at v1.33.0. Leave the image out to follow kubernetesVersion, or set its tag to it"
	if len(ws) != 1 || ws[0].String() != want {
		t.Errorf("Warnings = %v, want %q", ws, want)
	}
}
